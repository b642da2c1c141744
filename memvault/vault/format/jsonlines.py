"""The small JSON-lines files memvault keeps under `.memvault/` (the index journal, the curation queue,
a transaction's intent): appended one whole line per write, read back one line at a time.

A crash can leave a torn last line, and a person or a disk can leave bytes that are not UTF-8 or not
JSON. Neither may stop memvault: a line that does not read as a JSON object is skipped, and an append
after a torn line starts on a fresh line, so the torn line never swallows the next record.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memvault.text.redact import redact_value


def append(path: Path, records: list[dict], mode: int = 0o644, sync: bool = False, redacted: bool = True) -> None:
    """Append `records`, one JSON line each, in one O_APPEND write (atomic on POSIX). Their strings
    are redacted (held candidates, queued turns: secrets never reach the disk) unless `redacted` is
    False (the transaction's intent notes, which must give back a file's bytes exactly)."""
    if not records:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    data = encode(records, redacted)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, mode)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data  # a crash tore the last line: never glue a record to it
        os.write(fd, data)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def encode(records: list[dict], redacted: bool = True) -> bytes:
    """`records` as the file holds them: one JSON line each, UTF-8 (lone surrogates passed through)."""
    if redacted:
        records = [redact_value(record) for record in records]
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records).encode("utf-8", "surrogatepass")


def read(path: Path) -> list[dict]:
    """The JSON objects in the file, in order; lines that are not one (torn, not UTF-8, not JSON, not
    an object) are skipped. A missing file has none."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return parse(data)


def parse(data: bytes) -> list[dict]:
    """The JSON objects in `data`, lines that are not one skipped (as `read`)."""
    records = []
    for line in data.split(b"\n"):
        try:
            record = json.loads(line.decode("utf-8", "surrogatepass"))
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(record, dict):
            records.append(record)
    return records
