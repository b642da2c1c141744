"""search(): the pipeline of docs/architecture.md, Retrieval, glued to an index.

`SqlIndex` below implements the index API over a real SQLite table (apsw), so every WHERE the search
builds is executed for real; its dense lane is exact cosine and its lexical lane counts shared words.
`WordEmbedder` is a tiny deterministic model (hashed bag of words), as in simonw/llm's tests.
"""

import hashlib
import json
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from memvault.errors import EmbeddingError, UsageError
from memvault.index.queries import IndexQueries
from memvault.retrieve import conversations_for, search
from memvault.retrieve.scoring import FALLBACK_NAME, NO_RERANKER_THRESHOLD, fallback_relevance, length_excess
from memvault.settings import RetrievalSettings

NOW = datetime(2025, 6, 1, tzinfo=UTC)
DIMS = 64
WORD = re.compile(r"\w+")


def words(text):
    return WORD.findall(text.lower())


class WordEmbedder:
    """Hashed bag of words, L2-normalised: texts sharing words are close."""

    def embed(self, texts, kind="document"):
        out = np.zeros((len(texts), DIMS), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in words(text):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % DIMS] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


class SqlIndex:
    """The index API over an apsw table: WHERE clauses from the search run against real SQLite."""

    def __init__(self):
        import apsw

        self.db = apsw.Connection(":memory:")
        self.db.execute(
            "CREATE TABLE entries (id TEXT, path TEXT, file_hash TEXT, text_hash TEXT, role TEXT, conversation_id TEXT,"
            " created_at REAL, updated_at REAL, user_id TEXT, agent_id TEXT, run_id TEXT, metadata TEXT,"
            " source TEXT, text TEXT)")
        self.vecs = {}
        self.calls = []
        self.embedder = WordEmbedder()

    def add(self, text, conversation="work", role="memory", age_days=10.0, metadata=None, **scopes):
        created = (NOW - timedelta(days=age_days)).timestamp()
        self.db.execute(
            "INSERT INTO entries (id, role, conversation_id, created_at, updated_at, user_id, agent_id, run_id,"
            " metadata, text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (f"id-{len(self.vecs)}", role, conversation, created, created, scopes.get("user_id"),
             scopes.get("agent_id"), scopes.get("run_id"), json.dumps(metadata or {}), text))
        rowid = self.db.last_insert_rowid()
        self.vecs[rowid] = self.embedder.embed([text])[0]
        return rowid

    def _matching(self, where, params):
        return list(self.db.execute(f"SELECT e.rowid, e.text FROM entries e WHERE {where}", params))

    def dense(self, query_vec, k, where="1", params=()):
        self.calls.append(("dense", where, tuple(params)))
        scored = [(rowid, float(self.vecs[rowid] @ query_vec)) for rowid, _ in self._matching(where, params)]
        return sorted(scored, key=lambda item: (-item[1], item[0]))[:k]

    def lexical(self, query_text, k, where="1", params=()):
        self.calls.append(("lexical", where, tuple(params)))
        asked = set(words(query_text))
        scored = [(rowid, float(len(asked & set(words(text))))) for rowid, text in self._matching(where, params)]
        return sorted([s for s in scored if s[1] > 0], key=lambda item: (-item[1], item[0]))[:k]

    def nearest(self, query_vec, k, where="1", params=(), conversation=None):
        return self.dense(query_vec, k, where, params)

    def lexical_of(self, query_text, rowids):
        asked = set(words(query_text))
        found = self.db.execute(f"SELECT rowid, text FROM entries WHERE rowid IN ({','.join('?' * len(rowids))})",
                                list(rowids))
        return {rowid: float(len(asked & set(words(text)))) for rowid, text in found if asked & set(words(text))}

    @property
    def conn(self):
        return self.db

    adjacent_turns = IndexQueries.adjacent_turns  # the real SQL, run on this table

    def lexical_scopes(self, query_text, k, where, params, conversations):
        if conversations is None:
            return [self.lexical(query_text, k, where, params)]
        return [self.lexical(query_text, k, f"({where}) AND e.conversation_id = ?", (*params, name))
                for name in conversations]

    def rows(self, rowids):
        cursor = self.db.execute(f"SELECT rowid, * FROM entries WHERE rowid IN ({','.join('?' * len(rowids))})",
                                 list(rowids))
        names = [d[0] for d in cursor.getdescription()]
        found = {row[0]: dict(zip(names, row, strict=True)) for row in cursor}
        for row in found.values():  # decoded, as IndexStore.rows gives it
            row["metadata"] = json.loads(row["metadata"] or "{}")
        return found

    def vectors(self, rowids):
        return {rowid: self.vecs[rowid] for rowid in rowids}


