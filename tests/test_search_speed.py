"""What makes search cheap at scale gives what exact search gives: the scoped lanes (`nearest`,
`lexical_scopes`), the coarse pass over the vectors' sign bits, its migration, and the query model.

Real sqlite-vec and FTS5 indexes; vectors are clustered (near neighbours exist, as with a real model)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from memvault.index import db
from memvault.index import queries as queries_module
from memvault.index.rows import IndexRow
from memvault.index.store import IndexStore
from memvault.vault.format.entry import Entry

DIMS = 64
WORDS = "tea coffee lisbon violin bicycle garden rust bread jazz kyoto piano climbing camera tomatoes".split()
CONVERSATIONS = ["c0", "c1", "c2", "global"]


def unit(vector):
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def clustered(rng, n, centres):
    """n unit vectors, each near one of the centres (cosine about 0.8 to it)."""
    picks = rng.integers(len(centres), size=n)
    return [unit(centres[c] + rng.normal(scale=0.75 / np.sqrt(DIMS), size=DIMS)) for c in picks]


def add(index, text, conversation, vector, role="memory", user_id=None, minute=0):
    entry = Entry(text=text, conversation_id=conversation, role=role, user_id=user_id,
                  created_at=datetime(2025, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=minute))
    row = IndexRow.from_entry(entry, f"entries/{conversation}/facts/{entry.id}.md", "hash-" + entry.id)
    return index.upsert([row], [vector])[0]


def fill(index, n=600, seed=3, topics=15):
    """n rows over CONVERSATIONS (a summary now and then, two users) near `topics` centres; returns
    (rowid -> vector, centres)."""
    rng = np.random.default_rng(seed)
    centres = [unit(rng.normal(size=DIMS)) for _ in range(topics)]
    vectors = {}
    for i, vector in enumerate(clustered(rng, n, centres)):
        text = " ".join(rng.choice(WORDS, size=3))
        rowid = add(index, text, CONVERSATIONS[i % len(CONVERSATIONS)], vector,
                    role="summary" if i % 50 == 0 else "memory", user_id=f"u{i % 2}", minute=i)
        vectors[rowid] = vector
    return vectors, centres


@pytest.fixture
def index(tmp_path):
    store = IndexStore.open(tmp_path / ".memvault", "test:64", DIMS)
    yield store
    store.close()


def exact(index, vectors, query, k, where, params=()):
    """The k best rows under the filter by cosine, computed here (ties by rowid)."""
    allowed = [r for r, in index.conn.execute(f"SELECT e.rowid FROM entries e WHERE {where}", tuple(params))]
    return sorted(allowed, key=lambda r: (-float(vectors[r] @ query), r))[:k]


def traced(index, call):
    """What `call()` returned, and the SQL statements it ran."""
    seen = []
    index.conn.exec_trace = lambda _cursor, sql, _bindings: seen.append(sql) or True
    try:
        return call(), seen
    finally:
        index.conn.exec_trace = None


SCOPE = "e.role <> 'summary' AND e.conversation_id IN ('c1', 'global')"


def test_nearest_gives_the_exact_neighbours_of_a_scope_without_listing_its_rows(index):
    vectors, centres = fill(index)
    rng = np.random.default_rng(5)
    for centre in centres[:8]:
        query = unit(centre + rng.normal(scale=0.5 / np.sqrt(DIMS), size=DIMS))
        for conversation in ("c1", "global"):
            where = f"({SCOPE}) AND e.conversation_id = ?"
            hits, sql = traced(index, lambda: index.nearest(query, 15, where, (conversation,), conversation))
            assert [r for r, _ in hits] == exact(index, vectors, query, 15, where, (conversation,))
            assert not [s for s in sql if "SELECT e.rowid, e.conversation_id" in s]  # no listing of the scope
        hits, sql = traced(index, lambda: index.nearest(query, 15, "e.role <> 'summary'"))
        assert [r for r, _ in hits] == exact(index, vectors, query, 15, "e.role <> 'summary'")
        assert not [s for s in sql if "SELECT e.rowid, e.conversation_id" in s]
        for rowid, similarity in hits:
            assert similarity == pytest.approx(float(vectors[rowid] @ query), abs=1e-5)


def test_nearest_falls_back_to_the_filtered_scan_when_the_filter_drops_most_rows(index):
    vectors, centres = fill(index)
    # One user's rows of one conversation, and only summaries: most nearest rows fail these filters.
    for where, params in (("e.user_id = ? AND e.conversation_id = ?", ("u1", "c2")), ("e.role = 'summary'", ())):
        query = centres[1]
        conversation = params[-1] if params else None
        hits = index.nearest(query, 10, where, params, conversation)
        assert [r for r, _ in hits] == exact(index, vectors, query, 10, where, params)
        assert len(hits) == min(10, index.count(where, params))


def test_lexical_scopes_match_one_lexical_query_per_conversation_in_one_pass(index):
    fill(index)
    for query in ("tea lisbon", "violin", "jazz kyoto camera", "nothing matches this"):
        # A quarter of the rows (their rowids listed first) and half of them (looked up one by one).
        for names, listed in ((["c1"], True), (["c1", "global"], False)):
            where = f"({SCOPE}) AND e.conversation_id IN ({', '.join(repr(n) for n in names)})"
            found, sql = traced(index, lambda: index.lexical_scopes(query, 7, where, (), names))
            assert found == [index.lexical(query, 7, f"({where}) AND e.conversation_id = ?", (name,))
                             for name in names]
            walks = [s for s in sql if "MATCH" in s]
            assert len(walks) <= 1  # the FTS matches are walked once for all conversations
            assert all(("+entries_fts.rowid IN" in s) == listed for s in walks)
        # Every conversation: the FTS table's best rows checked against a filter that keeps most of them
        # (no join of every match to the entries)...
        found, sql = traced(index, lambda: index.lexical_scopes(query, 7, "e.role <> 'summary'", (), None))
        assert found == [index.lexical(query, 7, "e.role <> 'summary'")]
        assert not [s for s in sql if "JOIN" in s]
        # ...or, when it drops most of them, the filtered query itself.
        assert index.lexical_scopes(query, 7, "e.role = 'summary'", (), None) == [
            index.lexical(query, 7, "e.role = 'summary'")]


def test_coarse_pass_gives_the_exact_top_k_on_a_large_scan(index, monkeypatch):
    vectors, centres = fill(index, n=1500)
    monkeypatch.setattr(queries_module, "COARSE_ABOVE", 200)  # every scan here takes the coarse pass
    monkeypatch.setattr(queries_module, "COARSE_CANDIDATES", 120)  # fewer than the rows scanned
    rng = np.random.default_rng(9)
    for centre in centres[:10]:
        query = unit(centre + rng.normal(scale=0.5 / np.sqrt(DIMS), size=DIMS))
        for where, params, conversation in ((SCOPE + " AND e.conversation_id = ?", ("c1",), "c1"),
                                            ("e.role <> 'summary'", (), None)):
            hits, sql = traced(index, lambda: index.nearest(query, 10, where, params, conversation))
            assert any(db.COARSE_TABLE in s for s in sql)
            assert [r for r, _ in hits] == exact(index, vectors, query, 10, where, params)


def test_coarse_pass_re_scores_a_share_of_the_vectors_scanned(index, monkeypatch):
    # Uniform random vectors: their sign bits barely rank them, so only re-scoring all finds the top k.
    rng = np.random.default_rng(4)
    vectors = {}
    for n in range(400):
        vector = unit(rng.normal(size=DIMS))
        entry = Entry(text=f"row {n}", conversation_id="c0", created_at=datetime(2025, 1, 1, tzinfo=timezone.utc))
        rowid = index.upsert([IndexRow.from_entry(entry, f"entries/c0/{entry.id}.md", "h" + entry.id)], [vector])[0]
        vectors[rowid] = vector
    monkeypatch.setattr(queries_module, "COARSE_ABOVE", 0)
    monkeypatch.setattr(queries_module, "COARSE_CANDIDATES", 1)
    query = unit(rng.normal(size=DIMS))
    monkeypatch.setattr(queries_module, "COARSE_SHARE", 1.0)
    assert [r for r, _ in index.nearest(query, 10)] == exact(index, vectors, query, 10, "1", ())
    monkeypatch.setattr(queries_module, "COARSE_SHARE", 0.0)  # the minimum alone: k by their bits
    assert [r for r, _ in index.nearest(query, 10)] != exact(index, vectors, query, 10, "1", ())


def test_coarse_bits_follow_every_write(index, monkeypatch):
    vectors, centres = fill(index, n=300)
    monkeypatch.setattr(queries_module, "COARSE_ABOVE", 0)
    monkeypatch.setattr(queries_module, "COARSE_CANDIDATES", 20)

    def counts():
        return [index.conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("entries_vec", db.COARSE_TABLE)]

    # A row moved to another place in vector space (and another conversation) is found at the new one.
    moved_id = index.conn.execute("SELECT id FROM entries WHERE conversation_id = 'c0' LIMIT 1").fetchone()[0]
    row = next(r for r in index.select("e.id = ?", (moved_id,)))
    entry = Entry(text=row["text"], conversation_id="c2", id=moved_id,
                  created_at=datetime(2025, 1, 1, tzinfo=timezone.utc))
    far = unit(-centres[0])
    index.upsert([IndexRow.from_entry(entry, row["path"], "new-hash")], [far])
    assert index.nearest(far, 1, "1", (), "c2")[0][0] == row["rowid"]
    assert index.nearest(far, 1, "1", (), "c0")[0][0] != row["rowid"]
    index.remove([moved_id])
    assert row["rowid"] not in [r for r, _ in index.nearest(far, 5)]
    assert counts() == [299, 299]
    index.clear()
    assert counts() == [0, 0]


def test_an_index_from_before_the_coarse_bits_gets_them_by_migration_without_a_rebuild(tmp_path, monkeypatch):
    folder = tmp_path / ".memvault"
    with IndexStore.open(folder, "test:64", DIMS) as old:
        vectors, centres = fill(old, n=400)
        # As memvault wrote it before migration m005: no sign bits, four migrations recorded.
        old.conn.execute(f"DROP TABLE {db.COARSE_TABLE}")
        old.conn.execute(f"DROP TABLE {db.VECTOR_LOG}")
        old.conn.execute("DELETE FROM migrations WHERE name IN "
                         "('m005_coarse_vectors', 'm006_vector_log', 'm007_relation_kinds')")
    with IndexStore.open(folder, "test:64", DIMS) as migrated:
        assert not migrated.rebuilt and migrated.has_coarse  # nothing to re-embed or re-read
        assert migrated.conn.execute(f"SELECT count(*) FROM {db.COARSE_TABLE}").fetchone()[0] == 400
        monkeypatch.setattr(queries_module, "COARSE_ABOVE", 0)
        monkeypatch.setattr(queries_module, "COARSE_CANDIDATES", 60)
        query = centres[3]
        hits = migrated.nearest(query, 10, "e.role <> 'summary'")
        assert [r for r, _ in hits] == exact(migrated, vectors, query, 10, "e.role <> 'summary'")


def test_dims_that_do_not_fill_whole_bytes_always_scan_the_float_vectors(tmp_path, monkeypatch):
    monkeypatch.setattr(queries_module, "COARSE_ABOVE", 0)
    with IndexStore.open(tmp_path / ".memvault", "test:12", 12) as index:
        assert not index.has_coarse
        rng = np.random.default_rng(2)
        vectors = {add(index, f"row {i}", "c0", unit(rng.normal(size=12))): None for i in range(30)}
        query = unit(rng.normal(size=12))
        assert len(index.nearest(query, 5)) == 5 and set(r for r, _ in index.nearest(query, 5)) <= set(vectors)
