"""What the server's routes share: one `ServerState` per application (request.app.state.server)."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from fastapi import Request

from memvault.settings import Settings

log = logging.getLogger("memvault.server")


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

    @property
    def core(self):
        """The Memvault under the Memory: one index connection and one lock serve both APIs."""
        return self.memory.core

    def start(self) -> None:
        """Open the vault (created if missing), catch the index up with the files, start watching."""
        from memvault.api import Memory
        from memvault.errors import MemvaultError
        from memvault.server.turns import TurnCommitter, resume_curation
        from memvault.server.upstream import curator, warm_litellm
        from memvault.server.watching import start_watcher

        self.memory = Memory(settings=self.settings)
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
        resumed = resume_curation(self.core, self.turns.curations, llm, self.submit_curation)
        if resumed:
            log.warning("resuming the curation of %d turn(s) a stop interrupted", resumed)
        self.watcher = start_watcher(self.core, self.stop_watching, own=self.turns.in_flight)
        threading.Thread(target=self.end_idle_sessions, name="memvault-sessions", daemon=True).start()
        if self.settings.sync.interval > 0:
            threading.Thread(target=self.sync_every, name="memvault-sync", daemon=True).start()
        if self.settings.llm.model or self.settings.llm.api_base:
            # litellm takes seconds to import: pay for it now, in the background, not in the first request.
            threading.Thread(target=warm_litellm, name="memvault-litellm-import", daemon=True).start()

    def stop(self) -> None:
        """Stop watching, commit the last turns, let queued curations finish (they hold what was
        learned), close the vault."""
        self.stop_watching.set()
        if self.watcher is not None:
            self.watcher.join(timeout=10)
        if self.turns is not None:
            self.turns.close()  # commits the last turns and queues their curation
            self.submit_curation(lambda: self.end_sessions(None, only=set(self.sessions)))  # after the curations
        self.curation.shutdown(wait=True)
        if self.memory is not None:
            self.memory.close()

    def end_idle_sessions(self) -> None:
        """Every so often, end the sessions idle for `session.idle_minutes` (in the curation worker,
        so a session never ends while one of its turns is being curated)."""
        idle = self.settings.session.idle_minutes
        while not self.stop_watching.wait(min(60.0, max(0.2, idle * 15))):  # a quarter of the idle time
            self.submit_curation(lambda: self.end_sessions(idle))

    def sync_every(self) -> None:
        """`sync.interval`: sync with the remote every so often; what arrives is indexed by the sync
        (and seen by the watcher). A failed sync is logged and tried again at the next tick."""
        from memvault.errors import MemvaultError

        while not self.stop_watching.wait(self.settings.sync.interval):
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
            except Exception:  # noqa: BLE001 - the turns are already stored; say why curation failed
                log.exception("background curation failed")

        try:
            self.curation.submit(run)
        except RuntimeError:  # shutting down: the turns are stored, only curation is skipped
            log.warning("server stopping: curation of the last turn skipped")


def server_state(request: Request) -> ServerState:
    return request.app.state.server
