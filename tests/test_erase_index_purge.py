"""An erase purges the index in place (memvault/index/store.py, `IndexStore.purge`), without rewriting the
whole file: no byte of the erased memory is left in any file under .memvault/ (the index, its WAL, the
FTS5 segments, free pages, the vectors' snapshot and log), though the file is never vacuumed. An index
made before `secure_delete` was on (db.SCRUBBED_SINCE unset) is vacuumed by its first erase instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.index import db
from memvault.index import store as store_module
from memvault.vault.format.entry import Entry
from tests.test_erase import open_vault

pytestmark = pytest.mark.timeout(600)

SECRET = "Xyloquartzine-Marrowbell-6613"
# FTS5 keeps terms stemmed, lower-cased and prefix-compressed: the middle of the rare words is what
# any copy of them in a segment would hold.
TERMS = (b"loquartzi", b"arrowbel")


def state_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / ".memvault").rglob("*")) if p.is_file()}


def holding(root: Path, needles) -> list[str]:
    return sorted({f"{name}: {needle[:12]!r}" for name, data in state_bytes(root).items()
                   for needle in needles if needle in data})


@pytest.fixture
def indexed(tmp_path, monkeypatch):
    """A vault whose index holds the secret in a turn (and, as lexical context, in its neighbours), in an
    earlier version of that turn, in a fact drawn from it, and in the vectors' snapshot and its log;
    with many other memories around, so that pages split and free pages exist."""
    monkeypatch.setattr(store_module, "COARSE_ABOVE", 0)  # the vectors' snapshot is written at any size
    root = tmp_path / "vault"
    m = open_vault(root)
    for n in range(60):
        m.add_verbatim(f"Turn {n}: we talked about the weather and the garden, nothing more.", conversation="c",
                       role="user")
    turn = m.add_verbatim(f"My storage unit code is {SECRET}, the blue door.", conversation="c", role="user")
    for n in range(5):
        m.add_verbatim(f"Later turn {n}: the tomatoes are ripening on the balcony.", conversation="c", role="user")
    m.search("weather")  # the index is built
    m.reindex()  # and the snapshot of its vectors written, holding the turn's first vector
    index = m.index()
    assert index.snapshot_path.exists() and db.get_meta(index.conn, db.SCRUBBED_SINCE)
    first = index.vectors([index.by_id(turn.id)["rowid"]])
    m.update(turn.id, f"My storage unit code is {SECRET}, the red door.")  # a second vector, in the log
    fact = m.add_entries([Entry(text=f"The user's storage unit code is {SECRET}.", conversation_id="c",
                                source=turn.id)], "a fact drawn from the turn")[0]
    m.search("storage unit")
    index = m.index()
    vectors = [v.tobytes() for v in (*first.values(), *index.vectors([index.by_id(i)["rowid"]
                                                                       for i in (turn.id, fact.id)]).values())]
    assert len(vectors) == 3
    needles = (SECRET.encode(), *TERMS, *vectors)
    assert holding(root, needles), "the index holds the secret before the erase"
    yield root, m, turn, needles
    m.close()


def test_an_erase_leaves_no_byte_under_memvault_without_vacuuming(indexed):
    root, m, turn, needles = indexed

    statements = []
    m.index().conn.exec_trace = lambda _cursor, sql, _bindings: statements.append(sql) or True
    result = m.erase(ids=[turn.id])
    assert sorted(result.roles.items()) == [("memory", 1), ("user", 1)]
    assert holding(root, needles) == []
    assert any("optimize" in sql for sql in statements) and not any("VACUUM" in sql for sql in statements)
    assert m.search("tomatoes balcony")[0].text.startswith("Later turn")
    assert not [h for h in m.search("storage unit code") if SECRET in h.text]


def test_an_index_made_before_secure_delete_is_vacuumed_by_its_first_erase(indexed):
    root, m, turn, needles = indexed
    conn = m.index().conn
    conn.execute("PRAGMA secure_delete=OFF")  # as before: a dropped table's pages keep their bytes
    with db.immediate(conn):
        conn.execute("CREATE TABLE old_rows AS WITH copies(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM copies "
                     "WHERE n < 50) SELECT text FROM entries, copies")
        conn.execute("DROP TABLE old_rows")
        conn.execute("DELETE FROM meta WHERE key = ?", (db.SCRUBBED_SINCE,))
    conn.execute("PRAGMA secure_delete=ON")
    m.erase(ids=[turn.id])
    assert holding(root, needles) == []
    assert db.get_meta(m.index().conn, db.SCRUBBED_SINCE) is not None
