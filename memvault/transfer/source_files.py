"""Reading a source safely: regular files only (checked on the open descriptor), in chunks, never
more than limits.max_import_bytes read or unzipped; a chat export's `conversations.json` found in
its folder or its .zip; JSON errors as one line."""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO

from memvault.errors import MemvaultError, UsageError
from memvault.settings import LimitsSettings

IMPORT_LIMIT = LimitsSettings.max_import_bytes
IMPORT_SETTING = "limits.max_import_bytes"
CHUNK = 1 << 20


@contextmanager
def open_regular(path: Path) -> Iterator[BinaryIO]:
    """`path` opened for reading if it is a regular file, checked on the open descriptor (a FIFO would
    block the import forever, a device would never end); anything else is a one-line error."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO's open must not wait
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except OSError as exc:
        raise MemvaultError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"{path} is not a regular file (a folder, a pipe, a device?): memvault reads only files")
        os.set_blocking(fd, True)
        yield handle


def read_bytes(path: Path, limit: int = IMPORT_LIMIT) -> bytes:
    """A source file's bytes (a regular file only: open_regular), at most `limit` bytes
    (limits.max_import_bytes); anything else is a one-line error."""
    with open_regular(path) as handle:
        try:
            return capped(handle, limit, path)
        except OSError as exc:
            raise MemvaultError(f"cannot read {path}: {exc.strerror or exc}") from None


def capped(handle, limit: int, path: Path) -> bytes:
    """All of `handle`'s bytes, read a chunk at a time; past `limit` a one-line UsageError naming the
    setting (before more than one chunk beyond it is held)."""
    chunks, size = [], 0
    while True:
        chunk = handle.read(min(CHUNK, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise UsageError(f"{path} holds more than {IMPORT_SETTING} ({limit:,} bytes) once read or unzipped: "
                             f"raise the setting if the source is genuine")



EXPORT_FILE = "conversations.json"


def read_export(path: Path, what: str, limit: int = IMPORT_LIMIT) -> Any:
    """The `conversations.json` of a chat export (ChatGPT's and Claude's are both named so): the file
    itself, the unzipped export folder holding it, or the export's .zip as downloaded. At most `limit`
    bytes are read or inflated (a zip bomb is stopped while it streams)."""
    import zipfile

    if path.is_dir():
        path = path / EXPORT_FILE
    data = read_bytes(path, limit)  # a regular file: is_zipfile would block on a FIFO
    try:
        if data[:4] == b"PK\x03\x04" or zipfile.is_zipfile(io.BytesIO(data)):
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                names = [n for n in archive.namelist() if PurePosixPath(n).name == EXPORT_FILE]
                if not names:
                    raise UsageError(f"{path} holds no {EXPORT_FILE}: is it a {what}?")
                with archive.open(min(names, key=len)) as member:
                    return json_of(capped(member, limit, path), path, what)
        return json_of(data, path, what)
    except (OSError, zipfile.BadZipFile, NotImplementedError, EOFError) as exc:
        raise MemvaultError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None


def json_of(data: bytes, path: Path, what: str) -> Any:
    import json

    try:
        return json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path} is not a {what} (not JSON: {str(exc).splitlines()[0][:120]})") from None
    except RecursionError:  # json.loads recurses once per level
        raise UsageError(f"{path} is not a {what} (nested too deeply)") from None
