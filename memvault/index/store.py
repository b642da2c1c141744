"""IndexStore: the sidecar SQLite index (entries table, vec0 embeddings, FTS5 text) of one vault.

The index is derived and disposable: a missing, corrupt or foreign file is set aside and rebuilt
on open, and a change of embedding model empties it; either way `rebuilt` tells the caller to sync.
A build under way is recorded in the file itself (meta `build_incomplete`, cleared when a sync
completes), so a build that a crash or `kill -9` interrupted is known to the next process that opens
the index, which finishes it before trusting the index.
Filters arrive as SQL over `entries e` (with `?` placeholders), so dense and lexical search can
apply them inside the query rather than after it.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.errors import SearchIndexError
from memvault.index import db
from memvault.index.graph import triple_json, write_relation
from memvault.index.text import (
    CONTEXT_TURNS,
    CONTEXT_WEIGHT,
    DATE_WEIGHT,
    FTS_TOKENIZER,
    LEXICAL_VERSION,
    TURN_ROLES,
    date_words,
    fts_query,
    normalise,
)
from memvault.vault.entry import metadata_with_mem0_fields

if TYPE_CHECKING:
    import numpy as np

    from memvault.vault.entry import Entry

FILE_NAME = "index.sqlite"
# More conversations than this in a filtered dense search: one scan of the whole vec0 table with a
# rowid filter costs less than one partition query per conversation.
MAX_PARTITION_QUERIES = 16
FEW_LEFT_OUT = 8  # rows a filter may drop from a partition before listing the kept rowids pays
# A KNN over more vectors than this takes the coarse pass (IndexStore._knn): the exact scan of 20k
# costs ~12 ms of CPU, of 100k ~53 ms. It re-scores COARSE_SHARE of the vectors scanned (at least
# COARSE_CANDIDATES): the sign bits of MiniLM's vectors are a rough guide, and how many of the exact top
# 10 the re-scored ones hold depends on that share, not on the count (LoCoMo's questions over all
# 5,882 turns: 0.4% -> 0.83, 1% -> 0.96, 4% -> 0.998; the synthetic 100k vault, whose templated
# sentences are its worst case: 1% -> 0.75). At 100k, 1% costs ~50 ms of CPU per search in all, the
# exact scan ~75 ms (quiet machine); past a few hundred thousand the re-scoring's point lookups cost
# more than the scan saves, which is where the README's plan for 1M takes over.
COARSE_ABOVE = 20_000
COARSE_SHARE = 0.01
COARSE_CANDIDATES = 400
BUILD_KEY = "build_incomplete"  # meta key: set while a sync is filling the index, cleared when it completes
_SELECT_ROW = "SELECT rowid, " + ", ".join(db.ENTRY_COLUMNS) + " FROM entries"


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


def _guarded(method):
    """Turn SQLite's 'the file is damaged' errors met mid-use into one clear memvault error."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        import apsw

        try:
            return method(self, *args, **kwargs)
        except (apsw.CorruptError, apsw.NotADBError) as exc:
            raise SearchIndexError(f"the index {self.path} is damaged ({exc}): run `memvault reindex --full`") from None
        except apsw.SQLError as exc:
            raise SearchIndexError(f"index query failed: {exc}") from None

    return wrapper


def _is_trivial(where: str) -> bool:
    return where.strip() in ("", "1", "TRUE", "true")


def _ids_json(ids: Iterable[int | str]) -> str:
    return json.dumps(list(ids))


