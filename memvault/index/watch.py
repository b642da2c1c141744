"""Watching the vault's entries and core files: each burst of file changes, once quiet, triggers a
callback (a sync).

The watchdog thread only records what changed; the callback runs in the caller's thread, so the
index connection is never shared across threads. Editors' temporary files and memvault's own
state folder are ignored, and since sync compares hashes, the program's own writes (already
indexed on the write path) cost a hash and no embedding.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from memvault.errors import MemvaultError, VaultError
from memvault.vault.format.layout import CORE_DIR, ENTRIES, JOURNAL_DIR

if TYPE_CHECKING:
    from memvault.vault.write.store import Vault

log = logging.getLogger("memvault.watch")
MAX_DELAY = 5.0  # a steady stream of writes still gets synced this often
# Temporary names of editors and of atomic writes: vim's 4913 probe and .swp, emacs' ~ and #...#.
TEMP_SUFFIXES = (".tmp", "~", ".swp", ".swx", ".swo", ".part")
TEMP_NAMES = {"4913"}


def is_ignored(rel: PurePosixPath) -> bool:
    """True for paths a sync need not hear about: dot folders (.memvault, .git), dotfiles, temp files."""
    if any(part.startswith(".") for part in rel.parts):
        return True
    name = rel.name
    return name in TEMP_NAMES or name.endswith(TEMP_SUFFIXES) or (name.startswith("#") and name.endswith("#"))


class _Collector:
    """Receives watchdog events on its thread; hands the relevant paths over to the caller's."""

    def __init__(self, root: Path):
        self.root = root
        self.paths: set[PurePosixPath] = set()
        self.lock = threading.Lock()
        self.first = 0.0
        self.last = 0.0

    def dispatch(self, event) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory and event.event_type == "modified":
            return  # a folder's own mtime: its files' events say what changed
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if not raw:
                continue
            try:
                path = Path(raw if isinstance(raw, str) else raw.decode())
                rel = PurePosixPath(path.relative_to(self.root).as_posix())
            except ValueError:
                continue
            if rel.parts and not is_ignored(rel):
                with self.lock:
                    now = time.monotonic()
                    if not self.paths:
                        self.first = now
                    self.paths.add(rel)
                    self.last = now

    def take_burst(self, debounce: float) -> frozenset[PurePosixPath] | None:
        """The paths of a burst that has been quiet for `debounce` s (or has lasted MAX_DELAY)."""
        with self.lock:
            if not self.paths:
                return None
            now = time.monotonic()
            if now - self.last < debounce and now - self.first < MAX_DELAY:
                return None
        return self.take_all()

    def take_all(self) -> frozenset[PurePosixPath]:
        with self.lock:
            burst, self.paths = frozenset(self.paths), set()
            return burst


def watch(vault: Vault, on_change: Callable[[frozenset[PurePosixPath]], bool | None], debounce: float = 0.5,
          stop_event: threading.Event | None = None, ready: threading.Event | None = None,
          vouch: bool = False) -> None:
    """Block, calling `on_change(paths)` after each quiet burst of changes under the vault, until
    `stop_event` is set (or KeyboardInterrupt, which propagates after the observer is stopped).
    `ready` is set once the folder is being watched.

    `vouch` (`memvault reindex --watch`, Linux): `on_change` is a full sync, returning False when it
    left something broken; it is also run first, and after any event the kernel reports (an overflow
    of its queue too); while the last one that succeeded covers every event read, a reindex may skip
    the stat of every file (memvault.index.vouch)."""
    from watchdog.events import (
        DirCreatedEvent,
        DirDeletedEvent,
        DirMovedEvent,
        FileClosedEvent,
        FileCreatedEvent,
        FileDeletedEvent,
        FileModifiedEvent,
        FileMovedEvent,
    )
    from watchdog.observers import Observer

    root = Path(vault.root).resolve()
    collector = _Collector(root)
    # Only entries/ and the core files a person edits are followed; watching the root would also read
    # every event of each git commit in .git/ (and journal/ is memvault's own writing). Only changes
    # are asked of the kernel: every read of a file (a server reads several per request, git and the
    # index too) would otherwise cost two events for watchdog to parse and `dispatch` to drop.
    changes = [FileCreatedEvent, FileModifiedEvent, FileMovedEvent, FileDeletedEvent, FileClosedEvent,
               DirCreatedEvent, DirMovedEvent, DirDeletedEvent]
    # A vouching watcher answers for every file a sync reads: journal days too.
    # (The flat folders first: when the watch limit is reached within entries/, they are watched.)
    folders = (*(((JOURNAL_DIR, False),) if vouch else ()), (CORE_DIR, False), (ENTRIES, True))
    for folder, _ in folders:
        (root / folder).mkdir(exist_ok=True)
    vouching = None
    if vouch:
        from memvault.index.vouch import Vouch, vouching_observer

        vouching = Vouch(vault.state_dir, is_ignored)
        observer = vouching_observer(vouching, [root / folder for folder, _ in folders])
    else:
        observer = Observer()
    stop_event = stop_event or threading.Event()
    # watchdog 7 warns when a new folder's watch is added twice (its creation event and the walk of
    # its parent): the second simply replaces the first, so the warning is noise in `serve`'s output.
    warnings.filterwarnings("ignore", "Callback with id", RuntimeWarning, r"watchdog\.")
    try:
        if vouching is not None:
            observer.watch_probes()
        observer.start()
        for folder, recursive in folders:  # one at a time, in this order (a running observer starts each)
            observer.schedule(collector, str(root / folder), recursive=recursive, event_filter=changes)
    except OSError as exc:
        observer.stop()
        reason = vouching.broken if vouching is not None and vouching.broken else exc.strerror or str(exc)
        raise VaultError(f"cannot watch {root}: {reason}") from None
    try:
        if vouching is not None:
            if not vouching.take_lock():
                vouching.cannot_vouch("another watcher holds .memvault/watch/watch.lock")
        if ready is not None:
            ready.set()
        tick = max(0.05, min(debounce / 4, 0.25))
        while not stop_event.is_set():
            if vouching is not None:
                upto = vouching.due(debounce, MAX_DELAY)
                if upto is not None:
                    vouching.synced(upto, run_callback(on_change, collector.take_all()))
                    continue
            else:
                burst = collector.take_burst(debounce)
                if burst:
                    run_callback(on_change, burst)
                    continue
            stop_event.wait(tick)
    finally:
        if vouching is not None:
            vouching.release()
        observer.stop()
        observer.join(timeout=5)


def run_callback(on_change: Callable[[frozenset[PurePosixPath]], bool | None],
                 burst: frozenset[PurePosixPath]) -> bool:
    """One burst's callback; whatever it raises is logged and watching goes on: one bad file (or
    one failed sync) must not leave every later edit unindexed until a restart. True when it
    succeeded (and did not return False)."""
    try:
        return on_change(burst) is not False
    except MemvaultError as exc:
        log.error("sync after a file change failed: %s", exc)
    except Exception:  # noqa: BLE001 - a bug; logged with its traceback, the next burst is tried afresh
        log.exception("sync after a file change failed")
    return False
