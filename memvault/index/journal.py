"""Entries written since the index last caught up: ids and paths, one JSON line each.

A write (add, edit, rm) appends here instead of loading the embedding model, so `memvault add` stays
quick; the next command that searches embeds just these entries first. Appends are single small
writes with O_APPEND (atomic on POSIX); taking the journal happens under the vault's lock.
"""

from __future__ import annotations

from pathlib import Path

from memvault.vault.format import jsonlines

FILE_NAME = "pending.jsonl"


def record(state_dir: Path, items: list[tuple[str, str | None]]) -> None:
    """Append (memory id, live path or None when the entry left the index) pairs."""
    jsonlines.append(state_dir / FILE_NAME, [{"id": i, "path": p} for i, p in items])


def take(state_dir: Path) -> dict[str, str | None]:
    """Read and clear the journal: the last word on each id wins. Call with the vault locked."""
    latest = peek(state_dir)
    (state_dir / FILE_NAME).unlink(missing_ok=True)
    return latest


def peek(state_dir: Path) -> dict[str, str | None]:
    """The journal's ids and live paths (None: left the index), the last word on each id winning,
    without clearing it. A line a crash tore, or bytes that are not a record, are passed over: the
    next reindex compares every file anyway."""
    latest: dict[str, str | None] = {}
    for item in jsonlines.read(state_dir / FILE_NAME):
        path = item.get("path")
        if isinstance(item.get("id"), str) and (path is None or isinstance(path, str)):
            latest[item["id"]] = path
    return latest
