"""The index's SQLite connection and its migrations, on blank, partial and foreign databases."""

from __future__ import annotations

import sys

import pytest

from memvault.errors import SearchIndexError
from memvault.index import db


def tables(conn):
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_blank_database_migrates_in_order_and_records_it(tmp_path):
    conn = db.connect(tmp_path / "index.sqlite")
    assert db.migrate(conn) == ["m001_entries", "m002_fts", "m003_timeline", "m004_graph",
                                 "m005_coarse_vectors", "m006_vector_log", "m007_relation_kinds"]
    assert db.applied_migrations(conn) == [m.__name__ for m in db.MIGRATIONS]
    assert {"entries", "meta", "migrations", "entries_fts"} <= tables(conn)
    assert db.get_meta(conn, "schema_version") == str(db.SCHEMA_VERSION)
    db.check_schema(conn)
    assert db.migrate(conn) == []  # idempotent


def test_partly_migrated_database_gets_only_the_rest(tmp_path):
    conn = db.connect(tmp_path / "index.sqlite")
    conn.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    db.m001_entries(conn)
    conn.execute("INSERT INTO migrations VALUES ('m001_entries', 0)")
    assert db.migrate(conn) == ["m002_fts", "m003_timeline", "m004_graph", "m005_coarse_vectors", "m006_vector_log",
                                "m007_relation_kinds"]
    db.check_schema(conn)


def test_entries_table_has_the_columns_filters_compile_against(tmp_path):
    conn = db.connect(tmp_path / "index.sqlite")
    db.migrate(conn)
    columns = {row[1]: (row[2], row[3]) for row in conn.execute("PRAGMA table_info(entries)")}
    for name in ("id", "path", "file_hash", "text_hash", "role", "conversation_id", "metadata", "text"):
        assert columns[name][1] == 1, f"{name} should be NOT NULL"
    assert columns["created_at"][0] == "REAL" and columns["rowid"][0] == "INTEGER"
    for name in ("user_id", "agent_id", "run_id", "source"):
        assert columns[name][1] == 0


@pytest.mark.parametrize("setup, message", [
    ("CREATE TABLE notes (x)", "not memvault's"),
    ("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL);"
     " INSERT INTO migrations VALUES ('m999_future', 0)", "unknown schema"),
])
def test_foreign_or_newer_database_is_refused(tmp_path, setup, message):
    conn = db.connect(tmp_path / "index.sqlite")
    conn.execute(setup)
    with pytest.raises(db.IncompatibleIndexError, match=message):
        db.migrate(conn)


def test_connection_uses_wal_busy_timeout_and_sqlite_vec(tmp_path):
    conn = db.connect(tmp_path / "index.sqlite")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == db.BUSY_TIMEOUT_MS
    assert conn.execute("SELECT vec_version()").fetchone()[0].startswith("v0.1.")
    db.migrate(conn)
    db.create_vec_table(conn, 3)
    conn.execute("INSERT INTO entries_vec (rowid, embedding, conversation_id) VALUES (1, ?, 'c')",
                 (b"\x00\x00\x80\x3f" + b"\x00" * 8,))
    assert conn.execute("SELECT count(*) FROM entries_vec").fetchone()[0] == 1


def test_wal_lets_a_reader_work_while_a_writer_holds_a_transaction(tmp_path):
    """What WAL buys over a rollback journal: a writer whose transaction outgrows its cache (a cron
    reindex batch) does not lock readers out, and it commits while a reader is mid-read. Neither side
    may need the busy timeout: without WAL both steps fail at once with BusyError."""
    path = tmp_path / "index.sqlite"
    writer, reader = db.connect(path), db.connect(path)
    db.migrate(writer)
    for conn in (writer, reader):
        conn.setbusytimeout(0)
    before = reader.execute("SELECT count(*) FROM meta").fetchone()[0]
    writer.execute("PRAGMA cache_size=10")  # pages: the batch below spills to the file mid-transaction
    writer.execute("BEGIN IMMEDIATE")
    writer.executemany("INSERT INTO meta VALUES (?, ?)", [(f"k{i}", "x" * 500) for i in range(2000)])
    assert reader.execute("SELECT count(*) FROM meta").fetchone()[0] == before
    writer.execute("COMMIT")

    reader.execute("BEGIN")
    assert reader.execute("SELECT count(*) FROM meta WHERE key = 'new'").fetchone()[0] == 0
    writer.execute("INSERT INTO meta VALUES ('new', 'v')")  # commits while the reader's snapshot is open
    assert reader.execute("SELECT count(*) FROM meta WHERE key = 'new'").fetchone()[0] == 0  # its snapshot
    reader.execute("COMMIT")
    assert reader.execute("SELECT value FROM meta WHERE key = 'new'").fetchone()[0] == "v"


def test_missing_sqlite_vec_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "sqlite_vec", None)  # import now raises ImportError
    with pytest.raises(SearchIndexError, match="pip install sqlite-vec"):
        db.connect(tmp_path / "index.sqlite")
