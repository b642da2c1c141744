"""The index rows of the vault as it was at a past commit, without vectors or lexical text: for the
reads that list, count and walk the graph (the web page's as-of overview, timeline, graph) but
never rank.

A past index (past.py) parses, embeds and indexes every file of the commit: seconds on a 10k vault,
while such a page must answer in well under 200 ms. These rows cost a `git diff` instead: a file
whose bytes in the work tree are those of the commit has today's index row, copied by path inside
SQLite; only the others are read from git (one `git cat-file --batch`) and parsed. They land in an
in-memory database with the index's own `entries` and `relations` tables, so the index's queries
read them unchanged; rows are numbered in the commit's listing order, as the past index writes them,
so ties in time sort alike. Kept per commit (a commit never changes) until a history rewrite.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from cachetools import LRUCache

from memvault.index import db, journal
from memvault.index.graph import create_tables, write_relation
from memvault.index.rows import IndexRow
from memvault.index.store import FILE_NAME, IndexStore
from memvault.vault.format.entry import Entry
from memvault.vault.git.rewrites import COMMIT_MAP
from memvault.vault.git.timetravel import PastCommit, changed_since, names_at, parsed_at

if TYPE_CHECKING:
    from memvault.vault.write.store import Vault

KEEP = 4  # commits kept in memory (a 10k vault's rows: a few MB each)
# Columns copied as they are; file_hash, mtime_ns and size are the file's bookkeeping, set as the
# past index sets them (its file hash is the text's, nothing was stat'ed).
COPIED = [c for c in db.ENTRY_COLUMNS if c not in ("file_hash", "mtime_ns", "size")]
RELATION_COLUMNS = "source, source_key, relationship, destination, destination_key, category"

_kept: LRUCache[tuple, PastRows] = LRUCache(KEEP)
_kept_lock = threading.Lock()  # LRUCache is not thread-safe: even a read reorders it


class PastRows(IndexStore):
    """An IndexStore's reads (`conn`, `count`, `select`, `rows`) over a commit's rows in memory: no
    vectors, no FTS, so nothing that ranks. `lock` is held while a thread reads (apsw refuses one
    connection used by two threads at once)."""

    def __init__(self, conn) -> None:  # no file to open or repair: the rows are built here
        self.conn = conn
        self.path = Path(":memory:")
        self.identity, self.dims = "", 0
        self.rebuilt, self.rebuild_reason, self.has_coarse = False, None, False
        self.snapshot, self.snapshot_path = None, None  # no vectors' snapshot either
        self.lock = threading.RLock()


def past_rows(vault: Vault, past: PastCommit) -> PastRows:
    """The live entries of `vault` at `past` as index rows (built on first use, then kept)."""
    key = (str(vault.root), past.sha, _rewrites(vault))
    with _kept_lock:
        for old in [k for k in _kept if k[0] == key[0] and k[2] != key[2]]:
            del _kept[old]  # from before a history rewrite: they may hold what it erased
        found = _kept.get(key)
    if found is not None:
        return found
    built = _build(vault, past)
    with _kept_lock:
        _kept[key] = built
    return built


def _rewrites(vault: Vault) -> tuple[int, int] | None:
    """The mark of the last history rewrite (an erase): rows kept from before it may hold what it erased."""
    try:
        stat = (vault.state_dir / COMMIT_MAP).stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


def _build(vault: Vault, past: PastCommit) -> PastRows:
    from concurrent.futures import ThreadPoolExecutor

    import apsw

    git = vault.git
    with ThreadPoolExecutor(1) as pool:  # git compares the work tree while this process reads the listing
        comparing = pool.submit(changed_since, git, past)
        listing = names_at(git, past)
        changed = comparing.result()
    conn = apsw.Connection(":memory:", flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
                           | apsw.SQLITE_OPEN_URI)
    # The index's columns without its constraints and indexes: filling 10k rows is most of a first
    # visit, and a scan of them costs a page less than keeping five indexes while they are written.
    conn.execute(f"CREATE TABLE entries ({', '.join(db.ENTRY_COLUMNS)})")
    create_tables(conn)
    # The listing's paths in order, null where the file changed since: rowid = place in the listing + 1.
    unchanged = json.dumps([None if rel in changed else rel for rel, _ in listing])
    today = vault.state_dir / FILE_NAME
    if today.exists():
        try:
            _copy_today(conn, today, unchanged, journal.peek(vault.state_dir))
        except apsw.Error:  # an index of an older schema, or damaged: every file is read from git
            conn.execute("DELETE FROM entries; DELETE FROM relations")
    # The rest (changed since, or without a row today: never indexed, broken) read from the commit.
    have, ids = set(), set()
    for rowid, memory_id in conn.execute("SELECT rowid, id FROM entries"):
        have.add(rowid)
        ids.add(memory_id)
    rest = [(place + 1, (PurePosixPath(rel), blob)) for place, (rel, blob) in enumerate(listing)
            if place + 1 not in have]
    parsed = parsed_at(git, past, [pair for _, pair in rest])
    with conn:
        for (rowid, _), (rel, entry) in zip(rest, parsed, strict=True):
            # a broken file is left out, and the first file of an id wins, as in the past index
            if isinstance(entry, Entry) and entry.id not in ids:
                ids.add(entry.id)
                _insert(conn, rowid, IndexRow.from_entry(entry, rel, entry.hash))
    return PastRows(conn)


def _copy_today(conn, today: Path, unchanged: str, pending: dict[str, str | None]) -> None:
    """Today's rows (and their relations) for the unchanged files, read-only, inside SQLite. Today's
    index is read as it stands, never caught up (an as-of page neither builds nor writes it): the
    entries written since it last caught up (its journal) are left to be read from git."""
    columns = ", ".join(COPIED)
    stale_ids = json.dumps(list(pending))
    stale_paths = json.dumps([path for path in pending.values() if path])
    conn.execute("ATTACH DATABASE ? AS today", (f"{today.resolve().as_uri()}?mode=ro",))
    try:
        with conn:
            conn.execute(f"INSERT INTO entries (rowid, file_hash, mtime_ns, size, {columns}) "
                         f"SELECT j.key + 1, t.text_hash, 0, -1, {', '.join('t.' + c for c in COPIED)} "
                         "FROM json_each(?) j JOIN today.entries t ON t.path = j.value "
                         "WHERE t.id NOT IN (SELECT value FROM json_each(?)) "
                         "AND t.path NOT IN (SELECT value FROM json_each(?))",
                         (unchanged, stale_ids, stale_paths))
            conn.execute(f"INSERT INTO relations (entry_rowid, {RELATION_COLUMNS}) "
                         f"SELECT e.rowid, {', '.join('r.' + c for c in RELATION_COLUMNS.split(', '))} "
                         "FROM entries e JOIN today.entries t ON t.path = e.path "
                         "JOIN today.relations r ON r.entry_rowid = t.rowid ORDER BY e.rowid, r.rowid")
    finally:
        conn.execute("DETACH DATABASE today")


def _insert(conn, rowid: int, row: IndexRow) -> None:
    values = {column: getattr(row, column) for column in db.ENTRY_COLUMNS}
    conn.execute(f"INSERT INTO entries (rowid, {', '.join(values)}) VALUES (?, {', '.join('?' * len(values))})",
                 (rowid, *values.values()))
    write_relation(conn, rowid, row.role, row.triple)
