"""Keeping the index in step with the files while the server runs (hand edits are searchable at once).

The watcher reports each burst of changed paths; `Memvault.resync_paths` catches the index up with
them (see memvault.index.keeper for how a burst is handled by path rather than by a full sync).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection
from pathlib import PurePosixPath

from memvault.errors import MemvaultError

log = logging.getLogger("memvault.server")


def start_watcher(core, stop: threading.Event, own: Collection[str] = (),
                  ready_timeout: float = 10.0) -> threading.Thread:
    """Watch the vault in a daemon thread until `stop` is set; `own`: paths the server wrote and
    indexes itself (turns on their way to a commit), left to it."""

    def on_change(paths: frozenset[PurePosixPath]) -> None:
        try:
            core.resync_paths(paths, skip=own)
        except MemvaultError as exc:
            log.warning("index sync after a file change failed: %s", exc)

    def run() -> None:
        try:
            core.watch(on_change, stop_event=stop, ready=ready)
        except Exception:  # noqa: BLE001 - the server keeps serving; searches still flush the journal
            log.exception("the vault watcher stopped")

    ready = threading.Event()
    thread = threading.Thread(target=run, name="memvault-watch", daemon=True)
    thread.start()
    if not ready.wait(ready_timeout):
        log.warning("the vault watcher did not start in time; hand edits are indexed at the next reindex")
    return thread