class OverlapReranker:
    """A deterministic stand-in for a cross-encoder: share of the query's words found in the text."""

    def score(self, query, texts):
        asked = set(words(query))
        return [len(asked & set(words(t))) / len(asked) for t in texts]


def settings(**changes):
    return replace(RetrievalSettings(), **changes)


def run(index, query, reranker=None, conversations=("work", "global"), **kwargs):
    options = {k: kwargs.pop(k) for k in list(kwargs) if k in ("scopes", "filters")}
    return search(index, index.embedder, reranker, query, settings(**kwargs),
                  list(conversations) if conversations is not None else None, now=NOW, **options)


def test_recency_decides_between_equally_relevant_memories():
    index = SqlIndex()
    old = index.add("alice loves green tea", age_days=400)
    new = index.add("alice loves green tea now", age_days=1)
    # Without recency the older, closer match is first; with weight 0.5 the fresh one wins.
    assert [h.rowid for h in run(index, "alice loves green tea", recency_weight=0.0, mmr_lambda=1.0)] == [old, new]
    assert [h.rowid for h in run(index, "alice loves green tea", recency_weight=0.5, mmr_lambda=1.0)] == [new, old]


def test_mmr_pushes_near_duplicates_apart():
    index = SqlIndex()
    first = index.add("the project deadline is friday afternoon")
    twin = index.add("the project deadline is friday afternoon ok")
    other = index.add("taxes deadline friday")  # less relevant, but says something new
    plain = run(index, "project deadline friday", mmr_lambda=1.0, top_k=3, recency_weight=0.0)
    assert {h.rowid for h in plain[:2]} == {first, twin} and plain[2].rowid == other
    diverse = run(index, "project deadline friday", mmr_lambda=0.3, top_k=2, recency_weight=0.0)
    assert [h.rowid for h in diverse] == [plain[0].rowid, other]
    assert plain[1].explain["mmr_max_similarity"] > 0.9


def test_hits_carry_scores_and_explain():
    index = SqlIndex()
    rowid = index.add("bob moved to lisbon in march", user_id="bob", metadata={"topic": "home"})
    index.add("lisbon has trams", conversation="global")
    hits = run(index, "where did bob move", top_k=5)
    assert hits[0].rowid == rowid and [h.rank for h in hits] == list(range(1, len(hits) + 1))
    hit = hits[0]
    assert hit.user_id == "bob" and hit.metadata == {"topic": "home"} and hit.role == "memory"
    assert hit.created_at == NOW - timedelta(days=10)
    assert hit.dense > 0 and hit.lexical == 1.0 and hit.fused > 0  # "bob" is the one shared word
    assert hit.explain["relevance_source"] == FALLBACK_NAME
    longer = length_excess(["bob moved to lisbon in march", "lisbon has trams"])[0]  # the two candidates
    assert longer > 0 and hit.explain["longer"] == pytest.approx(longer) and hit.explain["day_share"] == 1.0
    assert hit.relevance == pytest.approx(fallback_relevance(hit.dense, 1.0, longer=longer))  # the best lexical hit
    assert hit.recency == pytest.approx(np.exp(-10 / 30))
    w = RetrievalSettings().recency_weight
    assert hit.total == pytest.approx((1 - w) * hit.relevance + w * hit.recency) and hit.score == hit.total
    info = hit.explain
    assert info["relevance_source"] == FALLBACK_NAME and info["dense_rank"] == 1 and info["lexical_rank"] == 1
    assert info["scope"] == "work" and info["rank"] == 1 and info["threshold"] == NO_RERANKER_THRESHOLD
    assert json.loads(json.dumps(hit.as_dict()))["created_at"].startswith("2025-05-22")


def test_a_reply_next_to_the_turn_about_the_question_rises():
    index = SqlIndex()
    query = "when did nate get his turtles"
    asked = index.add("Nate: my two turtles are so cute", role="user", age_days=10.0)
    reply = index.add("Nate: I have had them for three years", role="user", age_days=10.0 - 1 / 86400)
    alone = index.add("Nate: I have had them for three years", role="user", age_days=40.0)  # another day
    q = index.embedder.embed([query])[0]
    other = np.roll(q, 1) - (np.roll(q, 1) @ q) * q  # a direction the query does not share
    index.vecs[asked] = q  # the turn about the question, and two equal replies (cosine 0.3) on different days
    index.vecs[reply] = index.vecs[alone] = 0.3 * q + np.sqrt(1 - 0.09) * other / np.linalg.norm(other)
    hits = {h.rowid: h for h in run(index, query, top_k=3, recency_weight=0.0, mmr_lambda=1.0)}
    assert set(hits) == {asked, reply, alone} and hits[reply].dense == pytest.approx(hits[alone].dense)
    assert hits[reply].explain["neighbour_cosine"] == pytest.approx(1.0)  # the turn before it
    assert hits[alone].explain["neighbour_cosine"] == pytest.approx(0.3)  # none that day: its own cosine
    assert hits[reply].relevance > hits[alone].relevance and hits[reply].rank < hits[alone].rank


