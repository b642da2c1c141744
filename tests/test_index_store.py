"""IndexStore: dense and lexical search under WHERE filters, lookups, repair of a bad file."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

from memvault.index.queries import MAX_PARTITION_QUERIES
from memvault.index.rows import IndexRow
from memvault.index.store import FILE_NAME, IndexStore
from memvault.index.text import fts_query, normalise
from memvault.vault.format.entry import Entry
from tests.support.fakes import WordEmbedder

DIMS = 32


@pytest.fixture
def index(tmp_path):
    store = IndexStore.open(tmp_path / ".memvault", "test:32", DIMS)
    yield store
    store.close()


def add(index, text, conversation="work", role="memory", vector=None, created_at=None, **fields):
    entry = Entry(text=text, conversation_id=conversation, role=role,
                  created_at=created_at or datetime(2025, 1, 1, tzinfo=timezone.utc), **fields)
    row = IndexRow.from_entry(entry, f"entries/{conversation}/facts/{entry.id}.md", "hash-" + entry.id)
    if vector is None:
        vector = WordEmbedder(dims=DIMS).embed([text])[0]
    return index.upsert([row], [vector])[0], entry


def random_index(index, n=300, conversations=40, seed=7):
    """n rows with random unit vectors spread over conversations, users and roles; returns rowid -> vector."""
    rng = np.random.default_rng(seed)
    vectors = {}
    for i in range(n):
        vector = rng.normal(size=DIMS).astype(np.float32)
        vector /= np.linalg.norm(vector)
        rowid, _ = add(index, f"row {i}", conversation=f"c{i % conversations}",
                       role="summary" if i % 7 == 0 else "memory", vector=vector, user_id=f"u{i % 3}")
        vectors[rowid] = vector
    return vectors


def brute_force(index, vectors, query, k, where, params):
    allowed = {r[0] for r in index.conn.execute(f"SELECT e.rowid FROM entries e WHERE {where}", params)}
    scored = sorted(((float(vectors[r] @ query), r) for r in allowed), reverse=True)[:k]
    return [r for _, r in scored]


@pytest.mark.parametrize("where, params", [
    ("1", ()),
    ("e.conversation_id = ?", ("c3",)),
    ("e.conversation_id IN (?, ?) AND e.role != 'summary'", ("c3", "c5")),
    ("e.user_id = ?", ("u1",)),  # spans every conversation: one filtered scan, not 40 partition queries
    ("e.role = 'summary' AND e.user_id = ?", ("u2",)),
    ("e.conversation_id = ?", ("nobody",)),
])
def test_dense_matches_exact_cosine_within_the_filter(index, where, params):
    vectors = random_index(index)
    query = np.random.default_rng(1).normal(size=DIMS).astype(np.float32)
    query /= np.linalg.norm(query)
    hits = index.dense(query, 10, where, params)
    assert [r for r, _ in hits] == brute_force(index, vectors, query, 10, where, params)
    for rowid, similarity in hits:
        assert similarity == pytest.approx(float(vectors[rowid] @ query), abs=1e-5)
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)


def knn_queries(index, search):
    """What `search()` returned, and the KNN queries it ran on the vector table (apsw's exec trace)."""
    seen = []

    def trace(_cursor, sql, _bindings):
        if "FROM entries_vec" in sql:
            seen.append(sql)
        return True

    index.conn.exec_trace = trace
    try:
        return search(), seen
    finally:
        index.conn.exec_trace = None


def test_many_conversations_take_the_single_scan_path(index):
    vectors = random_index(index, conversations=40)
    query = np.random.default_rng(2).normal(size=DIMS).astype(np.float32)
    query /= np.linalg.norm(query)
    where, params = "e.user_id = ?", ("u1",)  # rows in all 40 conversations
    assert 40 > MAX_PARTITION_QUERIES
    hits, queries = knn_queries(index, lambda: index.dense(query, 10, where, params))
    assert len(queries) == 1 and "conversation_id" not in queries[0]  # one scan, not 40 partition queries
    assert [r for r, _ in hits] == brute_force(index, vectors, query, 10, where, params)
    # A filter over a few conversations asks each partition instead.
    _, queries = knn_queries(index, lambda: index.dense(query, 10, "e.conversation_id IN (?, ?)", ("c3", "c5")))
    assert len(queries) == 2 and all("conversation_id = ?" in sql for sql in queries)


def test_dense_scope_excludes_other_conversations(index):
    near_other, _ = add(index, "alpha beta gamma", conversation="other")
    mine, _ = add(index, "alpha delta", conversation="work")
    query = WordEmbedder(dims=DIMS).embed(["alpha beta gamma"])[0]
    assert index.dense(query, 5)[0][0] == near_other
    assert [r for r, _ in index.dense(query, 5, "e.conversation_id = ?", ("work",))] == [mine]


def test_lexical_handles_accents_cyrillic_and_cjk(index):
    cafe, _ = add(index, "We met at the Café de Flore")
    tree, _ = add(index, "Ёлка стоит в углу")
    tokyo, _ = add(index, "去年東京に住んでいた")
    add(index, "nothing relevant here")
    assert [r for r, _ in index.lexical("cafe", 5)] == [cafe]
    assert [r for r, _ in index.lexical("CAFÉ", 5)] == [cafe]
    assert [r for r, _ in index.lexical("ёлка", 5)] == [tree]
    assert [r for r, _ in index.lexical("京都", 5)] == [tokyo]  # shares the character 京


def test_lexical_stems_and_ranks_higher_is_better(index):
    hike, _ = add(index, "hiking, more hiking")
    once, _ = add(index, "Bob hiked once")
    add(index, "cooking pasta")
    hits = index.lexical("hike", 5)
    assert [r for r, _ in hits] == [hike, once]
    assert hits[0][1] > hits[1][1] > 0


@pytest.mark.parametrize("query", ['"foo" OR bar* NEAR(', "text:foo", "a AND (b", "NOT", "*", '"""', "^foo -bar + c"])
def test_lexical_never_reads_user_input_as_fts_syntax(index, query):
    foo, _ = add(index, "foo appears here")
    hits = index.lexical(query, 5)
    assert all(isinstance(r, int) for r, _ in hits)
    if "foo" in query:
        assert [r for r, _ in hits] == [foo]


def test_lexical_respects_where_and_empty_queries(index):
    work, _ = add(index, "tea with milk", conversation="work")
    add(index, "tea with lemon", conversation="home")
    assert [r for r, _ in index.lexical("tea", 5, "e.conversation_id = ?", ("work",))] == [work]
    assert index.lexical("?!", 5) == [] and index.lexical("", 5) == []
    assert fts_query("the of") == '"the" OR "of"'  # only stop words: keep them rather than search nothing
    assert normalise("Ｆｕｌｌ-width ＡＢＣ") == "full width abc"


def test_lexical_of_scores_the_rows_asked_for_on_the_lexical_scale(index):
    rows = [add(index, text)[0] for text in ("hiking, more hiking", "Bob hiked once", "cooking pasta")]
    ranked = dict(index.lexical("hike", 5))
    # the same BM25 as the lexical lane, for the rows asked only (a candidate below the lane's depth)
    assert index.lexical_of("hike", rows[1:]) == {rows[1]: pytest.approx(ranked[rows[1]])}
    assert index.lexical_of("hike", []) == {} and index.lexical_of("?!", rows) == {}


def at(day, hour):
    return datetime(2025, 1, day, hour, tzinfo=timezone.utc)


def test_adjacent_turns_are_the_same_days_turns_before_and_after(index):
    def turn(text, when, conversation="chat", role="user"):
        return add(index, text, conversation=conversation, role=role, created_at=when)[0]

    # the turns of one conversation over two days, a fact and another conversation's turn between them
    first = turn("we went hiking", at(1, 9))
    reply = turn("where did you go?", at(1, 10), role="assistant")
    fact = turn("Bob likes hiking", at(1, 10), role="memory")
    turn("elsewhere", at(1, 10), conversation="other")
    last = turn("the lake trail", at(1, 11))
    next_day = turn("good morning", at(2, 8))
    found = index.adjacent_turns([first, reply, fact, last, next_day])
    assert found == {first: [reply], reply: [first, last], last: [reply], next_day: []}  # not the fact


def test_rows_vectors_lookups_and_removal(index):
    rowid, entry = add(index, "remember the milk", user_id="alice", metadata={"topic": "shopping"})
    other, second = add(index, "another memory")
    row = index.rows([rowid, 999])[rowid]
    assert (row["id"], row["user_id"], row["role"]) == (entry.id, "alice", "memory")
    assert row["metadata"] == {"topic": "shopping"}
    assert row["created_at"] == entry.created_at.timestamp()
    assert index.by_id(entry.id)["rowid"] == rowid and index.by_id("nope") is None
    assert np.allclose(index.vectors([rowid])[rowid], WordEmbedder(dims=DIMS).embed(["remember the milk"])[0])
    assert index.count() == 2 and index.count("e.user_id = ?", ("alice",)) == 1
    assert index.remove([entry.id, "missing"]) == 1
    assert index.rows([rowid]) == {} and index.vectors([rowid]) == {} and index.lexical("milk", 5) == []
    stats = index.stats()
    assert (stats["entries"], stats["conversations"], stats["dims"]) == (1, {"work": 1}, DIMS)
    index.vacuum()
    assert index.count() == 1


def test_upsert_without_vector_keeps_the_stored_one_across_conversations(index):
    rowid, entry = add(index, "moving memory", conversation="work")
    before = index.vectors([rowid])[rowid]
    moved = IndexRow.from_entry(entry.replace(conversation_id="home"), "entries/home/facts/x.md", "h")
    assert index.upsert([moved], [None]) == [rowid]
    assert np.array_equal(index.vectors([rowid])[rowid], before)
    assert [r for r, _ in index.dense(before, 1, "e.conversation_id = ?", ("home",))] == [rowid]
    assert index.dense(before, 1, "e.conversation_id = ?", ("work",)) == []
    fresh = IndexRow.from_entry(Entry(text="never embedded"), "entries/default/facts/y.md", "h2")
    assert index.upsert([fresh], [None]) == [None] and index.count() == 1


def test_wrong_dimensions_are_refused(index):
    from memvault.errors import SearchIndexError

    with pytest.raises(SearchIndexError, match="dimensions"):
        add(index, "short vector", vector=np.ones(3, dtype=np.float32))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "foreign", "deleted"])
