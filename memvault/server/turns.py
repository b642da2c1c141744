"""Chat turns through the proxy: on disk before the answer returns, committed just after it.

A git commit costs two git processes (tens of milliseconds on a quiet machine, a second or more on a
busy one), and embedding the turns for the index costs as much again. Neither should sit between a
client and its answer. So `store` only writes the turn files; one background thread commits every
turn written meanwhile in a single commit (concurrent requests share it), indexes them, and then
hands each turn to curation, which therefore always follows its turn's commit.

Should the server stop hard between the two, the turn files are on disk but untracked: the next
start commits them (`commit_leftovers`).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from memvault.errors import MemvaultError
from memvault.vault import layout

log = logging.getLogger("memvault.server")
STOP = object()


@dataclass
class WrittenTurn:
    conversation: str
    changes: list  # memvault.vault.store.Change of each file written
    then: Callable[[], None] | None  # what follows the commit (curation), run in the committer thread


class TurnCommitter:
    """Writes turns at once; commits, indexes and hands them on in the background, batched."""

    def __init__(self, core) -> None:
        self.core = core
        self.queue: queue.Queue = queue.Queue()
        # Paths written and not yet indexed: the vault watcher leaves them to us (no second embedding).
        self.in_flight: set[str] = set()
        self.thread = threading.Thread(target=self._run, name="memvault-commit-turns", daemon=True)
        self.thread.start()

    def store(self, conversation: str, entries: list, then: Callable[[], None] | None = None) -> None:
        """Write the entries' files now (raises MemvaultError if that fails); commit them soon."""
        if not entries:
            return
        paths = {str(layout.relative_path(entry)) for entry in entries}
        self.in_flight |= paths  # before the files exist, so the watcher never sees them first
        try:
            changes = self.core.vault.write_new(entries)
        except BaseException:
            self.in_flight -= paths
            raise
        self.queue.put(WrittenTurn(conversation, changes, then))

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
    """Commit turn files a hard stop left written but untracked; returns how many."""
    from memvault.vault.store import Change

    vault = core.vault
    changes = []
    for path in vault.git.untracked():
        rel = PurePosixPath(path)
        if rel.parts[:1] != (layout.ENTRIES,) or "turns" not in rel.parts or layout.is_deleted_path(rel):
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
