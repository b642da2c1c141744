"""Chat turns through the proxy: on disk before the answer returns, committed just after it.

A git commit costs several git processes, each reading and rewriting git's index of the whole vault
(about 40 ms of CPU at 10k memories), and embedding the turns for the index costs as much again.
Neither should sit between a client and its answer. So `store` only writes the turn files (fsynced:
they survive a crash); one background thread commits every turn written meanwhile in a single
commit, indexes them, and then hands each turn to curation, which therefore always follows its
turn's commit. A lone turn is committed at once; under load, commits start at most once per
COMMIT_INTERVAL, so a busy server's turns share a commit and its fixed cost (group commit): a turn
is committed within about COMMIT_INTERVAL plus one commit's time of its answer.

The writing and committing are the core's (`Memvault.write_turns`, `commit_turns`); the batching is
here. Should the server stop hard between the two, the turn files are on disk but uncommitted
(untracked, or staged when the stop came between `git add` and `git commit`): the next start commits
them (`Memvault.commit_leftover_turns`). A turn waiting for curation is written to a queue file under
.memvault/ (memvault.curate.queue) before its answer goes out and struck off once curated, so the next
start curates what a stop interrupted (`resume_curation`).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from memvault.curate.queue import MAX_FAILURES, CurationQueue, retry_delay
from memvault.curate.refusals import RefusalTail
from memvault.errors import MemvaultError, first_line
from memvault.shapes import layout

log = logging.getLogger("memvault.server")
STOP = object()
COMMIT_ATTEMPTS = 3  # a batch whose commit fails is tried again after 1 s, then 2 s
COMMIT_INTERVAL = 1.0  # seconds from one commit's start to the next one's, at the least


@dataclass
class WrittenTurn:
    conversation: str
    written: list  # what Memvault.write_turns returned, for Memvault.commit_turns
    then: Callable[[], None] | None  # what follows the commit (curation), run in the committer thread


class TurnCommitter:
    """Writes turns at once; commits, indexes and hands them on in the background, batched."""

    def __init__(self, core) -> None:
        self.core = core
        self.curations = CurationQueue(core.state_dir)
        # What curation refuses after an answer went out, for the conversation's next answer (server.proxy).
        self.refusals = RefusalTail(core.state_dir)
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
            written = self.core.write_turns(entries)
        except BaseException:
            self.in_flight -= paths
            raise
        self.queue.put(WrittenTurn(conversation, written, then))

    def close(self, timeout: float = 60.0) -> None:
        """Commit what is queued, then stop."""
        self.queue.put(STOP)
        self.thread.join(timeout)

    def _run(self) -> None:
        stopping = False
        last_start = -COMMIT_INTERVAL
        while not stopping:
            batch = self._next_batch(last_start + COMMIT_INTERVAL)
            stopping = any(item is STOP for item in batch)
            turns = [item for item in batch if item is not STOP]
            if turns:
                last_start = time.monotonic()
                self._commit(turns)

    def _next_batch(self, not_before: float) -> list:
        """The turns of the next commit: the first to come, then all written until `not_before`
        (none to wait for when the last commit started long enough ago) or queued already; a stop
        ends the batch at once."""
        batch = [self.queue.get()]
        while batch[-1] is not STOP:
            try:
                batch.append(self.queue.get(timeout=max(0.0, not_before - time.monotonic())))
            except queue.Empty:
                break
        return batch

    def _commit(self, turns: list[WrittenTurn]) -> None:
        written = [change for turn in turns for change in turn.written]
        conversations = sorted({turn.conversation for turn in turns})
        subject = (f"memvault chat: turn in {conversations[0]}" if len(turns) == 1
                   else f"memvault chat: {len(turns)} turns in {', '.join(conversations)}")
        try:
            for attempt in range(COMMIT_ATTEMPTS):
                try:
                    self.core.commit_turns(written, subject, conversations[0] if len(conversations) == 1 else None)
                    break
                except MemvaultError as exc:  # a passing cause (a person's git holding a lock) may clear
                    if attempt + 1 == COMMIT_ATTEMPTS:
                        raise
                    log.warning("committing %d turn(s) failed, trying again: %s", len(turns), exc)
                    time.sleep(1.0 + attempt)
        except MemvaultError as exc:  # the files stay on disk; the next start commits them
            log.error("%d turn(s) written but not committed: %s", len(turns), exc)
            return
        except Exception:  # noqa: BLE001 - keep the committer alive for the next turns
            log.exception("committing %d turn(s) failed", len(turns))
            return
        finally:
            self.in_flight.difference_update(str(change.rel) for change in written)
        for turn in turns:
            if turn.then is not None:
                turn.then()


def resume_curation(core, curations: CurationQueue, llm, curate_turn: Callable[[str, Callable[[], None]], None]) -> int:
    """Hand to curation again the turns a stop left queued and uncurated; returns how many.
    A turn no longer on disk, or one whose facts are already stored (its curation was committed
    just before the stop), is struck off. Without an LLM nothing can be curated: they stay queued for
    a start that has one (never struck off unseen)."""
    if llm is None:
        return 0
    resumed = 0
    for record in curations.compact():
        turn_id = record["turn"]
        turn = core.live_entry(turn_id)
        if turn is None or core.has_facts_from(turn_id):
            curations.done(turn_id)
            continue

        def work(record=record, turn=turn) -> None:
            core.policy_add(record["messages"], record["conversation"], record.get("scopes") or {}, llm=llm, turn=turn)

        curate_turn(turn_id, work)
        resumed += 1
    return resumed


def run_curation(curations: CurationQueue, turn_id: str, work: Callable[[], None],
                 retry: Callable[[float], None]) -> None:
    """Run one queued turn's curation: struck off the queue once it succeeded. One that fails stays
    queued, its failure noted, and is tried again after a back-off (`retry(seconds)`) until it is
    poison (memvault.curate.queue); the log says so in one line."""
    try:
        work()
    except Exception as exc:  # noqa: BLE001 - whatever failed, the turn is stored and stays queued
        error = first_line(exc) or type(exc).__name__
        failures = curations.failed(turn_id, error)
        if failures >= MAX_FAILURES:
            log.error("curation of turn %s failed %d times, set aside (`memvault doctor` shows it): %s",
                      turn_id, failures, error)
            return
        delay = retry_delay(failures)
        log.warning("curation of turn %s failed (try %d of %d), trying again in %.1f s: %s", turn_id, failures,
                    MAX_FAILURES, delay, error)
        retry(delay)
        return
    curations.done(turn_id)
