"""The SQLite connection of the index: apsw with sqlite-vec loaded, WAL, and ordered migrations.

Why apsw: the stdlib `sqlite3` of many Pythons (this one included) is built without
`enable_load_extension`, so it cannot load sqlite-vec; apsw ships wheels with a recent SQLite for
every platform and always can. Migrations are named functions applied in order and recorded in
the database, so a blank file and an old file reach the same schema by the same path.
"""

from __future__ import annotations

import functools
import json
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memvault.errors import SearchIndexError
from memvault.index import ranking
from memvault.index.text import FTS_TOKENIZER

BUSY_TIMEOUT_MS = 15_000  # a cron reindex may hold the write lock for a batch; wait rather than fail
CACHE_KIB = 32 * 1024
# vec0 pre-allocates one chunk of chunk_size vectors per partition (conversation): the default 1024
# makes a 384-dim vault of 1000 small conversations 1.6 GB; 32 keeps it near the data's own size
# and scans no slower (measured: 20k vectors, 13 ms per full KNN).
VEC_CHUNK_SIZE = 32
VEC_K_MAX = 4096  # sqlite-vec refuses larger k
# Beside the float vectors, each one's sign bits (`bit[dims]`, sqlite-vec's vec_quantize_binary): 48
# bytes instead of 1,536 for MiniLM, compared by Hamming distance, ~2.5x cheaper to scan (measured:
# 100k vectors, 20 ms against 53 ms). Search uses them to pick candidates for an exact re-scoring
# when a scan would cover many vectors (queries.COARSE_ABOVE). Only for a dims that fills whole bytes.
COARSE_TABLE = "entries_coarse"
# Vectors written or deleted since the snapshot file of the vectors (index.snapshot) was written, with the
# meta keys that say whether it is kept (on once a snapshot exists), up to which seq it was pruned, and
# which vector table it belongs to.
VECTOR_LOG = "vector_log"
VECTOR_LOG_ON = "vector_log"
VECTOR_LOG_PRUNED = "vector_log_pruned"
VECTOR_EPOCH = "vector_epoch"
# Set in a file that has had `PRAGMA secure_delete` on since it was made blank (every connection turns it
# on): no page or free space of it holds a byte of a row deleted since, so an erase need not VACUUM it.
# A file made before has free pages of old rows: its first erase VACUUMs it, then sets this.
SCRUBBED_SINCE = "secure_delete_since"

ENTRY_COLUMNS = (
    "id", "path", "file_hash", "text_hash", "role", "conversation_id", "created_at", "updated_at",
    "user_id", "agent_id", "run_id", "metadata", "source", "text", "mtime_ns", "size", "triple",
)


def connect(path: Path | str, readonly: bool = False) -> Any:
    """An apsw connection with sqlite-vec loaded and the pragmas the index relies on (`readonly`: one
    that can never change the file, for reading another index's vectors)."""
    apsw, sqlite_vec = _modules()
    if readonly:
        conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    else:
        conn = apsw.Connection(str(path))
    conn.setbusytimeout(BUSY_TIMEOUT_MS)
    try:
        conn.enable_load_extension(True)
        conn.load_extension(sqlite_vec.loadable_path())
        conn.enable_load_extension(False)
    except apsw.ExtensionLoadingError as exc:
        conn.close()
        raise SearchIndexError(
            f"cannot load sqlite-vec ({exc}): reinstall it with `pip install sqlite-vec==0.1.9`") from None
    ranking.register(conn)
    try:
        if str(path) != ":memory:" and not readonly:
            conn.execute("PRAGMA journal_mode=WAL")
            # Deleted rows and freed pages are overwritten with zeros (in the WAL, then the file at a
            # checkpoint): an erased text leaves no bytes in free space (store.IndexStore.purge).
            conn.execute("PRAGMA secure_delete=ON")
        # NORMAL is safe in WAL mode, and the index can always be rebuilt from the files.
        conn.execute(f"PRAGMA synchronous=NORMAL; PRAGMA cache_size=-{CACHE_KIB}; PRAGMA temp_store=MEMORY")
    except apsw.Error:
        conn.close()  # not a database (garbage bytes): the caller decides what to do
        raise
    return conn


def _modules() -> tuple[Any, Any]:
    try:
        import apsw
    except ImportError:
        raise SearchIndexError("the index needs apsw: `pip install apsw`") from None
    try:
        import sqlite_vec
    except ImportError:
        raise SearchIndexError("the index needs sqlite-vec: `pip install sqlite-vec==0.1.9`") from None
    return apsw, sqlite_vec


