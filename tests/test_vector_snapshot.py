"""The vectors' snapshot file (index.snapshot) and the bounded lexical walk: what makes a search over a
million memories cheap gives what the exact search gives, follows every write at once, and never
outlives what it was made from.

Real sqlite-vec and FTS5 indexes; vectors are clustered as a real model's are (test_search_speed)."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from test_search_speed import DIMS, add, exact, fill, traced, unit

from memvault.index import db, ranking
from memvault.index import queries as queries_module
from memvault.index import snapshot as snapshot_module
from memvault.index import store as store_module
from memvault.index.rows import IndexRow
from memvault.index.store import IndexStore
from memvault.index.text import fts_expression, query_terms
from memvault.vault.format.entry import Entry

SCOPE = "e.role <> 'summary'"


@pytest.fixture
def folder(tmp_path):
    return tmp_path / ".memvault"


@pytest.fixture
def index(folder):
    with IndexStore.open(folder, "test:64", DIMS) as store:
        yield store


@pytest.fixture
def coarse(monkeypatch):
    """Every scan is a coarse one, and re-scores every vector: the snapshot's answer must be exact."""
    for module in (queries_module, store_module):
        monkeypatch.setattr(module, "COARSE_ABOVE", 0)
    monkeypatch.setattr(queries_module, "COARSE_SHARE", 1.0)


def queries_near(centres, count=6, seed=5):
    rng = np.random.default_rng(seed)
    return [unit(centres[i] + rng.normal(scale=0.5 / np.sqrt(DIMS), size=DIMS)) for i in range(count)]


def snapshot_used(index, call):
    """call()'s result, checking that no KNN of sqlite-vec ran for it."""
    result, sql = traced(index, call)
    assert not [s for s in sql if "MATCH" in s and ("entries_vec" in s or db.COARSE_TABLE in s)]
    return result


def test_the_snapshot_gives_the_exact_nearest_of_a_conversation_and_of_all(folder, coarse, monkeypatch):
    monkeypatch.setattr(snapshot_module, "READ_CHUNK", 37)  # read and written in many pieces
    with IndexStore.open(folder, "test:64", DIMS) as index:
        vectors, centres = fill(index)
        assert not index.snapshot_path.exists()
        index.refresh_snapshot()
        assert index.snapshot_path.exists()
        for query in queries_near(centres):
            for conversation in ("c1", "global"):
                where = f"({SCOPE}) AND e.conversation_id = ?"
                hits = snapshot_used(index, lambda: index.nearest(query, 12, where, (conversation,), conversation))
                assert [r for r, _ in hits] == exact(index, vectors, query, 12, where, (conversation,))
            hits = snapshot_used(index, lambda: index.nearest(query, 12, SCOPE))
            assert [r for r, _ in hits] == exact(index, vectors, query, 12, SCOPE)
            for rowid, similarity in hits:
                assert similarity == pytest.approx(float(vectors[rowid] @ query), abs=1e-6)


def test_with_a_small_share_the_sign_bits_still_find_most_of_the_exact_top_10(folder, coarse, monkeypatch):
    monkeypatch.setattr(queries_module, "COARSE_SHARE", 0.1)
    monkeypatch.setattr(queries_module, "COARSE_CANDIDATES", 0)
    with IndexStore.open(folder, "test:64", DIMS) as index:
        vectors, centres = fill(index, n=2000, topics=40)
        index.refresh_snapshot()
        found = wanted = 0
        for query in queries_near(centres, count=20):
            hits = snapshot_used(index, lambda: index.nearest(query, 10))
            found += len({r for r, _ in hits} & set(exact(index, vectors, query, 10, "1")))
            wanted += 10
        assert found / wanted >= 0.9


