"""IndexStore: the sidecar SQLite index (entries table, vec0 embeddings, FTS5 text) of one vault.

The index is derived and disposable: a missing, corrupt or foreign file is set aside and rebuilt
on open, and a change of embedding model empties it; either way `rebuilt` tells the caller to sync.
A build under way is recorded in the file itself (meta `build_incomplete`, cleared when a sync
completes), so a build that a crash or `kill -9` interrupted is known to the next process that opens
the index, which finishes it before trusting the index.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import astuple
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.errors import SearchIndexError
from memvault.index import db
from memvault.index.db import guarded, ids_json
from memvault.index.fts import turn_neighbours, write_fts
from memvault.index.graph import write_relation
from memvault.index.queries import COARSE_ABOVE, IndexQueries
from memvault.index.rows import (
    SELECT_ROW,
    IndexedFile,
    IndexRow,
    indexed_files,
    indexed_stamps,
    row_dict,
    stored_vectors,
)
from memvault.index.snapshot import write as write_snapshot
from memvault.index.text import FTS_TOKENIZER, LEXICAL_VERSION

if TYPE_CHECKING:
    import numpy as np

    from memvault.index.snapshot import Snapshot

FILE_NAME = "index.sqlite"
BUILD_KEY = "build_incomplete"  # meta key: set while a sync is filling the index, cleared when it completes
# A sync rewrites the vectors' snapshot once this many of them changed since it was written (reading them
# from the log costs a cold search ~1 ms a thousand; rewriting 1M vectors ~10 s).
SNAPSHOT_REWRITE_MIN = 2_000
SNAPSHOT_REWRITE_SHARE = 0.01


class IndexStore(IndexQueries):
    """The index file of one vault; use `IndexStore.open(vault.state_dir, embedder.identity, embedder.dims)`."""

    def __init__(self, path: Path | str, identity: str, dims: int):
        self.path = Path(path)
        self.identity = identity
        self.dims = int(dims)
        self.rebuilt = False  # True when the caller must sync everything (new, repaired or emptied index)
        self.rebuild_reason: str | None = None
        self.conn = self._connect()
        # The vectors' sign bits (db.COARSE_TABLE), kept beside them for the coarse pass of `nearest`.
        self.has_coarse = db.table_exists(self.conn, db.COARSE_TABLE)
        self.snapshot_path: Path | None = self.path.with_name(self.path.name + ".vectors")
        self.snapshot: Snapshot | None = None  # the vectors' snapshot file, once read (`current_snapshot`)

    @classmethod
    def open(cls, state_dir: Path | str, identity: str, dims: int) -> IndexStore:
        state_dir = Path(state_dir)
        state_dir.mkdir(parents=True, exist_ok=True)
        return cls(state_dir / FILE_NAME, identity, dims)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> IndexStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- opening and repair ----------------------------------------------------------------------
    def _connect(self) -> Any:
        import apsw

        existed = self.path.exists() and self.path.stat().st_size > 0
        try:
            conn = db.connect(self.path)
            try:
                self._prepare(conn)
            except BaseException:
                conn.close()
                raise
            if not existed:
                self._mark_rebuilt("new index")
            return conn
        except (apsw.Error, db.IncompatibleIndexError) as exc:
            reason = f"unusable index set aside ({exc})"
        self._set_aside()
        conn = db.connect(self.path)
        self._prepare(conn)
        self._mark_rebuilt(reason)
        return conn

    def _mark_rebuilt(self, reason: str) -> None:
        self.rebuilt = True
        self.rebuild_reason = reason if self.rebuild_reason is None else f"{self.rebuild_reason}; {reason}"

    def take_rebuild_reason(self) -> str | None:
        """Why the index needs (or needed) a full sync, once: the first sync reports it, later ones don't."""
        reason, self.rebuilt, self.rebuild_reason = self.rebuild_reason, False, None
        return reason

    def _set_aside(self) -> None:
        """Move a bad index out of the way (kept once, for a post-mortem) and drop its WAL files."""
        aside = self.path.with_name(self.path.name + ".broken")
        if self.path.exists():
            self.path.replace(aside)
        for suffix in ("-wal", "-shm", "-journal"):
            Path(str(self.path) + suffix).unlink(missing_ok=True)

    def _prepare(self, conn: Any) -> None:
        db.migrate(conn)
        db.check_schema(conn)
        lexical = f"{LEXICAL_VERSION}:{FTS_TOKENIZER}"
        has_vec = db.table_exists(conn, "entries_vec")
        if (db.get_meta(conn, "embedder") == self.identity and db.get_meta(conn, "dims") == str(self.dims)
                and has_vec and db.get_meta(conn, "lexical") == lexical):
            return
        with db.immediate(conn):
            stored = db.get_meta(conn, "embedder")
            if stored != self.identity or db.get_meta(conn, "dims") != str(self.dims) or not has_vec:
                if stored is not None and conn.execute("SELECT count(*) FROM entries").fetchone()[0]:
                    self._mark_rebuilt(
                        f"embedding model changed from {stored} to {self.identity}: every entry is re-embedded")
                conn.execute("DELETE FROM entries")
                db.create_fts_table(conn)
                db.create_vec_table(conn, self.dims)
                db.set_meta(conn, BUILD_KEY, "new index" if stored is None else "model changed")
                db.set_meta(conn, "embedder", self.identity)
                db.set_meta(conn, "dims", str(self.dims))
            if db.get_meta(conn, "lexical") != lexical:
                # The tokenizer, normalisation or context changed: refill the FTS table from the stored text.
                db.create_fts_table(conn)
                write_fts(conn, [r[0] for r in conn.execute("SELECT rowid FROM entries")], fresh=True)
                db.set_meta(conn, "lexical", lexical)

    @guarded
    def clear(self) -> None:
        """Empty the index (for a full rebuild); the schema and model identity stay."""
        with db.immediate(self.conn):
            self.conn.execute("DELETE FROM entries")
            db.create_fts_table(self.conn)
            db.create_vec_table(self.conn, self.dims)
            db.set_meta(self.conn, BUILD_KEY, "full rebuild")
        self._mark_rebuilt("full rebuild requested")

    @guarded
    def begin_build(self, what: str) -> None:
        """Record on disk that a sync is filling the index: until `finish_build`, any process that
        opens it knows it is incomplete (`rebuilt`) and syncs before searching."""
        if db.get_meta(self.conn, BUILD_KEY) is None:
            with db.immediate(self.conn):
                db.set_meta(self.conn, BUILD_KEY, what)

    @guarded
    def finish_build(self) -> None:
        """The index holds every file again (a sync completed)."""
        if db.get_meta(self.conn, BUILD_KEY) is not None:
            with db.immediate(self.conn):
                self.conn.execute("DELETE FROM meta WHERE key = ?", (BUILD_KEY,))

    @property
    def build_incomplete(self) -> str | None:
        """Why the index is being (or was, when interrupted) built; None when complete."""
        return db.get_meta(self.conn, BUILD_KEY)

    # -- writing -----------------------------------------------------------------------------------
    def _blob(self, vector: Any) -> bytes:
        import numpy as np

        array = np.asarray(vector, dtype=np.float32).reshape(-1)
        if array.shape[0] != self.dims:
            raise SearchIndexError(f"vector has {array.shape[0]} dimensions, the index holds {self.dims}")
        return array.tobytes()

    @guarded
    def upsert(self, rows: Sequence[IndexRow], vectors: Sequence[Any | None]) -> list[int | None]:
        """Insert or update entries (matched by id) in one transaction; returns their rowids.

        A vector of None keeps the vector already stored for that id (a move, or an edit of the
        front matter only): no embedding needed. A row given None that has no stored vector is
        skipped and its rowid returned as None, for the caller to embed.
        """
        if len(rows) != len(vectors):
            raise SearchIndexError("upsert needs one vector (or None) per row")
        blobs = [None if v is None else self._blob(v) for v in vectors]
        stale: set[int] = set()  # rows whose lexical text (own or context) must be rewritten
        with db.immediate(self.conn):
            rowids = [self._upsert_one(row, blob, stale) for row, blob in zip(rows, blobs, strict=True)]
            write_fts(self.conn, stale)
        return rowids

    def _upsert_one(self, row: IndexRow, blob: bytes | None, stale: set[int]) -> int | None:
        conn = self.conn
        existing = conn.execute("SELECT rowid FROM entries WHERE id = ?", (row.id,)).fetchone()
        if blob is None:
            kept = existing and conn.execute(
                "SELECT embedding FROM entries_vec WHERE rowid = ?", (existing[0],)).fetchone()
            if not kept:
                return None
            blob = kept[0]
        occupant = conn.execute("SELECT rowid FROM entries WHERE path = ? AND id != ?", (row.path, row.id)).fetchone()
        if occupant:  # another entry's file was replaced by this one
            stale |= self._delete_rowids([occupant[0]])
        values = astuple(row)
        if existing:
            rowid = existing[0]
            stale.update(turn_neighbours(conn, rowid))  # its old place in time: they lose its text
            assignments = ", ".join(f"{column} = ?" for column in db.ENTRY_COLUMNS)
            conn.execute(f"UPDATE entries SET {assignments} WHERE rowid = ?", (*values, rowid))
            self._delete_vector(rowid)
        else:
            placeholders = ", ".join("?" for _ in db.ENTRY_COLUMNS)
            conn.execute(f"INSERT INTO entries ({', '.join(db.ENTRY_COLUMNS)}) VALUES ({placeholders})", values)
            rowid = conn.last_insert_rowid()
        # vec0 partition keys cannot be updated in place: the vector is written afresh every time.
        conn.execute("INSERT INTO entries_vec (rowid, embedding, conversation_id) VALUES (?, ?, ?)",
                     (rowid, blob, row.conversation_id))
        if self.has_coarse:
            conn.execute(f"INSERT INTO {db.COARSE_TABLE} (rowid, coarse, conversation_id) "
                         "VALUES (?, vec_quantize_binary(?), ?)", (rowid, blob, row.conversation_id))
        db.log_vector(conn, rowid, row.conversation_id, blob)
        stale.add(rowid)
        stale.update(turn_neighbours(self.conn, rowid))  # its new place in time: they gain its text
        write_relation(conn, rowid, row.role, row.triple)
        return rowid

    def _delete_rowids(self, rowids: Sequence[int]) -> set[int]:
        """Delete rows; returns the surviving turns whose lexical context held their text."""
        stale: set[int] = set()
        for rowid in rowids:
            stale.update(turn_neighbours(self.conn, rowid))
            self._delete_vector(rowid)
            self.conn.execute("DELETE FROM entries_fts WHERE rowid = ?", (rowid,))
            self.conn.execute("DELETE FROM entries WHERE rowid = ?", (rowid,))
        return stale - set(rowids)

    def _delete_vector(self, rowid: int) -> None:
        self.conn.execute("DELETE FROM entries_vec WHERE rowid = ?", (rowid,))
        if self.has_coarse:
            self.conn.execute(f"DELETE FROM {db.COARSE_TABLE} WHERE rowid = ?", (rowid,))
        db.log_vector(self.conn, rowid, None, None)

    @guarded
    def refresh_snapshot(self, scrub: bool = False) -> None:
        """Write the snapshot of the vectors (index.snapshot) for an index of more than COARSE_ABOVE of them
        when there is none or SNAPSHOT_REWRITE_SHARE of them changed since (a sync's last step: a search
        reads the changes since the file from the log); `scrub`: also when a row was removed since, so
        that no file holds its vector (erase and gc)."""
        current = self.current_snapshot()
        if current is None and db.newest_rowid(self.conn) <= COARSE_ABOVE:
            self.snapshot_path.unlink(missing_ok=True)  # one of an index emptied since: vectors no row has
            return
        if current is not None and len(current.changed) <= max(
                SNAPSHOT_REWRITE_MIN, SNAPSHOT_REWRITE_SHARE * current.size(None)) and not (
                scrub and any(vector is None for _, vector in current.changed.values())):
            return
        self.snapshot = write_snapshot(self.conn, self.snapshot_path, self.dims, current)

    @guarded
    def remove(self, ids: Iterable[str]) -> int:
        """Drop entries by id (missing ids are ignored); returns how many were removed."""
        ids = list(ids)
        if not ids:
            return 0
        with db.immediate(self.conn):
            rowids = [r[0] for r in self.conn.execute(
                "SELECT rowid FROM entries WHERE id IN (SELECT value FROM json_each(?))", (ids_json(ids),))]
            write_fts(self.conn, self._delete_rowids(rowids))
        return len(rowids)

    @guarded
    def restat(self, stats: Iterable[tuple[str, int, int]]) -> None:
        """Record (path, mtime_ns, size) for files whose bytes were found unchanged."""
        stats = list(stats)
        if stats:
            with db.immediate(self.conn):
                self.conn.executemany("UPDATE entries SET mtime_ns = ?, size = ? WHERE path = ?",
                                      [(mtime, size, path) for path, mtime, size in stats])

    # -- reading -----------------------------------------------------------------------------------
    @guarded
    def files(self) -> dict[str, IndexedFile]:
        """path -> what sync compares, for every indexed entry (one query)."""
        return indexed_files(self.conn)

    @guarded
    def stamps(self) -> dict[str, tuple[int, int]]:
        """path -> (mtime_ns, size) for every indexed entry: all a no-change sync compares (one query)."""
        return indexed_stamps(self.conn)

    @guarded
    def text_hashes(self, ids: Iterable[str]) -> dict[str, str]:
        """id -> hash of the indexed text, for the given ids that are indexed."""
        return dict(self.conn.execute("SELECT id, text_hash FROM entries WHERE id IN (SELECT value FROM json_each(?))",
                                      (ids_json(ids),)))
    @guarded
    def rows(self, rowids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """rowid -> the entry's columns (metadata decoded), for the rowids that exist."""
        found = {}
        for rowid, *values in self.conn.execute(
                SELECT_ROW + " WHERE rowid IN (SELECT value FROM json_each(?))", (ids_json(rowids),)):
            found[rowid] = row_dict(rowid, values)
        return found

    @guarded
    def vectors(self, rowids: Iterable[int]) -> dict[int, np.ndarray]:
        """rowid -> its stored unit vector (from the vectors' snapshot when there is one: a point lookup in
        sqlite-vec costs ~80 us a row at 1M)."""
        rowids = list(dict.fromkeys(rowids))
        vectors = self.current_snapshot()
        found = {} if vectors is None else {r: vector.copy() for r, vector in vectors.vectors_of(rowids).items()}
        return found | stored_vectors(self.conn, [rowid for rowid in rowids if rowid not in found])

    @guarded
    def by_id(self, memory_id: str) -> dict[str, Any] | None:
        row = self.conn.execute(SELECT_ROW + " WHERE id = ?", (memory_id,)).fetchone()
        return None if row is None else row_dict(row[0], row[1:])

    @guarded
    def count(self, where: str = "1", params: Sequence[Any] = ()) -> int:
        return self.conn.execute(f"SELECT count(*) FROM entries e WHERE {where or '1'}", tuple(params)).fetchone()[0]

    @guarded
    def stats(self) -> dict[str, Any]:
        """Figures about the index: rows per conversation, model, tokenizer, bytes on disk (WAL included)."""
        conversations = dict(self.conn.execute(
            "SELECT conversation_id, count(*) FROM entries GROUP BY conversation_id ORDER BY conversation_id"))
        size = sum(p.stat().st_size for p in (self.path, Path(str(self.path) + "-wal")) if p.exists())
        return {
            "path": str(self.path), "entries": sum(conversations.values()), "conversations": conversations,
            "embedder": self.identity, "dims": self.dims, "schema_version": db.SCHEMA_VERSION,
            "tokenizer": FTS_TOKENIZER, "bytes": size,
        }

    @guarded
    def vacuum(self) -> None:
        """Merge FTS segments, reclaim free pages and fold the WAL back into the file; the vectors'
        snapshot is written afresh first if a row was removed since it was (its vector must go with it)."""
        self.refresh_snapshot(scrub=True)
        self.conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('optimize')")
        self.conn.execute("VACUUM")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    @guarded
    def purge(self) -> None:
        """After an erase: no byte of a row removed or rewritten since the last purge stays anywhere, the
        index file, its WAL, the FTS5 segments or the vectors' snapshot. FTS5 keeps a deleted row's terms
        in its segments (masked) until they are merged: `optimize` merges them away (its own secure-delete
        needs a row's old text, which a contentless table has not). Freed pages are zeroed as they go
        (db.connect's secure_delete); a file made before that has free pages of older rows and is
        vacuumed once (db.SCRUBBED_SINCE). The snapshot's rows of the rows changed since it was written
        are zeroed in place (readers take those rows from the log), and the log keeps only each row's
        newest vector; then the WAL is folded back and truncated."""
        self.conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('optimize')")
        current = self.current_snapshot()
        if current is None:  # none, or one of another vector table: vectors no row has
            self.snapshot_path.unlink(missing_ok=True)
        elif current.changed and not current.scrub(self.snapshot_path, list(current.changed)):
            self.snapshot = None  # another process wrote a new file meanwhile: written again, without them
            self.refresh_snapshot(scrub=True)
        with db.immediate(self.conn):
            db.drop_superseded_vectors(self.conn)
        if db.get_meta(self.conn, db.SCRUBBED_SINCE) is None:
            self.conn.execute("VACUUM")
            with db.immediate(self.conn):
                db.set_meta(self.conn, db.SCRUBBED_SINCE, str(time.time()))
        self._fold_wal()

    def _fold_wal(self) -> None:
        """Every page of the WAL written into the file and the WAL truncated to nothing; a reader that
        holds an old snapshot past the busy timeout keeps old pages in both: an error, not a silent leftover."""
        busy, _, _ = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise SearchIndexError(f"the index {self.path} is held by a reader: its WAL could not be folded back; "
                                   "run the erase again (or `memvault doctor --fix`) once it is done")

    @guarded
    def select(self, where: str = "1", params: Sequence[Any] = (), limit: int | None = None,
               newest_first: bool = True) -> list[dict[str, Any]]:
        """The rows of `entries e WHERE <where>` (metadata decoded), ordered by creation time;
        for listings by scope and filter (mem0's get_all, delete_all) without embedding anything."""
        order = "DESC" if newest_first else "ASC"
        sql = f"{SELECT_ROW} e WHERE {where or '1'} ORDER BY e.created_at {order}, e.rowid {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [row_dict(row[0], row[1:]) for row in self.conn.execute(sql, tuple(params))]
