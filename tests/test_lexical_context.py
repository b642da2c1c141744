"""A turn's lexical context: the words of its neighbouring turns find it, below turns that hold them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memvault.index import db
from memvault.index.rows import IndexRow
from memvault.index.store import IndexStore
from memvault.index.text import CONTEXT_TURNS
from memvault.vault.format.entry import Entry
from tests.support.fakes import WordEmbedder

DIMS = 32
START = datetime(2025, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def index(tmp_path):
    store = IndexStore.open(tmp_path / ".memvault", "test:32", DIMS)
    yield store
    store.close()


def row_for(text, minute, conversation="chat", role="user", entry_id=None):
    entry = Entry(text=text, conversation_id=conversation, role=role, created_at=START + timedelta(minutes=minute),
                  **({"id": entry_id} if entry_id else {}))
    return IndexRow.from_entry(entry, f"entries/{conversation}/{role}/{entry.id}.md", "h-" + entry.id)


def put(index, *rows):
    return index.upsert(list(rows), list(WordEmbedder(dims=DIMS).embed([r.text for r in rows])))


def found(index, query, k=10):
    return [rowid for rowid, _ in index.lexical(query, k)]


def test_a_turn_is_found_by_its_neighbours_words_below_the_turn_that_says_them(index):
    question, answer, later = put(index, row_for("Did you go hiking in the Alps?", 0),
                                  row_for("Yes, it was wonderful!", 1), row_for("Let's talk later.", 2))
    assert found(index, "alps hiking") == [question, answer, later]  # later is 2 turns on: still context
    hits = dict(index.lexical("alps", 5))
    assert hits[question] > hits[answer] > 0


def test_context_reaches_only_nearby_turns_of_the_same_conversation(index):
    rows = [row_for(f"filler number {i}", i) for i in range(CONTEXT_TURNS + 2)]
    rows[0] = row_for("zebra stripes", 0)
    rowids = put(index, *rows)
    other = put(index, row_for("nothing here", 1, conversation="elsewhere"))[0]
    fact = put(index, row_for("a fact in between", 0.5, role="memory"))[0]
    hits = found(index, "zebra")
    assert hits[0] == rowids[0] and set(hits[1:]) == set(rowids[1:CONTEXT_TURNS + 1])
    assert rowids[CONTEXT_TURNS + 1] not in hits and other not in hits and fact not in hits
    assert found(index, "between") == [fact]  # facts are neither given nor used as context


def test_neighbours_follow_inserts_out_of_order_edits_and_removals(index):
    first, last = put(index, row_for("opening words", 0), row_for("closing words", 10))
    middle_row = row_for("quokka sighting", 5)
    (middle,) = put(index, middle_row)
    assert set(found(index, "quokka")) == {first, middle, last}
    put(index, row_for("kangaroo sighting", 5, entry_id=middle_row.id))  # the text of the middle turn edited
    assert found(index, "quokka") == [] and set(found(index, "kangaroo")) == {first, middle, last}
    index.remove([middle_row.id])
    assert found(index, "kangaroo") == [] and found(index, "opening") == [first, last]


def test_a_changed_lexical_version_rebuilds_contexts(index, tmp_path):
    first, second = put(index, row_for("walrus talk", 0), row_for("indeed", 1))
    db.set_meta(index.conn, "lexical", "old")
    index.conn.execute("DELETE FROM entries_fts")
    index.close()
    reopened = IndexStore.open(tmp_path / ".memvault", "test:32", DIMS)
    try:
        assert found(reopened, "walrus") == [first, second]
    finally:
        reopened.close()
