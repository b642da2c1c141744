"""Atomic file writes: a reader never sees half a file, and a crash leaves at most a temporary file.

The temporary file is '.<name>.<pid>-XXXX.tmp' beside its target (`is_temp_name`): listings skip it, git
never commits it (vault.git.TEMP_FILES), and the vault removes those a crash left
(`Vault.remove_temp_files`, `CrashRecovery.sweep_temp_files`): a minute old, or at once when the
process that wrote it is gone (`writer_gone`: a `kill -9` just now)."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from memvault.errors import UnsafePathError

# An atomic write's temporary file lives for milliseconds; one older than this was left by a crash.
STALE_TEMP_AGE = 60.0


def is_temp_name(name: str) -> bool:
    """The name of an atomic write's temporary file ('.<name>.XXXX.tmp'): never an entry."""
    return name.startswith(".") and name.endswith(".tmp")


WRITER = re.compile(r"\.(\d+)-[^.]*\.tmp$")


def writer_gone(name: str) -> bool:
    """Whether the process that wrote this temporary file (its pid is in the name) no longer runs, so
    the file can only be a crash's leftover. False when the name holds no pid or the pid is alive."""
    found = WRITER.search(name)
    if not found:
        return False
    try:
        os.kill(int(found.group(1)), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError, ValueError):
        return False
    return False


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half a file.

    Never through a symbolic link: `path` (under the vault's resolved root) must be reached without
    one, checked before any folder is created."""
    folder = os.path.abspath(path.parent)
    if os.path.realpath(folder) != folder or path.is_symlink():
        raise UnsafePathError(f"refusing to write {path}: it is reached through a symbolic link")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