class IndexStore:
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

    @_guarded
    def clear(self) -> None:
        """Empty the index (for a full rebuild); the schema and model identity stay."""
        with db.immediate(self.conn):
            self.conn.execute("DELETE FROM entries")
            db.create_fts_table(self.conn)
            db.create_vec_table(self.conn, self.dims)
            db.set_meta(self.conn, BUILD_KEY, "full rebuild")
        self._mark_rebuilt("full rebuild requested")

    @_guarded
    def begin_build(self, what: str) -> None:
        """Record on disk that a sync is filling the index: until `finish_build`, any process that
        opens it knows it is incomplete (`rebuilt`) and syncs before searching."""
        if db.get_meta(self.conn, BUILD_KEY) is None:
            with db.immediate(self.conn):
                db.set_meta(self.conn, BUILD_KEY, what)

    @_guarded
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

    @_guarded
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

    @_guarded
    def remove(self, ids: Iterable[str]) -> int:
        """Drop entries by id (missing ids are ignored); returns how many were removed."""
        ids = list(ids)
        if not ids:
            return 0
        with db.immediate(self.conn):
            rowids = [r[0] for r in self.conn.execute(
                "SELECT rowid FROM entries WHERE id IN (SELECT value FROM json_each(?))", (_ids_json(ids),))]
            write_fts(self.conn, self._delete_rowids(rowids))
        return len(rowids)

    @_guarded
    def restat(self, stats: Iterable[tuple[str, int, int]]) -> None:
        """Record (path, mtime_ns, size) for files whose bytes were found unchanged."""
        stats = list(stats)
        if stats:
            with db.immediate(self.conn):
                self.conn.executemany("UPDATE entries SET mtime_ns = ?, size = ? WHERE path = ?",
                                      [(mtime, size, path) for path, mtime, size in stats])

    # -- reading -----------------------------------------------------------------------------------
    @_guarded
    def files(self) -> dict[str, IndexedFile]:
        """path -> what sync compares, for every indexed entry (one query)."""
        return indexed_files(self.conn)

    @_guarded
    def text_hashes(self, ids: Iterable[str]) -> dict[str, str]:
        """id -> hash of the indexed text, for the given ids that are indexed."""
        return dict(self.conn.execute("SELECT id, text_hash FROM entries WHERE id IN (SELECT value FROM json_each(?))",
                                      (_ids_json(ids),)))

    @_guarded
    def dense(self, query_vec: Any, k: int, where: str = "1", params: Sequence[Any] = ()) -> list[tuple[int, float]]:
        """The k rows nearest to `query_vec` by cosine among `entries e WHERE <where>`:
        (rowid, cosine similarity), best first.

        The filter runs first on the entries table (indexed, cheap); the KNN then scans only the
        partitions (conversations) it touched, restricted to the matching rowids, so a scoped
        search costs what the scope holds, not what the vault holds.
        """
        k = min(int(k), db.VEC_K_MAX)
        if k <= 0:
            return []
        blob = self._blob(query_vec)
        knn = "SELECT rowid, distance FROM entries_vec WHERE embedding MATCH ? AND k = ?"
        if _is_trivial(where):
            found = self.conn.execute(knn, (blob, k)).fetchall()
        else:
            by_conversation: dict[str, list[int]] = {}
            for rowid, conversation in self.conn.execute(
                    f"SELECT e.rowid, e.conversation_id FROM entries e WHERE {where}", tuple(params)):
                by_conversation.setdefault(conversation, []).append(rowid)
            if len(by_conversation) <= MAX_PARTITION_QUERIES:
                found = []
                for conversation, rowids in by_conversation.items():
                    left_out = self._partition_size(conversation) - len(rowids)
                    if left_out <= FEW_LEFT_OUT:
                        # The filter keeps (nearly) the whole partition, as a scope-only search does (its
                        # summary aside): the partition key alone is twice as fast as listing 10k rowids;
                        # asking for `left_out` more neighbours makes up for the ones dropped here.
                        allowed = set(rowids)
                        found += [hit for hit in self.conn.execute(
                            knn + " AND conversation_id = ?",
                            (blob, min(k + left_out, db.VEC_K_MAX), conversation)) if hit[0] in allowed][:k]
                        continue
                    found += self.conn.execute(
                        knn + " AND conversation_id = ? AND rowid IN (SELECT value FROM json_each(?))",
                        (blob, min(k, len(rowids)), conversation, _ids_json(rowids))).fetchall()
            else:
                rowids = [r for group in by_conversation.values() for r in group]
                found = self.conn.execute(knn + " AND rowid IN (SELECT value FROM json_each(?))",
                                          (blob, min(k, len(rowids)), _ids_json(rowids))).fetchall()
        found.sort(key=lambda hit: (hit[1], hit[0]))
        return [(rowid, 1.0 - distance) for rowid, distance in found[:k]]

    def _partition_size(self, conversation: str) -> int:
        """Rows of this conversation in the vector table (every indexed entry has its vector)."""
        return self.conn.execute("SELECT count(*) FROM entries WHERE conversation_id = ?",
                                 (conversation,)).fetchone()[0]

    @_guarded
    def nearest(self, query_vec: Any, k: int, where: str = "1", params: Sequence[Any] = (),
                conversation: str | None = None) -> list[tuple[int, float]]:
        """`dense` for a filter that keeps nearly every row of what it covers (a search's scope):
        `conversation`'s partition (every partition when None) is asked for the nearest vectors
        first, a few more than k, and only those are checked against the filter; a filter that drops
        more falls back to `dense`. Named, `conversation` must hold every row `where` can match.

        Above COARSE_ABOVE vectors the nearest are found by a coarse pass (see `_knn`): then the
        result is approximate (COARSE_SHARE says how close).
        """
        k = min(int(k), db.VEC_K_MAX)
        if k <= 0:
            return []
        blob = self._blob(query_vec)
        fetch = min(2 * k + FEW_LEFT_OUT, db.VEC_K_MAX)  # room for summaries and the like, dropped below
        kept = self._kept(self._knn(blob, fetch, conversation), k, fetch, where, params)
        if kept is None:  # a narrow filter: its own rows are listed first
            return self.dense(query_vec, k, where, params)
        return [(rowid, 1.0 - distance) for rowid, distance in kept]

    def _kept(self, found: list[tuple[int, float]], k: int, fetch: int, where: str,
              params: Sequence[Any]) -> list[tuple[int, float]] | None:
        """The first k of `found` (the best `fetch` of a scope, best first) that pass the filter; None
        when the filter left fewer than k of a full `fetch`: then the filtered query must run instead."""
        if not _is_trivial(where):
            allowed = self._passing([rowid for rowid, _ in found], where, params)
            kept = [hit for hit in found if hit[0] in allowed]
            if len(kept) < k and len(found) == fetch:
                return None
            found = kept
        return found[:k]

    def _knn(self, blob: bytes, k: int, conversation: str | None) -> list[tuple[int, float]]:
        """(rowid, cosine distance) of the k nearest vectors of a partition (of all when None), nearest
        first (ties by rowid); fewer than k only when that is all there is.

        Above COARSE_ABOVE vectors, the nearest COARSE_SHARE of them (at least COARSE_CANDIDATES) by the
        Hamming distance of their sign bits (db.COARSE_TABLE) are re-scored on their float vectors: two
        thirds of the CPU of the exact scan at 100k, and most of its top k (see COARSE_SHARE)."""
        scope, scope_params = ("", ()) if conversation is None else (" AND conversation_id = ?", (conversation,))
        scanned = self._scanned(conversation) if self.has_coarse else 0
        if scanned > COARSE_ABOVE:
            wanted = max(k, COARSE_CANDIDATES, math.ceil(COARSE_SHARE * scanned))
            candidates = [rowid for rowid, in self.conn.execute(
                f"SELECT rowid FROM {db.COARSE_TABLE} WHERE coarse MATCH vec_quantize_binary(?) AND k = ?" + scope,
                (blob, min(wanted, db.VEC_K_MAX), *scope_params))]
            return self._rescored(blob, candidates)[:k]
        found = self.conn.execute("SELECT rowid, distance FROM entries_vec WHERE embedding MATCH ? AND k = ?" + scope,
                                  (blob, k, *scope_params)).fetchall()
        return sorted(found, key=lambda hit: (hit[1], hit[0]))

    def _scanned(self, conversation: str | None) -> int:
        """Vectors a KNN over this partition (all when None) compares."""
        if conversation is None:
            return self.conn.execute("SELECT count(*) FROM entries").fetchone()[0]
        return self._partition_size(conversation)

    def _rescored(self, blob: bytes, rowids: list[int]) -> list[tuple[int, float]]:
        """(rowid, exact cosine distance) of these rows' float vectors to the query's, nearest first."""
        import numpy as np

        vectors = self.vectors(rowids)
        if not vectors:
            return []
        rowids = list(vectors)
        query = np.frombuffer(blob, dtype=np.float32).astype(np.float64)
        matrix = np.stack([vectors[rowid] for rowid in rowids]).astype(np.float64)
        norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(query)
        # A zero vector has no direction: vec0 gives it distance 1 (cosine 0), and so does this.
        cosines = np.divide(matrix @ query, norms, out=np.zeros(len(rowids)), where=norms > 0)
        return sorted(zip(rowids, (1.0 - cosines).tolist(), strict=True), key=lambda hit: (hit[1], hit[0]))

    def _holds_few(self, conversations: list[str]) -> bool:
        """Whether these conversations hold at most a quarter of the index's rows (counted only that far:
        past it, listing their rowids costs more than it saves)."""
        quarter = self.conn.execute("SELECT count(*) FROM entries").fetchone()[0] // 4
        return self.conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM entries WHERE conversation_id IN (SELECT value FROM json_each(?)) "
            "LIMIT ?)", (_ids_json(conversations), quarter + 1)).fetchone()[0] <= quarter

    def _passing(self, rowids: list[int], where: str, params: Sequence[Any]) -> set[int]:
        """The rowids among these that `entries e WHERE <where>` keeps."""
        if not rowids:
            return set()
        return {rowid for rowid, in self.conn.execute(
            f"SELECT e.rowid FROM entries e WHERE e.rowid IN (SELECT value FROM json_each(?)) AND ({where})",
            (_ids_json(rowids), *params))}

    @_guarded
    def lexical(self, query_text: str, k: int, where: str = "1", params: Sequence[Any] = ()) -> list[tuple[int, float]]:
        """The k best rows by BM25 for free text among `entries e WHERE <where>`:
        (rowid, score), higher is better. Empty for a query with no words."""
        match = fts_query(query_text)
        if match is None or k <= 0:
            return []
        # The filter comes first in the SQL text so its `?` placeholders keep their positions.
        rank = _bm25()
        sql = (f"SELECT e.rowid, -{rank} FROM entries e JOIN entries_fts ON entries_fts.rowid = e.rowid "
               f"WHERE ({where or '1'}) AND entries_fts MATCH ? ORDER BY {rank}, e.rowid LIMIT ?")
        return [(rowid, float(score)) for rowid, score in self.conn.execute(sql, (*params, match, int(k)))]

    @_guarded
    def lexical_scopes(self, query_text: str, k: int, where: str, params: Sequence[Any],
                       conversations: Sequence[str] | None) -> list[list[tuple[int, float]]]:
        """`lexical` for the scopes of one search, each walk of the FTS matches done once: one list per
        conversation named (its k best rows among `entries e WHERE <where>`), or for None one list, the
        k best of all conversations under a filter that keeps nearly every row (a search's scope):
        the FTS table alone is asked for a few more than k and only those are checked against the
        filter (joining every match to `entries` costs more than ranking them); a filter that drops
        more falls back to `lexical`."""
        match = fts_query(query_text)
        names = None if conversations is None else list(dict.fromkeys(conversations))
        if match is None or k <= 0:
            return [[] for _ in names or [None]]
        rank = _bm25()
        if names is None:
            fetch = 2 * k + FEW_LEFT_OUT
            found = [(rowid, float(score)) for rowid, score in self.conn.execute(
                f"SELECT rowid, -{rank} FROM entries_fts WHERE entries_fts MATCH ? ORDER BY {rank}, rowid LIMIT ?",
                (match, fetch))]
            kept = self._kept(found, k, fetch, where, params)
            return [self.lexical(query_text, k, where, params) if kept is None else kept]
        # Each conversation's k best in one pass; bm25() cannot be called inside a window function, so
        # the scores are materialised first. Same order as `lexical`: BM25, then rowid.
        # Conversations that hold few of the rows list their rowids first: checking each FTS match
        # against that list costs less than looking it up in `entries` (100k rows, one conversation of
        # 10k: 10 -> 4.6 ms); the unary + keeps SQLite from handing the list to FTS5 as rowid lookups.
        few = self._holds_few(names)
        listed = (" AND +entries_fts.rowid IN (SELECT rowid FROM entries WHERE conversation_id IN "
                  "(SELECT value FROM json_each(?)))") if few else ""
        sql = (f"WITH matched AS MATERIALIZED (SELECT e.rowid AS rowid, e.conversation_id AS conversation, "
               f"-{rank} AS score FROM entries e JOIN entries_fts ON entries_fts.rowid = e.rowid "
               f"WHERE ({where or '1'}) AND e.conversation_id IN (SELECT value FROM json_each(?)) "
               f"AND entries_fts MATCH ?{listed}) "
               "SELECT rowid, conversation, score FROM (SELECT rowid, conversation, score, row_number() OVER "
               "(PARTITION BY conversation ORDER BY score DESC, rowid) AS place FROM matched) "
               "WHERE place <= ? ORDER BY conversation, place")
        names_json = _ids_json(names)
        by_conversation: dict[str, list[tuple[int, float]]] = {name: [] for name in names}
        for rowid, conversation, score in self.conn.execute(
                sql, (*params, names_json, match, *([names_json] if few else []), int(k))):
            by_conversation[conversation].append((rowid, float(score)))
        return [by_conversation[name] for name in names]

    @_guarded
    def rows(self, rowids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """rowid -> the entry's columns (metadata decoded), for the rowids that exist."""
        found = {}
        for rowid, *values in self.conn.execute(
                _SELECT_ROW + " WHERE rowid IN (SELECT value FROM json_each(?))", (_ids_json(rowids),)):
            found[rowid] = _row_dict(rowid, values)
        return found

    @_guarded
    def vectors(self, rowids: Iterable[int]) -> dict[int, np.ndarray]:
        """rowid -> its stored unit vector."""
        return stored_vectors(self.conn, rowids)

    @_guarded
    def by_id(self, memory_id: str) -> dict[str, Any] | None:
        row = self.conn.execute(_SELECT_ROW + " WHERE id = ?", (memory_id,)).fetchone()
        return None if row is None else _row_dict(row[0], row[1:])

    @_guarded
    def count(self, where: str = "1", params: Sequence[Any] = ()) -> int:
        return self.conn.execute(f"SELECT count(*) FROM entries e WHERE {where or '1'}", tuple(params)).fetchone()[0]

    @_guarded
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

    @_guarded
    def vacuum(self) -> None:
        """Merge FTS segments, reclaim free pages and fold the WAL back into the file."""
        self.conn.execute("INSERT INTO entries_fts (entries_fts) VALUES ('optimize')")
        self.conn.execute("VACUUM")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    @_guarded
    def select(self, where: str = "1", params: Sequence[Any] = (), limit: int | None = None,
               newest_first: bool = True) -> list[dict[str, Any]]:
        """The rows of `entries e WHERE <where>` (metadata decoded), ordered by creation time;
        for listings by scope and filter (mem0's get_all, delete_all) without embedding anything."""
        order = "DESC" if newest_first else "ASC"
        sql = f"{_SELECT_ROW} e WHERE {where or '1'} ORDER BY e.created_at {order}, e.rowid {order}"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_row_dict(row[0], row[1:]) for row in self.conn.execute(sql, tuple(params))]


def _bm25() -> str:
    """The FTS rank (lower is better): a turn's context and the date it was written count less than
    its own words."""
    return f"bm25(entries_fts, 1.0, {CONTEXT_WEIGHT:g}, {DATE_WEIGHT:g})"


# -- the lexical rows: an entry's own words, and for a turn its neighbouring turns' (text.CONTEXT_TURNS)
_TURN = f"role IN ({', '.join(repr(r) for r in TURN_ROLES)})"
_BEFORE = (f"SELECT rowid, text FROM entries WHERE conversation_id = ? AND {_TURN} AND (created_at, rowid) < (?, ?) "
           "ORDER BY created_at DESC, rowid DESC LIMIT ?")
_AFTER = (f"SELECT rowid, text FROM entries WHERE conversation_id = ? AND {_TURN} AND (created_at, rowid) > (?, ?) "
          "ORDER BY created_at, rowid LIMIT ?")


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
            conn.execute("INSERT INTO entries_fts (rowid, body, context, date) VALUES (?, ?, ?, ?)",
                         (rowid, normalise(text), normalise(" ".join(t for _, t in context)), date_words(created_at)))


def _row_dict(rowid: int, values: Sequence[Any]) -> dict[str, Any]:
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