# -- migrations ------------------------------------------------------------------------------------
def m001_entries(conn: Any) -> None:
    conn.execute(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE entries (
          rowid INTEGER PRIMARY KEY,
          id TEXT UNIQUE NOT NULL, path TEXT UNIQUE NOT NULL,
          file_hash TEXT NOT NULL,
          text_hash TEXT NOT NULL,
          role TEXT NOT NULL, conversation_id TEXT NOT NULL,
          created_at REAL NOT NULL, updated_at REAL NOT NULL,
          user_id TEXT, agent_id TEXT, run_id TEXT,
          metadata TEXT NOT NULL DEFAULT '{}',
          source TEXT, text TEXT NOT NULL,
          mtime_ns INTEGER NOT NULL DEFAULT 0,  -- stat seen when hashed: lets sync skip hashing
          size INTEGER NOT NULL DEFAULT -1
        );
        CREATE INDEX entries_conversation ON entries (conversation_id, role);
        CREATE INDEX entries_user ON entries (user_id) WHERE user_id IS NOT NULL;
        CREATE INDEX entries_agent ON entries (agent_id) WHERE agent_id IS NOT NULL;
        CREATE INDEX entries_run ON entries (run_id) WHERE run_id IS NOT NULL;
        CREATE INDEX entries_created ON entries (created_at);
        """
    )


def m002_fts(conn: Any) -> None:
    create_fts_table(conn)


def m003_timeline(conn: Any) -> None:
    # A turn's neighbours in its conversation (its lexical context, see text.CONTEXT_TURNS) are
    # found by time: without this index each lookup would sort the whole conversation.
    conn.execute("CREATE INDEX IF NOT EXISTS entries_timeline ON entries (conversation_id, created_at)")


def m004_graph(conn: Any) -> None:
    # Facts' triples (a JSON column) and the relations derived from them (index/graph.py). Rows
    # indexed before have no triple: their file hashes are forgotten so the next sync reads every
    # file again (texts are unchanged, so nothing is re-embedded) and the build mark makes it happen.
    from memvault.index import graph

    conn.execute("ALTER TABLE entries ADD COLUMN triple TEXT")
    graph.create_tables(conn)
    if conn.execute("SELECT count(*) FROM entries").fetchone()[0]:
        conn.execute("UPDATE entries SET file_hash = '', mtime_ns = 0")
        set_meta(conn, "build_incomplete", "graph added: every file is read again")


def create_fts_table(conn: Any) -> None:
    """(Re)create the FTS5 table: `body` is the entry's own text, `context` its neighbouring turns',
    `date` the day it was written as words (text.date_words).
    Contentless: the normalised text lives only in the FTS index (entries.text keeps the original);
    contentless_delete lets a row be deleted by rowid alone."""
    conn.execute("DROP TABLE IF EXISTS entries_fts")
    conn.execute(
        f"CREATE VIRTUAL TABLE entries_fts USING fts5(body, context, date, content='', contentless_delete=1, "
        f"tokenize='{FTS_TOKENIZER}')"
    )


def m005_coarse_vectors(conn: Any) -> None:
    # Indexes built before the coarse vectors: derive them from the stored float vectors (no
    # re-embedding, nothing read from the files). A blank index gets them with its vector table.
    dims = get_meta(conn, "dims")
    if dims is not None and table_exists(conn, "entries_vec"):
        create_coarse_table(conn, int(dims))
        if table_exists(conn, COARSE_TABLE):
            conn.execute(f"INSERT INTO {COARSE_TABLE} (rowid, coarse, conversation_id) "
                         "SELECT rowid, vec_quantize_binary(embedding), conversation_id FROM entries_vec")


def m006_vector_log(conn: Any) -> None:
    create_vector_log(conn)


def m007_relation_kinds(conn: Any) -> None:
    # The graph finds its alias edges by kind (graph.GraphQuery) without walking a conversation's entries.
    conn.execute("CREATE INDEX IF NOT EXISTS relations_kind ON relations (relationship)")


MIGRATIONS: tuple[Callable[[Any], None], ...] = (m001_entries, m002_fts, m003_timeline, m004_graph,
                                                 m005_coarse_vectors, m006_vector_log, m007_relation_kinds)
SCHEMA_VERSION = len(MIGRATIONS)


def applied_migrations(conn: Any) -> list[str]:
    if not table_exists(conn, "migrations"):
        return []
    return [row[0] for row in conn.execute("SELECT name FROM migrations ORDER BY rowid")]


class IncompatibleIndexError(SearchIndexError):
    """The file is a database, but not an index this code can use (the caller rebuilds it)."""


def migrate(conn: Any) -> list[str]:
    """Apply the migrations this database lacks, in order, recorded in `migrations`; returns their names.

    Raises IncompatibleIndexError if the file holds tables of something else or of a newer memvault.
    """
    known = [m.__name__ for m in MIGRATIONS]
    if applied_migrations(conn) == known:
        return []  # the common case: no write lock taken
    # IMMEDIATE: two processes opening a blank index at once must not both create the tables.
    with immediate(conn):
        done = applied_migrations(conn)
        if done != known[: len(done)]:
            raise IncompatibleIndexError(f"index has an unknown schema (migrations {done})")
        if not done and conn.execute("SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchone()[0]:
            raise IncompatibleIndexError("index file holds tables that are not memvault's")
        conn.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
        blank = not done
        for migration in MIGRATIONS[len(done):]:
            migration(conn)
            conn.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (migration.__name__, time.time()))
        set_meta(conn, "schema_version", str(SCHEMA_VERSION))
        if blank:
            set_meta(conn, SCRUBBED_SINCE, str(time.time()))
    return known[len(done):]


@contextmanager
def immediate(conn: Any) -> Iterator[None]:
    """A write transaction that takes the lock up front (waiting up to the busy timeout)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def check_schema(conn: Any) -> None:
    """Raise SearchIndexError unless the tables have the columns this code reads and writes."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(entries)")}
    missing = [c for c in ("rowid", *ENTRY_COLUMNS) if c not in columns]
    if missing:
        raise IncompatibleIndexError(f"index table 'entries' lacks columns {', '.join(missing)}")
    if not table_exists(conn, "entries_fts"):
        raise IncompatibleIndexError("index lacks its full-text table")


def table_exists(conn: Any, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def newest_rowid(conn: Any) -> int:
    """The largest rowid of `entries` (0 when empty): an upper bound of its rows, read from the b-tree's end."""
    return conn.execute("SELECT coalesce(max(rowid), 0) FROM entries").fetchone()[0]


def get_meta(conn: Any, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else row[0]


def set_meta(conn: Any, key: str, value: str) -> None:
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))


