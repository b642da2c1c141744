"""The branch HEAD names moved to a new commit in this process, as `git update-ref HEAD <new> <old>`
moves it: a compare-and-swap under git's own lock files, with both reflogs written.

Git's files backend, step by step: `HEAD.lock` and `refs/heads/<branch>.lock` are taken with
O_EXCL (a git working meanwhile holds one, and then git's own update-ref is left to wait for it or
fail), the branch is read again under the locks and must still be `old`, the new value is written
into the branch's lock, a line is appended to the branch's and HEAD's reflogs where they are kept,
and the lock is renamed over the branch. A Ctrl-C meanwhile waits for the end (the step is done or
not done, as a git process's is); a kill leaves lock files that the next writer removes as stale.
"""

from __future__ import annotations

import os
import re
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from memvault.vault.git.process import read_ref

# A branch name git would write as a plain file (no '..', no lock suffix, no odd characters).
PLAIN_BRANCH = re.compile(r"refs/heads/(?!.*\.\.)(?!.*\.lock(/|$))[A-Za-z0-9][A-Za-z0-9._/-]*")


def move_branch(git_dir: Path, common_dir: Path, new: str, old: str, reflog: str) -> bool:
    """Move HEAD's branch from `old` to `new`; `reflog` is the reflog line's '<who> <when>\\t<why>'.
    False, with nothing changed, when git's update-ref must do it (a lock held, HEAD not a plain
    branch, the branch no longer at `old`: git then says why)."""
    head = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    branch = head[len("ref:"):].strip() if head.startswith("ref:") else ""
    if not PLAIN_BRANCH.fullmatch(branch):
        return False
    branch_file = common_dir / branch
    head_lock, branch_lock = git_dir / "HEAD.lock", branch_file.with_name(branch_file.name + ".lock")
    fds: dict[Path, int] = {}
    owned: list[Path] = []  # lock files this made, removed at the end unless renamed into place
    with interrupts_deferred():
        try:
            branch_file.parent.mkdir(parents=True, exist_ok=True)
            for lock in (head_lock, branch_lock):
                fds[lock] = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
                owned.append(lock)
            if read_ref(git_dir, common_dir, branch) != old:
                return False
            os.write(fds[branch_lock], f"{new}\n".encode())
            os.close(fds.pop(branch_lock))
            line = f"{old} {new} {reflog}\n".encode("utf-8", "surrogateescape")
            for log in dict.fromkeys((common_dir / "logs" / branch, git_dir / "logs" / "HEAD")):
                if log.is_file():  # kept where git keeps them (core.logAllRefUpdates made them at the first commit)
                    with log.open("ab") as out:
                        out.write(line)
            os.replace(branch_lock, branch_file)
            owned.remove(branch_lock)
            return True
        except FileExistsError:
            return False
        finally:
            for fd in fds.values():
                os.close(fd)
            for lock in owned:
                lock.unlink(missing_ok=True)


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """A Ctrl-C during the block is delivered at its end, to the handler there was (Python's raises
    KeyboardInterrupt; a server's stops it its way). Only the main thread receives signals."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        signal.raise_signal(signal.SIGINT)
