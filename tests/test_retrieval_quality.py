"""Retrieval quality features of the lexical lane: the date an entry was written is searchable."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memvault.index import db
from memvault.index.store import IndexRow, IndexStore
from memvault.index.text import date_words
from memvault.vault.entry import Entry
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
