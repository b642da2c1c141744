"""Entries written since the index last caught up: ids and paths, one JSON line each.

A write (add, edit, rm) appends here instead of loading the embedding model, so `memvault add` stays
quick; the next command that searches embeds just these entries first. Appends are single small
writes with O_APPEND (atomic on POSIX); taking the journal happens under the vault's lock.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

FILE_NAME = "pending.jsonl"


def record(state_dir: Path, items: list[tuple[str, str | None]]) -> None:
    """Append (memory id, live path or None when the entry left the index) pairs."""
    if not items:
        return
    state_dir.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps({"id": i, "path": p}) + "\n" for i, p in items).encode("utf-8")
    fd = os.open(state_dir / FILE_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def take(state_dir: Path) -> dict[str, str | None]:
    """Read and clear the journal: the last word on each id wins. Call with the vault locked."""
    latest = peek(state_dir)
    (state_dir / FILE_NAME).unlink(missing_ok=True)
    return latest


def peek(state_dir: Path) -> dict[str, str | None]:
    """The journal's ids and live paths (None: left the index), the last word on each id winning,
    without clearing it."""
    try:
        lines = (state_dir / FILE_NAME).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return {}
    latest: dict[str, str | None] = {}
    for line in lines:
        try:
            item = json.loads(line)
            latest[str(item["id"])] = item.get("path")
        except (ValueError, KeyError, TypeError):
            continue  # a torn line from a crash: the next reindex covers that file anyway
    return latest