def test_bad_index_file_is_set_aside_and_rebuilt(tmp_path, damage):
    state = tmp_path / ".memvault"
    with IndexStore.open(state, "test:32", DIMS) as index:
        assert index.rebuilt and index.rebuild_reason == "new index"
        add(index, "soon lost")
        index.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    path = state / FILE_NAME
    if damage == "garbage":
        path.write_bytes(bytes(range(256)) * 64)
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:3000])
    elif damage == "foreign":
        import apsw

        path.unlink()
        apsw.Connection(str(path)).execute("CREATE TABLE something_else (x)")
    else:
        path.unlink()
    with IndexStore.open(state, "test:32", DIMS) as index:
        assert index.rebuilt and index.count() == 0
        rowid, _ = add(index, "works again")
        assert index.lexical("works", 1)[0][0] == rowid
    with IndexStore.open(state, "test:32", DIMS) as index:
        assert not index.rebuilt and index.count() == 1


def test_new_model_identity_empties_the_index_and_resizes_vectors(tmp_path):
    state = tmp_path / ".memvault"
    with IndexStore.open(state, "test:32", DIMS) as index:
        add(index, "old space")
    with IndexStore.open(state, "other:8", 8) as index:
        assert index.rebuilt and "test:32 to other:8" in index.rebuild_reason
        assert index.count() == 0
        rowid, _ = add(index, "new space", vector=np.ones(8, dtype=np.float32) / np.sqrt(8))
        assert index.dense(np.ones(8, dtype=np.float32) / np.sqrt(8), 1)[0][0] == rowid