def test_writes_after_the_snapshot_are_seen_at_once_by_this_reader_and_another(folder, coarse):
    with IndexStore.open(folder, "test:64", DIMS) as index, IndexStore.open(folder, "test:64", DIMS) as other:
        vectors, centres = fill(index)
        index.refresh_snapshot()
        query = queries_near(centres, 1)[0]
        assert [r for r, _ in other.nearest(query, 5)] == exact(index, vectors, query, 5, "1")
        nearest = exact(index, vectors, query, 3, "1")
        # A new row on the query itself, the nearest row moved far away, the second removed.
        vectors[add(index, "new", "c2", query)] = query
        moved = index.conn.execute("SELECT id FROM entries WHERE rowid = ?", (nearest[0],)).fetchone()[0]
        row = index.conn.execute("SELECT text, conversation_id FROM entries WHERE rowid = ?", (nearest[0],)).fetchone()
        away = unit(-query)
        entry = Entry(id=moved, text=row[0], conversation_id=row[1])
        moved_row = IndexRow.from_entry(entry, f"entries/{row[1]}/facts/{moved}.md", "h")
        assert index.upsert([moved_row], [away]) == [nearest[0]]
        vectors[nearest[0]] = away
        gone = index.conn.execute("SELECT id FROM entries WHERE rowid = ?", (nearest[1],)).fetchone()[0]
        assert index.remove([gone]) == 1
        del vectors[nearest[1]]
        for reader in (index, other):
            hits = snapshot_used(reader, lambda reader=reader: reader.nearest(query, 8))
            assert [r for r, _ in hits] == exact(index, vectors, query, 8, "1")
            assert nearest[0] not in [r for r, _ in hits] and nearest[1] not in [r for r, _ in hits]
            last = snapshot_used(reader, lambda reader=reader: reader.nearest(-query, 1))
            assert [r for r, _ in last] == [nearest[0]]
            # The stored vectors too come from the snapshot and the log: sqlite-vec is asked only for the two
            # rows that have none (one removed, one never there).
            asked = [*nearest[:3], max(vectors), 10**9]
            found, sql = traced(reader, lambda reader=reader, asked=asked: reader.vectors(asked))
            assert len([s for s in sql if "entries_vec" in s]) == 2
            assert found.keys() == {nearest[0], nearest[2], max(vectors)}
            for rowid, vector in found.items():
                assert np.array_equal(vector, vectors[rowid])


def test_a_sync_rewrites_the_snapshot_once_enough_changed_and_prunes_the_log(folder, coarse, monkeypatch):
    monkeypatch.setattr(store_module, "SNAPSHOT_REWRITE_MIN", 5)
    with IndexStore.open(folder, "test:64", DIMS) as index, IndexStore.open(folder, "test:64", DIMS) as other:
        vectors, centres = fill(index, n=200)
        index.refresh_snapshot()
        query = queries_near(centres, 1)[0]
        other.nearest(query, 3)  # reads the first file
        first = other.snapshot.seq
        rng = np.random.default_rng(8)
        for i in range(4):
            vector = unit(rng.normal(size=DIMS))
            vectors[add(index, f"later {i}", "c1", vector)] = vector
        log = f"SELECT count(*) FROM {db.VECTOR_LOG}"
        index.refresh_snapshot()  # 4 changes: not yet
        assert index.conn.execute(log).fetchone()[0] == 4
        for i in range(4):
            vector = unit(rng.normal(size=DIMS))
            vectors[add(index, f"more {i}", "c2", vector)] = vector
        index.refresh_snapshot()
        assert index.conn.execute(log).fetchone()[0] == 0
        assert int(db.get_meta(index.conn, db.VECTOR_LOG_PRUNED)) > first
        # The other reader's file is older than the pruned log: it opens the new one.
        assert [r for r, _ in other.nearest(query, 10)] == exact(index, vectors, query, 10, "1")
        assert other.snapshot.seq > first and not other.snapshot.changed


def test_nothing_is_logged_until_a_snapshot_exists(folder):
    with IndexStore.open(folder, "test:64", DIMS) as index:
        fill(index, n=100)
        assert index.conn.execute(f"SELECT count(*) FROM {db.VECTOR_LOG}").fetchone()[0] == 0
        index.refresh_snapshot()  # 100 rows: too few for a snapshot
        assert not index.snapshot_path.exists() and index.current_snapshot() is None


