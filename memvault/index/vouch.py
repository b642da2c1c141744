"""A watcher's word that no file changed since its last sync, so that a reindex may skip the stat of
every file (4-5 s of lstat at a million memories).

`memvault reindex --watch` holds an exclusive flock on `.memvault/watch/watch.lock` for its life (the
kernel drops it when the process dies, kill -9 too). It counts, on the thread that reads the kernel's
inotify queue and before watchdog handles anything, every event that could change what a sync finds
(`received`); its loop runs a full sync whenever that count moved, and the watcher is clean while the
last sync that succeeded (nothing broken) started after the last such event was read.

A reindex asks rather than reads a mark: it creates `.memvault/watch/probe-<nonce>` and waits for
`answer-<nonce>`. The probe's folder is watched through the same inotify descriptor as the vault, and
the kernel queues a descriptor's events in the order they happen: an edit whose system call returned
before the reindex created its probe is queued before the probe, so it has been read (and counted)
when the probe is answered. The answer is "clean" only if every event read so far is covered by a
successful sync that started after it was read. No answer in time, no lock held, an overflow of the
kernel's queue, a watch that could not be added, a watched folder removed: no vouching, the full walk.
What inotify never reports (writes through mmap, changes made on another machine to a network file
system) is not seen by a watcher; README says so.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from types import SimpleNamespace

log = logging.getLogger("memvault.watch")
FOLDER = "watch"  # under .memvault/
LOCK_NAME = "watch.lock"
PROBE = "probe-"
ANSWER = "answer-"
CLEAN = "clean"
ANSWER_WAIT = 2.0  # s: a watcher answers within milliseconds; one that does not is not trusted
# The limit of this user in this user namespace (Linux 5.11+; the same as fs.inotify.max_user_watches
# outside any namespace), else the system's.
WATCH_LIMITS = ("/proc/sys/user/max_inotify_watches", "/proc/sys/fs/inotify/max_user_watches")


def vouched(state_dir: Path, wait: float = ANSWER_WAIT) -> str | None:
    """None when a live watcher vouches that no file changed since its last successful sync; else
    why not (no watcher, a change not yet synced, no answer in time, ...)."""
    folder = state_dir / FOLDER
    try:
        handle = os.open(folder / LOCK_NAME, os.O_RDONLY)
    except OSError:
        return "no watcher"
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return "no watcher"  # nobody holds it: a watcher that died leaves the file, not the lock
    except BlockingIOError:
        pass
    finally:
        os.close(handle)
    nonce = secrets.token_hex(16)
    probe, answer = folder / f"{PROBE}{nonce}", folder / f"{ANSWER}{nonce}"
    try:
        os.close(os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        deadline = time.monotonic() + wait
        while True:
            try:
                said = answer.read_text(encoding="utf-8")
                break
            except FileNotFoundError:
                if time.monotonic() > deadline:
                    return f"the watcher did not answer within {wait:g} s"
                time.sleep(0.001)
    except OSError as exc:
        return f"cannot ask the watcher: {exc.strerror}"
    finally:
        for path in (probe, answer):
            path.unlink(missing_ok=True)
    return None if said == CLEAN else said


def watch_limit() -> str:
    for path in WATCH_LIMITS:
        try:
            return Path(path).read_text().strip()
        except OSError:
            continue
    return "?"


class Vouch:
    """The watcher's side: counts the kernel's events as they are read, answers probes, holds the lock."""

    def __init__(self, state_dir: Path, ignored: Callable[[PurePosixPath], bool]) -> None:
        self.folder = state_dir / FOLDER
        self.ignored = ignored  # names no sync reads: dotfiles and editors' temporary files
        self.lock = threading.RLock()  # the reader thread holds it while watchdog handles an event
        self.received = 1  # the start counts as a change: the first sync covers all that came before
        self.tried = 0  # `received` when the last sync started
        self.clean_to = 0  # `received` when the last sync that succeeded (nothing broken) started
        self.last = 0.0  # monotonic time of the last counted event
        self.waiting = 0.0  # ... and of the first one no sync has started for
        self.broken: str | None = None  # why this watcher can never vouch again
        self.roots: dict[int, str] = {}  # the watched folders' descriptors: removing one ends vouching
        self.root_paths: set[bytes] = set()
        self.probe_wd: int | None = None
        self.lock_handle: int | None = None

    # -- the reader thread (inotify events, in the kernel's order) ---------------------------------
    def note(self, event) -> None:
        """Count one event read from the kernel (called with `self.lock` held, before watchdog sees it)."""
        from watchdog.observers.inotify_c import InotifyConstants as K

        if event.wd == self.probe_wd:
            name = os.fsdecode(event.name)
            if event.mask & K.IN_CREATE and name.startswith(PROBE):
                self.answer(name[len(PROBE):])
            return
        if event.mask & K.IN_Q_OVERFLOW:
            log.warning("the kernel's queue of file events overflowed: events were lost; a full sync follows")
        elif event.wd in self.roots and event.mask & (K.IN_DELETE_SELF | K.IN_MOVE_SELF):
            self.cannot_vouch(f"{self.roots[event.wd]}/ was removed or moved while watched")
        elif event.mask & K.IN_IGNORED or (event.name and self.ignored(PurePosixPath(os.fsdecode(event.name)))):
            return  # a watch removed (watchdog's own doing, or after the folder's removal, which is counted)
        if self.received == self.tried:
            self.waiting = time.monotonic()
        self.received += 1
        self.last = time.monotonic()

    def added(self, path: bytes, wd: int) -> None:
        if path in self.root_paths:
            self.roots[wd] = os.fsdecode(os.path.basename(path))

    def watch_failed(self, path: bytes, exc: OSError) -> None:
        """A folder could not be watched: its changes would go unseen, so nothing is vouched for again."""
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return  # gone before its watch was added: its removal is an event of its parent
        if exc.errno == errno.ENOSPC:
            self.cannot_vouch(f"the system's limit of inotify watches is reached ({watch_limit()} watches, one per "
                              f"folder): raise it (sysctl fs.inotify.max_user_watches=N) and restart")
        else:
            self.cannot_vouch(f"cannot watch {os.fsdecode(path)}: {exc.strerror or exc}")

    def cannot_vouch(self, reason: str) -> None:
        with self.lock:
            if self.broken is None:
                self.broken = reason
                log.warning("the watcher no longer vouches for the vault (every reindex stats every file): %s", reason)

    def state(self) -> str:
        with self.lock:
            if self.broken is not None:
                return f"the watcher cannot vouch: {self.broken}"
            if self.lock_handle is None:
                return "the watcher does not hold the lock"
            if self.clean_to != self.received:
                return "a change is not synced yet" if self.tried else "the watcher's first sync is under way"
            return CLEAN

    def answer(self, nonce: str) -> None:
        from memvault.vault.format.atomic import atomic_write

        try:
            atomic_write(self.folder / f"{ANSWER}{nonce}", self.state().encode("utf-8"))
        except OSError as exc:
            log.warning("cannot answer a reindex: %s", exc)

    # -- the sync loop -----------------------------------------------------------------------------
    def due(self, debounce: float, longest: float) -> int | None:
        """`received` as of now when a sync is due (events counted, then quiet for `debounce` s, or
        coming for `longest` s); the sync then covers every event counted up to it."""
        with self.lock:
            now = time.monotonic()
            if self.received == self.tried or (now - self.last < debounce and now - self.waiting < longest):
                return None
            self.tried = self.received
            return self.received

    def synced(self, upto: int, ok: bool) -> None:
        """The sync that started at `upto` ended; `ok`: it succeeded and left nothing broken."""
        with self.lock:
            if ok:
                self.clean_to = max(self.clean_to, upto)

    # -- the lock and the probes' folder -----------------------------------------------------------
    def take_lock(self) -> bool:
        """Hold the watcher's lock; False when another live watcher holds it."""
        self.folder.mkdir(parents=True, exist_ok=True)
        handle = os.open(self.folder / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(handle)
            return False
        for stale in self.folder.glob("*-*"):  # probes and answers a dead reindex or watcher left
            if stale.name.startswith((PROBE, ANSWER)):
                stale.unlink(missing_ok=True)
        os.ftruncate(handle, 0)
        os.write(handle, f"{os.getpid()}\n".encode())
        with self.lock:
            self.lock_handle = handle
        return True

    def release(self) -> None:
        with self.lock:
            self.broken = self.broken or "the watcher stopped"
            handle, self.lock_handle = self.lock_handle, None
        if handle is not None:
            os.close(handle)  # the flock goes with it


def vouching_observer(vouch: Vouch, roots: list[Path]):
    """A watchdog observer whose one inotify descriptor counts every event for `vouch` before
    watchdog handles it, and also watches the probes' folder."""
    from watchdog.observers.api import BaseObserver
    from watchdog.observers.inotify import InotifyEmitter
    from watchdog.observers.inotify_c import InotifyConstants, InotifyFD

    class CountingFD(InotifyFD):
        def handle_event(self, event) -> None:
            # Counted and handled under one lock: a sync's start (`due`) falls wholly before or after
            # an event's handling, which adds the watches of a new folder.
            with vouch.lock:
                vouch.note(event)
                super().handle_event(event)

        def add_callback(self, path, mask, callback, id_):
            if path in vouch.root_paths:  # a watched folder moved away: a new one by its name is not watched
                mask |= InotifyConstants.IN_MOVE_SELF
            try:
                wd = super().add_callback(path, mask, callback, id_)
            except OSError as exc:
                vouch.watch_failed(path, exc)
                raise
            vouch.added(path, wd)
            return wd

    # The probes' folder's callbacks: its events are counted (and answered) by `note`.
    probes = SimpleNamespace(on_event=lambda event: None, on_queue_overflow=lambda: None,
                             on_watch_deleted=lambda wd: vouch.cannot_vouch("the probes' folder was removed"))

    class VouchingObserver(BaseObserver):
        def __init__(self) -> None:
            self.inotify = CountingFD()
            self.inotify.start()
            super().__init__(InotifyEmitter, inotify_fd=self.inotify)

        def watch_probes(self) -> None:
            vouch.folder.mkdir(parents=True, exist_ok=True)
            wd = self.inotify.add_callback(os.fsencode(vouch.folder), InotifyConstants.IN_CREATE, probes, 0)
            with vouch.lock:
                vouch.probe_wd = wd

        def on_thread_stop(self) -> None:
            super().on_thread_stop()
            self.inotify.stop()
            self.inotify.join()

    vouch.root_paths = {os.fsencode(root) for root in roots}
    return VouchingObserver()
