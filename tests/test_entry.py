from datetime import timezone

import pytest

from memvault.errors import EntryFormatError
from memvault.vault.format.entry import Entry, text_hash
from memvault.vault.format.markdown import parse, render


def test_render_then_parse_round_trips_every_field():
    entry = Entry("The user's sister is called Ana.\n\nShe lives in Porto.", conversation_id="family",
                  user_id="alice", agent_id="bot", run_id="r1", metadata={"topic": "family", "n": 3}, source="abc")
    back = parse(render(entry))
    assert back == entry
    assert back.hash == text_hash(entry.text)


def test_front_matter_keeps_a_stable_order_and_the_hash():
    text = render(Entry("hello"))
    keys = [line.split(":")[0] for line in text.split("---")[1].strip().splitlines()]
    assert keys[:6] == ["id", "role", "conversation_id", "created_at", "updated_at", "hash"]


@pytest.mark.parametrize("content, reason", [
    ("---\nid: [unclosed\n---\ntext", "broken front matter"),
    ("---\nrole: memory\nconversation_id: x\ncreated_at: 2024-01-01\n---\ntext", "lacks 'id'"),
    ("---\nid: a\nrole: robot\nconversation_id: x\ncreated_at: 2024-01-01\n---\ntext", "unknown role"),
    ("---\nid: a\nrole: memory\nconversation_id: x\ncreated_at: yesterday\n---\ntext", "not an ISO 8601"),
    ("---\nid: a\nrole: memory\nconversation_id: x\ncreated_at: 2024-01-01\nmetadata: [1]\n---\nt", "mapping"),
    ("just text, no front matter", "no front matter"),
])
def test_broken_files_are_reported_with_the_reason(content, reason):
    with pytest.raises(EntryFormatError, match=reason):
        parse(content, "f.md")


def test_naive_times_written_by_hand_are_read_as_utc():
    entry = parse("---\nid: a\nrole: memory\nconversation_id: x\ncreated_at: 2024-03-01 10:00:00\n---\nhi")
    assert entry.created_at.tzinfo == timezone.utc and entry.created_at.hour == 10


def test_defaults_fill_what_a_hand_written_file_leaves_out():
    defaults = {"id": "11111111-1111-4111-8111-111111111111", "role": "memory", "conversation_id": "notes",
                "created_at": "2024-01-01T00:00:00+00:00"}
    entry = parse("Plain text a person wrote.\n", "n.md", defaults)
    assert (entry.text, entry.conversation_id, entry.id) == ("Plain text a person wrote.", "notes", defaults["id"])
