"""An exclusive lock on a file, the kernel's (flock): held through an open file, so a process killed
while holding it releases it. It is what filelock does on POSIX; importing filelock (asyncio and
more) costs more than an add itself, and every write takes the vault's lock, so the lock is taken
here, and filelock serves only where there is no fcntl."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

try:
    import fcntl
except ImportError:  # not POSIX
    fcntl = None  # type: ignore[assignment]

POLL = 0.05  # seconds between tries while another process holds the lock


class LockTimeout(Exception):
    """The lock was held by another process for the whole wait."""


@contextmanager
def exclusive(path: str, wait: float) -> Iterator[None]:
    """Hold the lock on `path` (made if missing) for the block, waiting up to `wait` seconds for it."""
    if fcntl is None:
        with filelock_held(path, wait):
            yield
        return
    deadline = time.monotonic() + wait
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() >= deadline:
                raise LockTimeout(path) from None
            time.sleep(POLL)
            continue
        if os.fstat(fd).st_nlink:
            break
        os.close(fd)  # the file was removed while we waited: lock the one at that path now
    try:
        yield
    finally:
        os.close(fd)  # closing the file releases the lock


@contextmanager
def filelock_held(path: str, wait: float) -> Iterator[None]:
    from filelock import FileLock, Timeout

    lock = FileLock(path, timeout=wait)
    try:
        lock.acquire()
    except Timeout:
        raise LockTimeout(path) from None
    try:
        yield
    finally:
        lock.release()
