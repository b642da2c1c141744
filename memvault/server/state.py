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
        self.day_log = None  # memvault.server.daylog.IdleDayLog, started with the server

    @property
    def core(self):
        """The Memvault under the Memory: one index connection and one lock serve both APIs."""
        return self.memory.core

    def start(self) -> None:
        """Open the vault (created if missing), catch the index up with the files, start watching."""
        from memvault.api import Memory
        from memvault.errors import MemvaultError
        from memvault.server.daylog import IdleDayLog
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
        self.day_log = IdleDayLog(self.core)
        llm = curator(self.settings.llm, None)
        resumed = resume_curation(self.core, self.turns.curations, llm, self.submit_curation)
        if resumed:
            log.warning("resuming the curation of %d turn(s) a stop interrupted", resumed)
        self.watcher = start_watcher(self.core, self.stop_watching, own=self.turns.in_flight)
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
        self.curation.shutdown(wait=True)
        if self.day_log is not None:
            self.day_log.close()  # what the curations learned goes to today's log
        if self.memory is not None:
            self.memory.close()

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
