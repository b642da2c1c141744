"""The index's rows as Python sees them: `IndexRow` (an entry as the `entries` table stores it),
`IndexedFile` (what sync compares), rows read back as dicts, and stored vectors."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.index import db
from memvault.index.graph import triple_json
from memvault.vault.format.entry import metadata_with_mem0_fields

if TYPE_CHECKING:
    import numpy as np

    from memvault.vault.format.entry import Entry

SELECT_ROW = "SELECT rowid, " + ", ".join(db.ENTRY_COLUMNS) + " FROM entries"


@dataclass(frozen=True)
class IndexRow:
    """One entry as the `entries` table stores it (fields in db.ENTRY_COLUMNS order)."""

    id: str
    path: str
    file_hash: str
    text_hash: str
    role: str
    conversation_id: str
    created_at: float
    updated_at: float
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    metadata: str
    source: str | None
    text: str
    mtime_ns: int = 0  # 0: stat unknown, so the next sync hashes the file once
    size: int = -1
    triple: str | None = None  # a fact's triple as JSON (index/graph.py), None without a whole one

    @classmethod
    def from_entry(cls, entry: Entry, rel: PurePosixPath | str, file_hash: str,
                   mtime_ns: int = 0, size: int = -1) -> IndexRow:
        return cls(
            id=entry.id, path=str(PurePosixPath(rel)), file_hash=file_hash, text_hash=entry.hash,
            role=entry.role, conversation_id=entry.conversation_id,
            created_at=entry.created_at.timestamp(), updated_at=(entry.updated_at or entry.created_at).timestamp(),
            user_id=entry.user_id, agent_id=entry.agent_id, run_id=entry.run_id,
            metadata=json.dumps(metadata_with_mem0_fields(entry), sort_keys=True, ensure_ascii=False, default=str),
            source=entry.source, text=entry.text, mtime_ns=mtime_ns, size=size,
            triple=triple_json(entry.triple, entry.text),
        )


@dataclass(frozen=True)
class IndexedFile:
    """What sync needs to know about an indexed file to decide whether it changed."""

    rowid: int
    id: str
    file_hash: str
    text_hash: str
    mtime_ns: int
    size: int


def indexed_files(conn: Any) -> dict[str, IndexedFile]:
    """path -> what sync compares, for every row of an index connection (also a read-only one: doctor)."""
    return {path: IndexedFile(*rest) for path, *rest in conn.execute(
        "SELECT path, rowid, id, file_hash, text_hash, mtime_ns, size FROM entries")}


def indexed_stamps(conn: Any) -> dict[str, tuple[int, int]]:
    """path -> (mtime_ns, size) recorded for every row: all a no-change sync compares. At a million rows
    an IndexedFile each took seconds to build; these are loaded first, and whole rows only on a change."""
    return {path: (mtime_ns, size) for path, mtime_ns, size in conn.execute("SELECT path, mtime_ns, size FROM entries")}


def row_dict(rowid: int, values: Sequence[Any]) -> dict[str, Any]:
    row = dict(zip(db.ENTRY_COLUMNS, values, strict=True))
    row["rowid"] = rowid
    try:
        row["metadata"] = json.loads(row["metadata"] or "{}")
    except ValueError:
        row["metadata"] = {}
    return row


def stored_vectors(conn: Any, rowids: Iterable[int]) -> dict[int, np.ndarray]:
    """rowid -> its stored unit vector, for those of `rowids` that have one (any connection to an index)."""
    import numpy as np

    # One point lookup per row: vec0 answers `rowid = ?` directly but scans every chunk for `rowid IN (...)`.
    found = {}
    for rowid in dict.fromkeys(rowids):
        row = conn.execute("SELECT embedding FROM entries_vec WHERE rowid = ?", (int(rowid),)).fetchone()
        if row is not None:
            found[rowid] = np.frombuffer(row[0], dtype=np.float32).copy()
    return found