def test_a_rebuilt_vector_table_leaves_the_old_file_unused(folder, coarse):
    with IndexStore.open(folder, "test:64", DIMS) as index, IndexStore.open(folder, "test:64", DIMS) as other:
        old, centres = fill(index)
        index.refresh_snapshot()
        query = queries_near(centres, 1)[0]
        assert other.nearest(query, 5) and other.snapshot is not None
        index.clear()
        assert index.current_snapshot() is None  # another vector table now
        assert index.nearest(query, 5) == []
        vectors, _ = fill(index, n=50, seed=9)
        assert [r for r, _ in index.nearest(query, 5)] == exact(index, vectors, query, 5, "1")
        # Rebuilt and snapshotted again: a reader holding the first file (its log seq now looks current,
        # the log began again) opens the new one.
        index.refresh_snapshot()
        assert [r for r, _ in snapshot_used(other, lambda: other.nearest(query, 5))] == exact(
            index, vectors, query, 5, "1")


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty"])
def test_a_damaged_snapshot_is_ignored_and_written_again(folder, coarse, damage):
    with IndexStore.open(folder, "test:64", DIMS) as index:
        vectors, centres = fill(index)
        index.refresh_snapshot()
        data = index.snapshot_path.read_bytes()
        index.snapshot_path.write_bytes({"truncated": data[: len(data) // 2], "garbage": b"\x00\xff" * 999,
                                         "empty": b""}[damage])
    with IndexStore.open(folder, "test:64", DIMS) as index:
        query = queries_near(centres, 1)[0]
        assert [r for r, _ in index.nearest(query, 7)] == exact(index, vectors, query, 7, "1")
        assert index.snapshot is None
        index.refresh_snapshot()
        assert index.snapshot is not None
        assert [r for r, _ in snapshot_used(index, lambda: index.nearest(query, 7))] == exact(
            index, vectors, query, 7, "1")


def test_vacuum_leaves_no_vector_of_a_removed_row_in_the_file_or_the_log(folder, coarse, monkeypatch):
    with IndexStore.open(folder, "test:64", DIMS) as index:
        fill(index, n=100)
        index.refresh_snapshot()
        marked = np.full(DIMS, 0.125, dtype=np.float32)  # its bytes are easy to find
        rowid = add(index, "to be erased", "c1", marked)
        memory_id = index.conn.execute("SELECT id FROM entries WHERE rowid = ?", (rowid,)).fetchone()[0]
        index.vacuum()  # nothing removed since the file: it stays as it is
        assert marked.tobytes() not in index.snapshot_path.read_bytes()
        with monkeypatch.context() as every_change:  # the file rewritten at once, with the marked vector
            every_change.setattr(store_module, "SNAPSHOT_REWRITE_MIN", 0)
            every_change.setattr(store_module, "SNAPSHOT_REWRITE_SHARE", 0)
            index.refresh_snapshot()
        assert marked.tobytes() in index.snapshot_path.read_bytes()
        add(index, "logged after the file", "c1", marked * 2)
        index.remove([memory_id])
        index.vacuum()
        assert marked.tobytes() not in index.snapshot_path.read_bytes()
        assert index.conn.execute(f"SELECT count(*) FROM {db.VECTOR_LOG}").fetchone()[0] == 0


def test_an_index_from_before_the_log_gets_it_by_migration_without_a_rebuild(folder, coarse):
    with IndexStore.open(folder, "test:64", DIMS) as old:
        vectors, centres = fill(old, n=100)
        # As memvault wrote it before migration m006: no log, five migrations recorded (and not the one after).
        old.conn.execute(f"DROP TABLE {db.VECTOR_LOG}")
        old.conn.execute("DELETE FROM migrations WHERE name IN ('m006_vector_log', 'm007_relation_kinds')")
        old.conn.execute("DELETE FROM meta WHERE key = ?", (db.VECTOR_EPOCH,))
    with IndexStore.open(folder, "test:64", DIMS) as migrated:
        assert not migrated.rebuilt
        migrated.refresh_snapshot()
        query = queries_near(centres, 1)[0]
        assert [r for r, _ in snapshot_used(migrated, lambda: migrated.nearest(query, 6))] == exact(
            migrated, vectors, query, 6, "1")


# -- the lexical walk ------------------------------------------------------------------------------------

def lexical_index(index, rows):
    """(rowid of each text) in order: later rows get higher rowids, as entries indexed later do."""
    rng = np.random.default_rng(4)
    return [add(index, text, "c1", unit(rng.normal(size=DIMS)), minute=i) for i, text in enumerate(rows)]


@pytest.fixture
def bounded(monkeypatch):
    """A lexical walk bounded to 20 matches, in an index of more than 100 rows."""
    monkeypatch.setattr(queries_module, "BOUNDED_ABOVE", 100)
    monkeypatch.setattr(queries_module, "MATCH_BUDGET", 20)


def test_a_rare_word_is_ranked_over_every_row_when_common_words_flood_the_index(index, bounded):
    rowids = lexical_index(index, ["kyoto tea in spring", *[f"tea and biscuits {i}" for i in range(200)]])
    found, sql = traced(index, lambda: index.lexical_scopes("kyoto tea", 5, "1", (), None))
    assert found[0][0][0] == rowids[0]  # the oldest row, the only one with the rare word
    ranked = [s for s in sql if "bm25" in s and "ORDER BY" in s]
    assert ranked and all("OFFSET" not in s for s in sql)  # no window: the rare word alone is walked
    assert [r for r, _ in index.lexical_scopes("kyoto tea", 5, "1", (), ["c1"])[0]][:1] == [rowids[0]]


def test_when_every_word_is_common_only_the_newest_matches_are_ranked(index, bounded, monkeypatch):
    # The best-ranked rows by BM25 (the word twice in a short text) are the oldest.
    rowids = lexical_index(index, [*(f"tea tea {i}" for i in range(30)),
                                   *(f"tea with a long story about nothing much {i}" for i in range(200))])
    found = index.lexical_scopes("tea", 10, "1", (), None)[0]
    assert len(found) == 10 and all(rowid > rowids[-22] for rowid, _ in found)
    monkeypatch.setattr(queries_module, "MATCH_BUDGET", 10_000)  # walked whole: the short ones win
    assert {r for r, _ in index.lexical_scopes("tea", 10, "1", (), None)[0]} <= set(rowids[:30])


def test_a_small_index_is_walked_whole_as_before(index, monkeypatch):
    monkeypatch.setattr(queries_module, "MATCH_BUDGET", 20)  # 80 matches of "tea", but 80 rows: not bounded
    rowids = lexical_index(index, [*(f"tea tea {i}" for i in range(30)), *(f"tea and cake {i}" for i in range(50))])
    found, sql = traced(index, lambda: index.lexical_scopes("tea cake", 10, "1", (), None))
    assert not [s for s in sql if "LIMIT ?)" in s and "count(*)" in s]  # nothing counted
    assert found[0] == index.lexical("tea cake", 10, "1") and {r for r, _ in found[0]} <= set(rowids)
    assert index.lexical_of("tea cake", rowids[:3]).keys() == set(rowids[:3])


# -- through the facade: a vault, the real model --------------------------------------------------------

def test_a_vault_reindexed_searches_through_its_snapshot_and_an_erase_takes_the_vector_along(tmp_path, coarse):
    from memvault import settings as settings_module
    from memvault.core import Memvault

    texts = ["Carol's favourite museum is the Gulbenkian in Lisbon.", "Dan drinks jasmine tea every afternoon.",
             "Erin rides a red bicycle to work.", "The user's sister lives in Porto.",
             "The user plays the cello on Sundays.", "Bob's dog Rex is afraid of thunder."]
    memvault = Memvault.open(settings_module.load(None, {"vault.path": str(tmp_path / "v")}), create=True)
    try:
        ids = [memvault.add_verbatim(text, conversation="notes", role="memory").id for text in texts]
        before = {q: [h.id for h in memvault.search(q, "notes")] for q in ("tea", "who rides to work", "music")}
        memvault.reindex()
        index = memvault.index()
        assert index.snapshot_path.exists()
        for query, expected in before.items():
            found, sql = traced(index, lambda q=query: [h.id for h in memvault.search(q, "notes")])
            assert found == expected
            assert not [s for s in sql if "MATCH" in s and "entries_vec" in s]
        tea = index.vectors([index.by_id(ids[1])["rowid"]]).popitem()[1].tobytes()
        assert tea in index.snapshot_path.read_bytes()
        memvault.erase([ids[1]])
        assert tea not in index.snapshot_path.read_bytes()
        assert ids[1] not in [h.id for h in memvault.search("tea", "notes")]
    finally:
        memvault.close()


def test_a_writer_killed_mid_file_leaves_a_file_the_next_writer_removes(folder, coarse):
    import subprocess
    import sys

    with IndexStore.open(folder, "test:64", DIMS) as index:
        vectors, centres = fill(index, n=100)
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True).stdout.strip()
        leftover = index.snapshot_path.with_name(f".{index.snapshot_path.name}.{dead}-snapshot.tmp")
        alive = index.snapshot_path.with_name(f".{index.snapshot_path.name}.{os.getpid()}-other.tmp")
        leftover.write_bytes(b"half a file")
        alive.write_bytes(b"another writer at work")
        index.refresh_snapshot()
        assert not leftover.exists() and alive.exists()
        assert index.snapshot is not None and sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp")) == [
            alive.name]
        query = queries_near(centres, 1)[0]
        assert [r for r, _ in snapshot_used(index, lambda: index.nearest(query, 5))] == exact(
            index, vectors, query, 5, "1")