def test_a_candidate_below_the_lexical_depth_keeps_its_words():
    index = SqlIndex()
    for i in range(6):  # three shared words among many: lexically first, but far from the query's vector
        index.add(f"garden roses tulips and a lot of other words in note {i}")
    deep = index.add("roses")  # one shared word: the dense lane's first, below the lexical lane's depth of 3
    hits = {h.rowid: h for h in run(index, "garden roses tulips", top_k=3, candidate_multiplier=1,
                                     conversations=("work",), mmr_lambda=0.3)}  # near-repeat notes give way
    assert deep in hits and hits[deep].explain["lexical_rank"] is None and hits[deep].explain["dense_rank"] == 1
    assert hits[deep].explain["lexical_share"] == pytest.approx(1 / 3)  # one word of the best hit's three


def test_each_conversation_gets_its_own_candidates():
    index = SqlIndex()
    for i in range(40):
        index.add(f"coffee notes number {i} about coffee beans", conversation="global")
    mine = index.add("my coffee order is a flat white", conversation="work")
    hits = run(index, "coffee beans order", top_k=3, candidate_multiplier=2)
    assert mine in [h.rowid for h in hits]
    lanes = {(kind, params[-1]) for kind, _, params in index.calls}
    assert lanes == {("dense", "work"), ("lexical", "work"), ("dense", "global"), ("lexical", "global")}
    index.calls.clear()
    run(index, "coffee", conversations=None, top_k=3)
    assert len(index.calls) == 2  # no conversation given: one pass over all


def test_scopes_filters_and_summaries_are_applied_inside_the_query():
    index = SqlIndex()
    alice = index.add("alice likes hiking trips", user_id="alice", metadata={"kind": "hobby"})
    index.add("bob likes hiking trips", user_id="bob", metadata={"kind": "hobby"})
    alice_work = index.add("alice hiking trips budget", user_id="alice", metadata={"kind": "money"})
    index.add("hiking trips summary", role="summary", user_id="alice")
    index.add("alice hiking elsewhere", conversation="other", user_id="alice")
    hits = run(index, "hiking trips", scopes={"user_id": "alice"})
    assert sorted(h.rowid for h in hits) == sorted([alice, alice_work])
    hits = run(index, "hiking trips", scopes={"user_id": "alice"}, filters={"kind": {"ne": "money"}})
    assert [h.rowid for h in hits] == [alice]
    assert all("json_extract" in where for _, where, _ in index.calls[-2:])
    hits = run(index, "hiking trips", filters={"OR": [{"user_id": "bob"}, {"kind": "money"}]})
    assert len(hits) == 2 and alice not in [h.rowid for h in hits]


def test_threshold_drops_weak_hits_with_and_without_a_reranker():
    index = SqlIndex()
    strong = index.add("the wifi password is hunter2")
    weak = index.add("the office has wifi")
    assert {h.rowid for h in run(index, "wifi password", reranker=OverlapReranker())} == {strong, weak}
    hits = run(index, "wifi password", reranker=OverlapReranker(), score_threshold=0.75)
    assert [h.rowid for h in hits] == [strong]
    assert hits[0].explain["relevance_source"] == "cross-encoder" and hits[0].relevance == 1.0
    # Without a cross-encoder the untouched default threshold (0.35) gives way to one that drops only
    # junk: here a memory sharing no word with the query...
    index.add("paris is the capital of france")
    assert {h.rowid for h in run(index, "wifi password")} == {strong, weak}
    # ...while an explicit threshold applies to the fallback relevance.
    best = max(h.relevance for h in run(index, "wifi password"))
    assert [h.rowid for h in run(index, "wifi password", score_threshold=best - 1e-6)] == [strong]


def test_reranker_order_wins_over_fusion():
    index = SqlIndex()
    a = index.add("paris paris paris trip notes")
    b = index.add("trip to paris with anna in may")
    hits = run(index, "trip to paris with anna", reranker=OverlapReranker(), recency_weight=0.0, mmr_lambda=1.0)
    assert hits[0].rowid == b and hits[1].rowid == a


