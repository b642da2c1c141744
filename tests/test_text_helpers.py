"""One home each: chat message text, scopes, times (issue 12 item 8). Where the twins disagreed,
these tests pin the behaviour chosen."""

from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from memvault.converse import MemoryContext, inject
from memvault.core.messages import chat_of, last_user_text, message_text
from memvault.curate.extract import split_latest
from memvault.errors import EntryFormatError, UsageError
from memvault.retrieve.filters import scope_where, to_epoch
from memvault.vault.format.entry import iso_time, parse_time
from memvault.vault.format.fields import check_scopes

IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}


def parts(*items):
    return {"role": "user", "content": list(items)}


# -- message text ----------------------------------------------------------------------------------
def test_text_parts_are_joined_and_other_parts_leave_no_blank_line():
    message = parts({"type": "text", "text": "look at"}, IMAGE, {"type": "text", "text": "this"})
    assert message_text(message) == "look at\nthis"


def test_a_part_with_text_and_no_type_is_text_and_a_typed_non_text_part_is_not():
    message = parts({"text": "plain"}, {"type": "input_audio", "text": "not a text part"}, {"type": "text"})
    assert message_text(message) == "plain"


@pytest.mark.parametrize(("content", "text"), [(None, ""), ("as is", "as is"), ([], ""), (42, "42")])
def test_content_shapes(content, text):
    assert message_text({"role": "user", "content": content}) == text


def test_last_user_text_is_the_last_user_message_read_the_same_way():
    messages = [parts({"type": "text", "text": "first"}), {"role": "assistant", "content": "reply"},
                parts(IMAGE, {"type": "text", "text": "second"}), {"role": "assistant", "content": "again"}]
    assert last_user_text(messages) == "second"
    assert split_latest(chat_of(messages))[0] == "second"  # extraction reads what core read, the same way
    assert last_user_text([{"role": "system", "content": "s"}]) == ""


def test_injection_reads_the_message_as_extraction_does():
    injected = inject([parts({"type": "text", "text": "hi"}, IMAGE)], MemoryContext())
    assert injected[-1]["content"].endswith("Current message: hi")


# -- scopes ----------------------------------------------------------------------------------------
def test_search_and_writes_share_one_scope_rule():
    # The filter twin refused "" and accepted 5,000 characters; writes skipped "" and capped at 200.
    assert scope_where(None, {"user_id": "", "agent_id": None}) == ("e.role <> 'summary'", [])
    with pytest.raises(UsageError, match="at most 200 printable"):
        scope_where(None, {"user_id": "x" * 201})
    with pytest.raises(UsageError, match="at most 200 printable"):
        scope_where(None, {"user_id": "a\nb"})
    assert scope_where(None, {"run_id": 7}) == ("e.role <> 'summary' AND e.run_id = ?", ["7"])


def test_check_scopes_refuses_unknown_keys_and_lone_surrogates():
    with pytest.raises(UsageError, match="unknown scope 'org_id'"):
        check_scopes({"org_id": "x"})
    with pytest.raises(UsageError, match="scope user_id"):
        check_scopes({"user_id": "a\ud800"})
    assert check_scopes({"user_id": "alice", "run_id": ""}) == {"user_id": "alice"}


# -- times -----------------------------------------------------------------------------------------
def test_one_time_parser_for_files_and_filters():
    utc = datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    for text in ("2024-01-02T03:04:05Z", "2024-01-02T03:04:05+00:00", " 2024-01-02T03:04:05 "):
        assert iso_time(text) == utc
        assert to_epoch(text) == utc.timestamp()
    assert iso_time(date(2024, 1, 2)) == datetime(2024, 1, 2, tzinfo=timezone.utc)
    assert parse_time(date(2024, 1, 2), "created_at", "f.md") == datetime(2024, 1, 2, tzinfo=timezone.utc)


def test_each_edge_keeps_its_own_error():
    with pytest.raises(UsageError, match="created_at: not an ISO 8601 time"):
        to_epoch("yesterday", "created_at")
    with pytest.raises(EntryFormatError, match="not an ISO 8601 time"):
        parse_time("yesterday", "created_at", "f.md")
    with pytest.raises(ValueError):
        iso_time(3.5)


# -- JSON filters, exception lines -----------------------------------------------------------------
def test_filters_from_json_one_parser_for_the_cli_and_the_rest_api():
    from memvault.retrieve.filters import filter_from_json

    assert filter_from_json(None) is None and filter_from_json("") is None
    assert filter_from_json('{"topic": "food"}') == {"topic": "food"}
    with pytest.raises(UsageError, match=r"^--filter is not valid JSON"):
        filter_from_json("{topic", "--filter")
    with pytest.raises(UsageError, match=r"^filters must be a JSON object"):
        filter_from_json("[1, 2]")
    with pytest.raises(UsageError, match=r"^filters is nested too deeply"):  # json.loads recurses once per level
        filter_from_json('{"a":' * 100_000 + "1" + "}" * 100_000)


def test_first_line_of_an_exception_and_the_servers_clipped_line():
    from memvault.errors import first_line
    from memvault.server.errors import clipped_line

    assert first_line(RuntimeError("  model failed\n  at layer 3\n")) == "model failed"
    assert first_line(RuntimeError()) == "RuntimeError"
    assert clipped_line("a\n  b\tc") == "a b c"
    assert clipped_line("x" * 400) == "x" * 297 + "..."


def test_the_last_user_message_is_found_one_way_for_injection_extraction_and_turns():
    from memvault.curate.extract import last_user_index

    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                {"role": "user", "content": "c"}, {"role": "tool", "content": "d"}]
    assert last_user_index(messages) == 2
    assert last_user_index([{"role": "system", "content": "s"}]) is None and last_user_index([]) is None
    injected = inject(messages, MemoryContext())
    assert [m["content"] for m in injected[1:]][:2] == ["a", "b"] and injected[3]["content"].endswith("c")
