"""What the server's routes share: one `ServerState` per application (request.app.state.server)."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from fastapi import Request

from memvault.errors import MemvaultError, first_line
from memvault.settings import Settings

log = logging.getLogger("memvault.server")
STOP_REPORT_EVERY = 5.0  # seconds between the lines saying what a stop is still finishing


class ServerState:
    """What the routes share: settings, the Memory (and its Memvault), an HTTP client for passthrough,
    the turn committer, the one curation worker (curations run one at a time, after the answer is
    out) and the watcher."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.memory = None  # memvault.api.Memory, opened at start-up
        self.http = None  # httpx.AsyncClient
        self.curation = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memvault-curate")
        self.turns = None  # memvault.server.turns.TurnCommitter, started with the server
        self.stop_watching = threading.Event()
        self.watcher: threading.Thread | None = None
        self.sessions: set[str] = set()  # conversations with turns through this server: ended at shutdown
        self.busy = 0  # curation jobs submitted and not finished
        self.counting = threading.Lock()
        self.idle = threading.Event()
        self.idle.set()
        self.hurry = lambda: False  # true once a second stop asks to stop at once (memvault.server.run)
        self.abandoned = False  # a second stop left curations running or queued: exit without waiting

    @property
    def core(self):
        """The Memvault under the Memory: one index connection and one lock serve both APIs."""
        return self.memory.core

    def start(self) -> None:
        """Open the vault (created if missing), catch the index up with the files, start watching."""
        from memvault.api import Memory
        from memvault.server.turns import TurnCommitter, resume_curation
        from memvault.server.upstream import curator, warm_litellm
        from memvault.server.watching import start_watcher

        self.memory = Memory(settings=self.settings)
        recovered = self.finish_interrupted_write()
        try:
            self.core.ensure_core()  # an older vault gets its core files (one commit) before the first prompt
        except MemvaultError as exc:
            log.error("the core files could not be created: %s", exc)
        try:
            left = self.core.commit_leftover_turns()
            if left:
                log.warning("committed %d turn file(s) written before the last stop", left)
        except MemvaultError as exc:  # the files stay on disk: the next start (or `doctor --fix`) commits them
            log.error("turn files written before the last stop are not committed: %s", exc)
        self.core.reindex()  # files edited while the server was down become searchable now
        self.turns = TurnCommitter(self.core)
        llm = curator(self.settings.llm, None)
        resumed = resume_curation(self.core, self.turns.curations, llm if recovered else None, self.curate_turn)
        if resumed:
            log.warning("resuming the curation of %d turn(s) a stop interrupted", resumed)
        poison = self.turns.curations.poisoned()
        if poison:
            log.warning("%d turn(s) whose curation failed again and again wait in the queue: `memvault doctor` "
                        "says why", len(poison))
        self.watcher = start_watcher(self.core, self.stop_watching, own=self.turns.in_flight)
        threading.Thread(target=self.end_idle_sessions, name="memvault-sessions", daemon=True).start()
        if self.settings.sync.interval > 0:
            threading.Thread(target=self.sync_every, name="memvault-sync", daemon=True).start()
        if self.settings.llm.model or self.settings.llm.api_base:
            # litellm takes seconds to import: pay for it now, in the background, not in the first request.
            threading.Thread(target=warm_litellm, name="memvault-litellm-import", daemon=True).start()

    def finish_interrupted_write(self) -> bool:
        """Undo what a write a stop cut short left uncommitted, before anything reads the files: a curation
        cut between its write and its commit left a fact file the index would take in, and
        `resume_curation` would then strike its turn off as curated. False when that failed (the
        queued turns then wait for a start that can)."""
        try:
            self.core.finish_interrupted_write()
        except MemvaultError as exc:
            log.error("a write the last stop cut short could not be undone; queued curations wait: %s", exc)
            return False
        return True

    def stop(self) -> None:
        """Stop watching, commit the last turns, let queued curations finish (they hold what was
        learned), close the vault. Says what it is finishing, and how long it took; a second stop
        (`hurry()` turns true: a second Ctrl-C) leaves the curations queued on disk for the next start."""
        started = time.monotonic()
        self.stop_watching.set()
        if self.watcher is not None:
            self.watcher.join(timeout=10)
        if self.turns is not None:
            log.warning("stopping: committing the last turns")
            self.turns.close()  # commits the last turns and queues their curation
            self.submit_curation(lambda: self.end_sessions(None, only=set(self.sessions)))  # after the curations
        if self.finish_curations():
            self.curation.shutdown(wait=True)
            if self.memory is not None:
                self.memory.close()
        log.warning("stopped in %.1f s", time.monotonic() - started)

    def finish_curations(self) -> bool:
        """Wait for the queued curations, saying how many are left every few seconds; False when a
        second stop came first (those not done stay queued on disk: the next start curates them)."""
        said = 0.0
        waited = time.monotonic()
        while self.busy:
            if self.hurry():
                self.abandoned = True
                self.curation.shutdown(wait=False, cancel_futures=True)
                log.warning("stopping now: %d curation(s) left queued for the next start", self.busy)
                return False
            if time.monotonic() - said >= STOP_REPORT_EVERY:
                said = time.monotonic()
                log.warning("stopping: finishing %d curation(s), %.0f s so far (Ctrl-C again to leave them "
                            "queued for the next start)", self.busy, said - waited)
            self.idle.wait(0.1)
        return True

    def curate_turn(self, turn_id: str, work) -> None:
        """Curate a queued turn in the curation worker (memvault.server.turns.run_curation): struck off
        the queue when done, tried again after a back-off when it fails, left queued by a stop."""
        from memvault.server.turns import run_curation

        def attempt() -> None:
            run_curation(self.turns.curations, turn_id, work, lambda delay: self.later(delay, attempt))

        self.submit_curation(attempt)

    def later(self, delay: float, job) -> None:
        """Submit `job` to the curation worker in `delay` seconds, unless the server stops first."""
        if self.stop_watching.is_set():
            return  # stopping: the turn stays queued, the next start tries again
        timer = threading.Timer(delay, lambda: None if self.stop_watching.is_set() else self.submit_curation(job))
        timer.daemon = True
        timer.start()

    def end_idle_sessions(self) -> None:
        """Every so often, end the sessions idle for `session.idle_minutes` (in the curation worker,
        so a session never ends while one of its turns is being curated)."""
        idle = self.settings.session.idle_minutes
        while not self.stop_watching.wait(min(60.0, max(0.2, idle * 15))):  # a quarter of the idle time
            self.submit_curation(lambda: self.end_sessions(idle))

    def sync_every(self) -> None:
        """`sync.interval`: sync with the remote every so often; what arrives is indexed by the sync
        (and seen by the watcher). A failed sync is logged and tried again at the next tick."""
        while not self.stop_watching.wait(self.settings.sync.interval):
            for team in self.core.sync_shared():  # team vaults (vault.shared), each with its own remote
                if team.error is not None:
                    log.warning("sync of shared vault %r failed: %s", team.name, team.error)
            try:
                report = self.core.sync()
            except MemvaultError as exc:
                log.warning("sync failed: %s", exc)
                continue
            if report.changed:
                log.info("sync with %s: %s, %d file(s) changed", report.remote, report.outcome, len(report.changed))

    def end_sessions(self, idle_minutes: float | None, only: set[str] | None = None) -> None:
        from memvault.server.upstream import curator

        for ended in self.core.end_sessions(idle_minutes, curator(self.settings.llm, None), only):
            self.sessions.discard(ended.conversation)
            log.info("session in %s ended: %d user turn(s)%s", ended.conversation, ended.user_turns,
                     ", summary written" if ended.summary else "")

    def submit_curation(self, work) -> None:
        def run() -> None:
            try:
                work()
            except Exception as exc:  # noqa: BLE001 - the turns are already stored; say why curation failed
                log.error("background curation failed: %s", first_line(exc))
            finally:
                self.finished()

        with self.counting:
            self.busy += 1
            self.idle.clear()
        try:
            self.curation.submit(run)
        except RuntimeError:  # shut down: the turns are stored, and their curation stays queued on disk
            self.finished()
            log.warning("server stopping: curation left queued for the next start")

    def finished(self) -> None:
        with self.counting:
            self.busy -= 1
            if not self.busy:
                self.idle.set()


def server_state(request: Request) -> ServerState:
    return request.app.state.server
