"""Atomic file writes: a reader never sees half a file, and a crash leaves at most a temporary file.

The temporary file is '.<name>.XXXX.tmp' beside its target (`is_temp_name`): listings skip it, git
never commits it (vault.git.TEMP_FILES), and the vault removes those a crash left
(`Vault.remove_temp_files`, `CrashRecovery.sweep_temp_files`)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from memvault.errors import UnsafePathError

# An atomic write's temporary file lives for milliseconds; one older than this was left by a crash.
STALE_TEMP_AGE = 60.0


def is_temp_name(name: str) -> bool:
    """The name of an atomic write's temporary file ('.<name>.XXXX.tmp'): never an entry."""
    return name.startswith(".") and name.endswith(".tmp")


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half a file.

    Never through a symbolic link: `path` (under the vault's resolved root) must be reached without
    one, checked before any folder is created."""
    folder = os.path.abspath(path.parent)
    if os.path.realpath(folder) != folder or path.is_symlink():
        raise UnsafePathError(f"refusing to write {path}: it is reached through a symbolic link")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
