"""Chat turns through the proxy: on disk before the answer returns, committed just after it.

A git commit costs two git processes (tens of milliseconds on a quiet machine, a second or more on a
busy one), and embedding the turns for the index costs as much again. Neither should sit between a
client and its answer. So `store` only writes the turn files; one background thread commits every
turn written meanwhile in a single commit (concurrent requests share it), indexes them, and then
hands each turn to curation, which therefore always follows its turn's commit.

Should the server stop hard between the two, the turn files are on disk but uncommitted (untracked,
or staged when the stop came between `git add` and `git commit`): the next start commits them
(`commit_leftovers`). A turn waiting for curation is written to a queue file under .memvault/ before
its answer goes out and struck off once curated, so the next start curates what a stop interrupted
(`resume_curation`).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from memvault.errors import MemvaultError
from memvault.vault import layout

log = logging.getLogger("memvault.server")
STOP = object()
CURATION_QUEUE = "curation-queue.jsonl"


class CurationQueue:
    """Turns handed to curation and not yet curated, on disk: one JSON line per turn queued
    ({"turn", "conversation", "scopes", "messages"}) and one per turn done ({"done": id}).
    Appends are single O_APPEND writes, so request threads and the curation worker share the file."""

    def __init__(self, state_dir: Path) -> None:
        self.path = Path(state_dir) / CURATION_QUEUE

    def _append(self, record: dict, sync: bool) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)  # the messages are the user's
        try:
            os.write(fd, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass"))
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)

    def add(self, turn_id: str, conversation: str, scopes: dict, messages: list[dict]) -> None:
        # Synced like the turn files themselves: a turn that survives a power cut keeps its curation.
        self._append({"turn": turn_id, "conversation": conversation, "scopes": scopes, "messages": messages}, True)

    def done(self, turn_id: str) -> None:
        # Not synced: a lost "done" costs a second look at the turn (its facts are found, nothing is redone).
        self._append({"done": turn_id}, False)

    def pending(self) -> list[dict]:
        """The turns queued and not done, oldest first (a torn last line from a crash is skipped)."""
        try:
            lines = self.path.read_bytes().decode("utf-8", "surrogatepass").splitlines()
        except FileNotFoundError:
            return []
        waiting: dict[str, dict] = {}
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and "done" in record:
                waiting.pop(str(record["done"]), None)
            elif isinstance(record, dict) and isinstance(record.get("turn"), str):
                waiting[record["turn"]] = record
        return list(waiting.values())

    def compact(self) -> list[dict]:
        """Rewrite the file with only the pending turns (at start-up, before any writer); returns them."""
        from memvault.vault.store import atomic_write

        waiting = self.pending()
        if waiting:
            data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in waiting)
            atomic_write(self.path, data.encode("utf-8", "surrogatepass"))
        else:
            self.path.unlink(missing_ok=True)
        return waiting


@dataclass
class WrittenTurn:
    conversation: str
    changes: list  # memvault.vault.store.Change of each file written
    then: Callable[[], None] | None  # what follows the commit (curation), run in the committer thread


class TurnCommitter:
    """Writes turns at once; commits, indexes and hands them on in the background, batched."""

    def __init__(self, core) -> None:
        self.core = core
        self.curations = CurationQueue(core.vault.state_dir)
        self.queue: queue.Queue = queue.Queue()
        # Paths written and not yet indexed: the vault watcher leaves them to us (no second embedding).
        self.in_flight: set[str] = set()
        self.thread = threading.Thread(target=self._run, name="memvault-commit-turns", daemon=True)
        self.thread.start()

    def store(self, conversation: str, entries: list, then: Callable[[], None] | None = None,
              curation: dict | None = None) -> None:
        """Write the entries' files now (raises MemvaultError if that fails); commit them soon.
        `curation` ({"scopes", "messages"} of the first entry's turn): queued on disk for curation
        until `curated` is called, so a stop before then does not lose it."""
        if not entries:
            return
        if curation is not None:
            self.curations.add(entries[0].id, conversation, curation.get("scopes") or {}, curation["messages"])
        paths = {str(layout.relative_path(entry)) for entry in entries}
        self.in_flight |= paths  # before the files exist, so the watcher never sees them first
        try:
            changes = self.core.vault.write_new(entries)
        except BaseException:
            self.in_flight -= paths
            raise
        self.queue.put(WrittenTurn(conversation, changes, then))

    def curated(self, turn_id: str) -> None:
        """Strike a turn off the curation queue (its curation ran)."""
        self.curations.done(turn_id)

    def close(self, timeout: float = 60.0) -> None:
        """Commit what is queued, then stop."""
        self.queue.put(STOP)
        self.thread.join(timeout)

    def _run(self) -> None:
        stopping = False
        while not stopping:
            batch = [self.queue.get()]
            while True:  # everything written while the last commit ran goes into this one
                try:
                    batch.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            stopping = any(item is STOP for item in batch)
            turns = [item for item in batch if item is not STOP]
            if turns:
                self._commit(turns)

    def _commit(self, turns: list[WrittenTurn]) -> None:
        changes = [change for turn in turns for change in turn.changes]
        conversations = sorted({turn.conversation for turn in turns})
        subject = (f"memvault chat: turn in {conversations[0]}" if len(turns) == 1
                   else f"memvault chat: {len(turns)} turns in {', '.join(conversations)}")
        try:
            committed = self.core.vault.commit_written(changes, subject, "chat",
                                                       conversations[0] if len(conversations) == 1 else None)
            self.core.after_change(committed)
        except MemvaultError as exc:  # the files stay on disk; the next start commits them
            log.error("%d turn(s) written but not committed: %s", len(turns), exc)
            return
        except Exception:  # noqa: BLE001 - keep the committer alive for the next turns
            log.exception("committing %d turn(s) failed", len(turns))
            return
        finally:
            self.in_flight.difference_update(str(change.rel) for change in changes)
        for turn in turns:
            if turn.then is not None:
                turn.then()


def commit_leftovers(core) -> int:
    """Commit turn files a hard stop left written but uncommitted (untracked, or staged new);
    returns how many. Temporary files of atomic writes are never turns: old ones are removed."""
    from memvault.vault.store import Change

    vault = core.vault
    vault.remove_temp_files()
    changes = []
    for code, path in vault.git.status():
        rel = PurePosixPath(path)
        if code != "??" and code[0] != "A":
            continue  # tracked already: a person's edit or removal is theirs to commit
        if not layout.is_entry_path(rel) or "turns" not in rel.parts or layout.is_deleted_path(rel):
            continue
        try:
            changes.append(Change(rel, None, vault.read(rel)))
        except MemvaultError:
            continue  # not a readable entry: doctor reports it, we leave it alone
    if changes:
        committed = vault.commit_written(changes, f"memvault serve: {len(changes)} turn file(s) written before "
                                         "a stop, committed now", "chat")
        core.after_change(committed)
    return len(changes)


def resume_curation(core, curations: CurationQueue, llm, submit: Callable[[Callable[[], None]], None]) -> int:
    """Hand to curation again the turns a stop left queued and uncurated; returns how many.
    A turn no longer on disk, or one whose facts are already stored (its curation was committed
    just before the stop), is struck off; without an LLM nothing can be curated and all are."""
    resumed = 0
    for record in curations.compact():
        turn_id = record["turn"]
        turn = core.live_entry(turn_id)
        if llm is None or turn is None or has_facts_from(core, turn_id):
            curations.done(turn_id)
            continue

        def work(record=record, turn=turn) -> None:
            try:
                core.add(record["messages"], record["conversation"], record.get("scopes") or {}, llm=llm, turn=turn)
            finally:
                curations.done(turn.id)

        submit(work)
        resumed += 1
    return resumed


def has_facts_from(core, turn_id: str) -> bool:
    """True when the index holds a fact taken from this turn (its curation was committed)."""
    with core._index_lock:
        return core.index().count("e.role = 'memory' AND e.source = ?", (turn_id,)) > 0