def test_a_vector_written_without_the_log_makes_the_snapshot_unused_until_it_is_written_again(folder, coarse):
    # What a process of the release before m006, still running after the upgrade, does: it writes the row and
    # its vector and knows no log.
    with IndexStore.open(folder, "test:64", DIMS) as index, IndexStore.open(folder, "test:64", DIMS) as other:
        vectors, centres = fill(index, n=100)
        index.refresh_snapshot()
        query = queries_near(centres, 1)[0]
        assert other.nearest(query, 3) and other.snapshot is not None
        index.conn.execute("DELETE FROM meta WHERE key = ?", (db.VECTOR_LOG_ON,))
        vectors[add(index, "written by an older memvault", "c1", query)] = query
        db.set_meta(index.conn, db.VECTOR_LOG_ON, "on")
        assert index.conn.execute(f"SELECT count(*) FROM {db.VECTOR_LOG}").fetchone()[0] == 0
        for reader in (index, other):
            assert [r for r, _ in reader.nearest(query, 5)] == exact(index, vectors, query, 5, "1")
            assert reader.current_snapshot() is None
        index.refresh_snapshot()  # a sync writes it again, from sqlite-vec
        assert [r for r, _ in snapshot_used(other, lambda: other.nearest(query, 5))] == exact(
            index, vectors, query, 5, "1")