def create_vec_table(conn: Any, dims: int) -> None:
    """(Re)create the vec0 table for `dims`-long vectors, partitioned by conversation.

    The partition key makes the usual scoped search (one conversation plus `global`) scan only
    those conversations' chunks instead of the whole vault.
    """
    conn.execute("DROP TABLE IF EXISTS entries_vec")
    conn.execute(
        f"CREATE VIRTUAL TABLE entries_vec USING vec0(embedding float[{int(dims)}] distance_metric=cosine, "
        f"conversation_id text partition key, chunk_size={VEC_CHUNK_SIZE})"
    )
    create_coarse_table(conn, dims)
    create_vector_log(conn)


def create_vector_log(conn: Any) -> None:
    """(Re)create VECTOR_LOG, empty and off, under a new VECTOR_EPOCH: a snapshot of the vectors
    (index.snapshot) written before is then of another table and is not used."""
    conn.execute(f"DROP TABLE IF EXISTS {VECTOR_LOG}")
    conn.execute(f"CREATE TABLE {VECTOR_LOG} (seq INTEGER PRIMARY KEY AUTOINCREMENT, rowid INTEGER NOT NULL, "
                 "conversation_id TEXT, embedding BLOB)")
    conn.execute("DELETE FROM meta WHERE key IN (?, ?)", (VECTOR_LOG_ON, VECTOR_LOG_PRUNED))
    set_meta(conn, VECTOR_EPOCH, uuid.uuid4().hex)


def log_vector(conn: Any, rowid: int, conversation: str | None, blob: bytes | None) -> None:
    """Record a vector written (blob) or deleted (None) for the snapshot's readers, once one is written."""
    if get_meta(conn, VECTOR_LOG_ON) is not None:
        conn.execute(f"INSERT INTO {VECTOR_LOG} (rowid, conversation_id, embedding) VALUES (?, ?, ?)",
                     (rowid, conversation, blob))


def drop_superseded_vectors(conn: Any) -> None:
    """Drop each logged vector a later log row of the same row replaces (a reader keeps only the newest):
    no old vector of a row rewritten or removed stays in the log."""
    conn.execute(f"DELETE FROM {VECTOR_LOG} WHERE embedding IS NOT NULL AND seq NOT IN "
                 f"(SELECT max(seq) FROM {VECTOR_LOG} GROUP BY rowid)")


def create_coarse_table(conn: Any, dims: int) -> None:
    """(Re)create the table of the vectors' sign bits (COARSE_TABLE), partitioned as the vectors are;
    none for a `dims` that is not a multiple of 8 (search then always scans the float vectors)."""
    conn.execute(f"DROP TABLE IF EXISTS {COARSE_TABLE}")
    if int(dims) % 8 == 0:
        conn.execute(f"CREATE VIRTUAL TABLE {COARSE_TABLE} USING vec0(coarse bit[{int(dims)}], "
                     f"conversation_id text partition key, chunk_size={VEC_CHUNK_SIZE})")


def guarded(method):
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


def ids_json(ids: Iterable[int | str]) -> str:
    """A list of ids as JSON, for `... IN (SELECT value FROM json_each(?))`."""
    return json.dumps(list(ids))