def test_bad_input_and_bad_reranker():
    index = SqlIndex()
    index.add("something")
    for query in ("", "   ", None):
        with pytest.raises(UsageError, match="empty"):
            run(index, query)
    with pytest.raises(UsageError):
        run(index, "something", filters={"x": {"regex": "a"}})

    class Broken:
        def score(self, query, texts):
            return [1.5 for _ in texts]

    with pytest.raises(EmbeddingError, match="reranker"):
        run(index, "something", reranker=Broken())


def test_nothing_found_and_lane_switched_off():
    index = SqlIndex()
    assert run(index, "anything") == []
    rowid = index.add("zebra crossing")
    index.add("unrelated words here")
    hits = run(index, "zebra", dense_weight=0.0)
    assert [h.rowid for h in hits] == [rowid]
    assert all(kind == "lexical" for kind, _, _ in index.calls[-2:])


def test_conversations_for():
    assert conversations_for("work") == ["work", "global"]
    assert conversations_for("global") == ["global"]
    assert conversations_for(None) is None


# -- against the real index (sqlite-vec + FTS5) ---------------------------------------------------------

@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from memvault.index.rows import IndexRow
    from memvault.index.store import IndexStore
    from memvault.vault.format.entry import Entry

    index = IndexStore(tmp_path_factory.mktemp("index") / "index.sqlite", f"words:{DIMS}", DIMS)
    index.embedder = WordEmbedder()
    entries = [
        Entry("Alice is allergic to peanuts", conversation_id="work", user_id="alice",
              metadata={"tags": ["health", "food"], "priority": 2}, created_at=NOW - timedelta(days=3)),
        Entry("Alice prefers peanuts-free snacks at work", conversation_id="work", user_id="alice",
              metadata={"tags": ["food"], "priority": 1}, created_at=NOW - timedelta(days=200)),
        Entry("Bob is allergic to cats", conversation_id="work", user_id="bob", created_at=NOW - timedelta(days=1)),
        Entry("Peanuts are legumes, not nuts", conversation_id="global", created_at=NOW - timedelta(days=50)),
        Entry("Summary: alice and peanuts", role="summary", conversation_id="work", user_id="alice"),
        Entry("Peanuts again elsewhere", conversation_id="other", user_id="alice"),
    ]
    rows = [IndexRow.from_entry(e, f"entries/{e.conversation_id}/{e.id}.md", e.hash) for e in entries]
    index.upsert(rows, list(index.embedder.embed([e.text for e in entries])))
    yield index
    index.close()


def test_real_index_scopes_conversations_and_summaries(store):
    hits = run(store, "allergic to peanuts", scopes={"user_id": "alice"}, top_k=5)
    assert {h.conversation_id for h in hits} == {"work"}  # alice's; global has no user; other not asked
    assert "Alice is allergic to peanuts" == hits[0].text and hits[0].explain["dense_rank"] == 1
    hits = run(store, "peanuts", top_k=10)
    texts = {h.text for h in hits}
    assert "Peanuts are legumes, not nuts" in texts and not any(t.startswith("Summary") for t in texts)
    assert "Peanuts again elsewhere" not in texts
    assert any(h.lexical is not None for h in hits) and all(-1.0 <= h.dense <= 1.0 for h in hits)


@pytest.mark.parametrize("filters, expected", [
    ({"tags": {"contains": "health"}}, {"Alice is allergic to peanuts"}),
    ({"priority": {"lt": 2}}, {"Alice prefers peanuts-free snacks at work"}),
    ({"created_at": {"gte": (NOW - timedelta(days=100)).isoformat()}, "user_id": {"in": ["alice", "bob"]}},
     {"Alice is allergic to peanuts", "Bob is allergic to cats"}),
    ({"NOT": {"user_id": "*"}}, {"Peanuts are legumes, not nuts"}),
    ({"OR": [{"text": {"icontains": "CATS"}}, {"tags": {"contains": "health"}}]},
     {"Alice is allergic to peanuts", "Bob is allergic to cats"}),
])
def test_real_index_applies_filters_in_both_lanes(store, filters, expected):
    hits = run(store, "allergic peanuts cats legumes", filters=filters, top_k=10, score_threshold=0.0)
    assert {h.text for h in hits} == expected


def test_real_index_recency_changes_the_order(store):
    query = "alice prefers snacks"
    old, new = "Alice prefers peanuts-free snacks at work", "Alice is allergic to peanuts"
    plain = run(store, query, scopes={"user_id": "alice"}, recency_weight=0.0, mmr_lambda=1.0)
    assert [h.text for h in plain] == [old, new]
    fresh = run(store, query, scopes={"user_id": "alice"}, recency_weight=0.9, mmr_lambda=1.0)
    assert [h.text for h in fresh] == [new, old]