def test_a_small_conversation_of_a_bounded_index_ranks_all_its_matches(index, bounded):
    # The newest matches of "tea" are all the big conversation's: a window of them would hold none of the
    # small one's, which is a tenth of the rows.
    rng = np.random.default_rng(6)
    small = [add(index, f"tea with Ana {i}", "small", unit(rng.normal(size=DIMS)), minute=i) for i in range(20)]
    for i in range(180):
        add(index, f"tea at the office {i}", "big", unit(rng.normal(size=DIMS)), minute=100 + i)
    found = index.lexical_scopes("tea", 5, "1", (), ["small"])[0]
    assert len(found) == 5 and {rowid for rowid, _ in found} <= set(small)
    assert index.lexical_scopes("tea", 5, "1", (), ["big"])[0]  # the big one through the window


def test_memvault_bm25_given_the_counted_shares_scores_as_fts5s_bm25(index):
    rng = np.random.default_rng(8)
    words = ["tea", "kyoto", "garden", "cello", "rain", "bread", "river", "lamp"]
    for i in range(60):  # turns of one conversation: each also indexed with its neighbours' words and its day
        text = " ".join(rng.choice(words, size=int(rng.integers(2, 9))))
        add(index, text, "c1", unit(rng.normal(size=DIMS)), role="user" if i % 2 else "assistant", minute=i * 700)
    rows = index.conn.execute("SELECT count(*) FROM entries").fetchone()[0]
    for query in ("tea garden", "kyoto rain lamp", "cello", "bread river tea kyoto"):
        terms = query_terms(query)
        shares = tuple(index._newest_matches(fts_expression([term]), rows)[0] / rows for term in terms)
        sql = "SELECT rowid, {} FROM entries_fts WHERE entries_fts MATCH ?"
        ours = dict(index.conn.execute(sql.format(ranking.bm25_of_shares(shares)), (fts_expression(terms),)))
        theirs = dict(index.conn.execute(sql.format(ranking.fts5_bm25()), (fts_expression(terms),)))
        assert len(ours) > 5 and ours.keys() == theirs.keys()
        assert all(ours[rowid] == pytest.approx(theirs[rowid], rel=1e-9) for rowid in ours)


def test_a_walk_of_common_words_ranks_with_shares_from_their_newest_matches(index, bounded):
    # "tea" is in every row, "cake" in every fourth: over the newest matches their shares are 1 and 1/4.
    lexical_index(index, [f"tea {'cake ' if i % 4 == 0 else ''}time {i}" for i in range(200)])
    walk = index._bounded("tea cake")
    assert walk.floor > 0 and walk.shares[0] == 1.0 and walk.shares[1] == pytest.approx(0.25, abs=0.03)
    found, sql = traced(index, lambda: index.lexical_scopes("tea cake", 5, "1", (), None))
    assert [s for s in sql if "memvault_bm25" in s] and not [s for s in sql if re.search(r"\bbm25\(", s)]
    assert all("cake" in index.conn.execute("SELECT text FROM entries WHERE rowid = ?", (rowid,)).fetchone()[0]
               for rowid, _ in found[0])  # the rarer word counts for more


def test_a_walk_is_kept_for_the_next_ask_only_while_no_connection_writes(folder, index, bounded):
    rng = np.random.default_rng(9)
    lexical_index(index, [f"tea time {i}" for i in range(150)])
    walk = index._bounded("tea")
    assert index._bounded("tea") is walk  # the candidates' shares ask again: the same walk
    add(index, "tea again", "c1", unit(rng.normal(size=DIMS)), minute=500)  # this connection writes
    assert index._bounded("tea").floor > walk.floor
    walk = index._bounded("tea")
    with IndexStore.open(folder, "test:64", DIMS) as other:  # another connection writes
        add(other, "tea once more", "c1", unit(rng.normal(size=DIMS)), minute=501)
    assert index._bounded("tea").floor > walk.floor
