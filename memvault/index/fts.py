"""The index's lexical rows (the FTS5 table): an entry's own words, its date, and for a turn its
neighbouring turns' words (text.CONTEXT_TURNS), rewritten whenever an entry or a neighbour changes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memvault.index.text import CONTEXT_TURNS, TURN_ROLES, date_words, normalise

_TURN = f"role IN ({', '.join(repr(r) for r in TURN_ROLES)})"
_BEFORE = (f"SELECT rowid, text FROM entries WHERE conversation_id = ? AND {_TURN} AND (created_at, rowid) < (?, ?) "
           "ORDER BY created_at DESC, rowid DESC LIMIT ?")
_AFTER = (f"SELECT rowid, text FROM entries WHERE conversation_id = ? AND {_TURN} AND (created_at, rowid) > (?, ?) "
          "ORDER BY created_at, rowid LIMIT ?")


def turn_neighbours(conn: Any, rowid: int) -> list[int]:
    """The turns whose lexical context includes this entry (the same turns as its own context)."""
    found = _around(conn, rowid)
    return [r for r, _ in found[2]] if found else []


def write_fts(conn: Any, rowids: Iterable[int], fresh: bool = False) -> None:
    """(Re)write the FTS rows of these entries from the entries table (`fresh`: the table is empty)."""
    for rowid in sorted(set(rowids)):
        if not fresh:
            conn.execute("DELETE FROM entries_fts WHERE rowid = ?", (rowid,))
        found = _around(conn, rowid)
        if found is not None:
            text, created_at, context = found
            insert_fts(conn, rowid, text, created_at, [t for _, t in context])


def insert_fts(conn: Any, rowid: int, text: str, created_at: float, context: list[str]) -> None:
    """Write the FTS row of one entry from its text, time and its context's texts (in time order)."""
    conn.execute("INSERT INTO entries_fts (rowid, body, context, date) VALUES (?, ?, ?, ?)",
                 (rowid, normalise(text), normalise(" ".join(context)), date_words(created_at)))


def _around(conn: Any, rowid: int) -> tuple[str, float, list[tuple[int, str]]] | None:
    """(the entry's text, its created_at, [(rowid, text) of the turns around it in time order]);
    None if it is gone. Only a turn has (and is) context: other roles get an empty list."""
    row = conn.execute("SELECT text, role, conversation_id, created_at FROM entries WHERE rowid = ?",
                       (rowid,)).fetchone()
    if row is None:
        return None
    text, role, conversation, created_at = row
    if role not in TURN_ROLES or CONTEXT_TURNS <= 0:
        return text, created_at, []
    key = (conversation, created_at, rowid, CONTEXT_TURNS)
    before = conn.execute(_BEFORE, key).fetchall()
    return text, created_at, [*reversed(before), *conn.execute(_AFTER, key).fetchall()]
