"""Retrieval quality features: the date an entry was written is searchable; the day, the length and
the speaker count in the relevance."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memvault.index import db
from memvault.index.rows import IndexRow
from memvault.index.store import IndexStore
from memvault.index.text import date_words
from memvault.vault.format.entry import Entry
from tests.support.fakes import WordEmbedder

DIMS = 32


@pytest.fixture
def index(tmp_path):
    store = IndexStore.open(tmp_path / ".memvault", "test:32", DIMS)
    yield store
    store.close()


def put(index, text, when, role="memory", conversation="chat"):
    entry = Entry(text=text, conversation_id=conversation, role=role, created_at=when)
    row = IndexRow.from_entry(entry, f"entries/{conversation}/{role}/{entry.id}.md", "h-" + entry.id)
    return index.upsert([row], list(WordEmbedder(dims=DIMS).embed([text])))[0]


def found(index, query, k=10):
    return [rowid for rowid, _ in index.lexical(query, k)]


def test_date_words_are_the_utc_calendar_day():
    assert date_words(datetime(2022, 11, 9, 23, 30, tzinfo=timezone.utc).timestamp()) == "9 november 2022"
    assert date_words(datetime(2023, 5, 8, 0, 5, tzinfo=timezone.utc).timestamp()) == "8 may 2023"


def test_a_question_naming_a_date_finds_what_was_said_that_day(index):
    november = put(index, "Nate: I tried out some cooking, homemade coconut ice cream",
                   datetime(2022, 11, 9, 13, 0, tzinfo=timezone.utc))
    april = put(index, "Nate: I tried out some cooking, homemade coconut ice cream",
                datetime(2022, 4, 2, 13, 0, tzinfo=timezone.utc))
    assert found(index, "What did Nate cook on 9 November, 2022?")[0] == november
    assert found(index, "What did Nate cook in April 2022?")[0] == april


def test_an_index_without_the_date_column_is_refilled_on_open(index, tmp_path):
    rowid = put(index, "the harbour walk", datetime(2023, 8, 14, tzinfo=timezone.utc))
    # The FTS table of the previous lexical version: two columns, no date.
    index.conn.execute("DROP TABLE entries_fts")
    index.conn.execute("CREATE VIRTUAL TABLE entries_fts USING fts5(body, context, content='', contentless_delete=1)")
    db.set_meta(index.conn, "lexical", "2:porter unicode61 remove_diacritics 2")
    index.close()
    reopened = IndexStore.open(tmp_path / ".memvault", "test:32", DIMS)
    try:
        assert found(reopened, "august 2023") == [rowid]
        assert found(reopened, "harbour") == [rowid]
    finally:
        reopened.close()


# -- the day share: other entries of a good hit's day (retrieve.scoring.DAY_SLOPE) --------------------
NOW = datetime(2025, 6, 20, 12, 0, tzinfo=timezone.utc)
EARLIER_DAY = datetime(2025, 6, 10, 15, 0, tzinfo=timezone.utc)
LATER_DAY = datetime(2025, 6, 15, 15, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def minilm():
    from memvault.models import load_embedder

    return load_embedder("minilm")


def search_facts(tmp_path, minilm, facts, query):
    """The default pipeline over a real index of these (text, created_at) facts, with the real model."""
    from memvault.retrieve import conversations_for, search
    from memvault.settings import RetrievalSettings

    store = IndexStore.open(tmp_path / "day", minilm.identity, minilm.dims)
    try:
        rows = []
        for text, when, *actor in facts:
            entry = Entry(text=text, conversation_id="chat", role="memory", created_at=when,
                          actor_id=actor[0] if actor else None)
            rows.append(IndexRow.from_entry(entry, f"entries/chat/memory/{entry.id}.md", "h-" + entry.id))
        rowids = store.upsert(rows, list(minilm.embed([text for text, *_ in facts])))
        hits = search(store, minilm, None, query, RetrievalSettings(), conversations_for("chat"), now=NOW)
        return rowids, hits
    finally:
        store.close()


def test_a_fact_of_the_day_a_question_names_ranks_above_its_newer_twin(tmp_path, minilm):
    (workshop, then, later), hits = search_facts(tmp_path, minilm, [
        ("Caroline went to a pottery workshop", EARLIER_DAY),
        ("Caroline shaped a clay bowl", EARLIER_DAY),
        ("Caroline shaped a clay bowl", LATER_DAY),  # same words, newer: recency alone would put it first
    ], "What did Caroline make at the pottery workshop?")
    order = [hit.rowid for hit in hits]
    assert order[0] == workshop
    assert order.index(then) < order.index(later)
    by_rowid = {hit.rowid: hit for hit in hits}
    assert by_rowid[then].relevance > by_rowid[later].relevance
    assert by_rowid[then].explain["gate"] == pytest.approx(by_rowid[later].explain["gate"], abs=1e-6)


def test_an_unrelated_fact_of_the_same_day_is_not_lifted_over_the_threshold(tmp_path, minilm):
    (password, paris), hits = search_facts(tmp_path, minilm, [
        ("The wifi password is hunter2", EARLIER_DAY),
        ("Paris is the capital of France", EARLIER_DAY),
    ], "wifi password")
    assert [hit.rowid for hit in hits] == [password]


def test_fallback_relevance_rises_with_the_day_share_never_below_the_own_share():
    from memvault.retrieve.scoring import fallback_relevance

    assert fallback_relevance(0.3, 0.0, 1.0) > fallback_relevance(0.3, 0.0, 0.5) > fallback_relevance(0.3, 0.0, 0.0)
    assert fallback_relevance(0.3, 0.8, 0.0) == fallback_relevance(0.3, 0.8) == fallback_relevance(0.3, 0.8, 0.8)
    assert fallback_relevance(0.3, 0.0, 9.0) == fallback_relevance(0.3, 0.0, 1.0)  # clamped to [0, 1]


def test_relevance_rises_with_length_against_the_other_candidates():
    from memvault.retrieve.scoring import fallback_relevance, length_excess

    longer = length_excess(["Yes!", "The pottery class? Yes!", "I made my first clay bowl at the pottery class"])
    assert longer[0] < longer[1] == 0.0 < longer[2]  # against the median candidate
    assert length_excess(["a b", "c d"]) == [0.0, 0.0] and length_excess([]) == []
    # A vault of short facts keeps its scale: only the difference from the other candidates counts.
    assert fallback_relevance(0.3, 0.5, longer=0.0) == fallback_relevance(0.3, 0.5)
    plain = fallback_relevance(0.3, 0.5)
    assert fallback_relevance(0.3, 0.5, longer=-0.5) < plain < fallback_relevance(0.3, 0.5, longer=0.5)


def test_a_question_naming_a_speaker_prefers_what_that_speaker_said(tmp_path, minilm):
    (hers, his, unnamed), hits = search_facts(tmp_path, minilm, [
        ("I painted a sunset over the lake for my art class", EARLIER_DAY, "Caroline"),
        ("I painted a sunset over the lake, my first painting for the art class!", EARLIER_DAY, "Melanie"),
        ("Painting a sunset over a lake is hard", EARLIER_DAY),
    ], "What did Caroline paint for her art class?")
    by_rowid = {hit.rowid: hit for hit in hits}
    assert hits[0].rowid == hers
    assert by_rowid[his].explain["other_speaker"] is True
    assert by_rowid[hers].explain["other_speaker"] is False and by_rowid[unnamed].explain["other_speaker"] is False
    # Without a named speaker nobody is "another": the same turns, asked about nobody in particular.
    _, plain = search_facts(tmp_path / "plain", minilm, [
        ("I painted a sunset over the lake for my art class", EARLIER_DAY, "Caroline"),
        ("I painted a sunset over the lake, my first painting for the art class!", EARLIER_DAY, "Melanie"),
    ], "What was painted for the art class?")
    assert not any(hit.explain["other_speaker"] for hit in plain)


def test_named_actors_match_whole_words_of_the_query():
    from memvault.retrieve.scoring import named_actors

    actors = {"Caroline", "Mel", "Dr. Ng", None, "", 7}
    assert named_actors("What did caroline and DR NG discuss?", actors) == {"Caroline", "Dr. Ng"}
    assert named_actors("What did Melanie say?", actors) == set()  # "Mel" is not a word of the query
