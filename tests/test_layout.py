from pathlib import PurePosixPath

import pytest

from memvault.errors import UnsafePathError
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry


@pytest.mark.parametrize("name", ["../etc", "a/b", "a\\b", "/abs", ".hidden", "", "  ", "con", "x" * 101,
                                  "new\nline", "a b", "nul\x00"])
def test_unsafe_conversation_names_are_refused(name):
    with pytest.raises(UnsafePathError):
        layout.check_conversation(name)


@pytest.mark.parametrize("name", ["default", "work-2024", "alice_notes", "日本語", "café.v2"])
def test_ordinary_names_are_accepted(name):
    assert layout.check_conversation(name) == name


@pytest.mark.parametrize("text", ["../x", "abc/def", "zz", "", "1234" * 10])
def test_ids_must_be_hex_and_dashes(text):
    with pytest.raises(UnsafePathError):
        layout.check_id_prefix(text)


def test_paths_follow_the_documented_layout():
    fact = Entry("x", conversation_id="work")
    assert str(layout.relative_path(fact)).startswith("entries/work/facts/")
    assert str(layout.relative_path(fact)).endswith(f"__{fact.id}.md")
    turn = Entry("x", role="assistant", conversation_id="work")
    assert "/turns/assistant/" in str(layout.relative_path(turn))
    summary = Entry("x", role="summary", conversation_id="work")
    assert str(layout.relative_path(summary)) == "entries/work/summaries/summary.md"
    gone = fact.replace(deleted_at=fact.created_at)
    assert str(layout.relative_path(gone)).startswith("entries/work/deleted/facts/")


def test_facts_turns_and_sessions_go_in_the_day_folder_of_their_stamp_rules_and_the_summary_do_not():
    from datetime import datetime, timezone

    moment = datetime(2026, 3, 5, 23, 59, 59, 999000, tzinfo=timezone.utc)
    day = "2026/03/05/20260305T235959999Z__"
    for role, kind in (("memory", "facts"), ("user", "turns/user"), ("assistant", "turns/assistant"),
                       ("session", "sessions")):
        entry = Entry("x", role=role, conversation_id="work", created_at=moment)
        rel = layout.relative_path(entry)
        assert str(rel) == f"entries/work/{kind}/{day}{entry.id}.md"
        assert layout.kind_of(rel) == kind and layout.conversation_folder_of(rel) == "work"
        flat = PurePosixPath(f"entries/work/{kind}/{rel.name}")
        assert layout.kind_of(flat) == kind and layout.dated_path(flat) == rel  # an older vault's file
        assert layout.dated_path(rel) is None  # there already
        tomb = layout.tombstone_path(rel, entry)
        assert str(tomb) == f"entries/work/deleted/{kind}/{day}{entry.id}.md" and layout.kind_of(tomb) == kind
    rule = Entry("x", role="rule", conversation_id="work", created_at=moment)
    assert str(layout.relative_path(rule)) == f"entries/work/rules/20260305T235959999Z__{rule.id}.md"
    assert layout.dated_path(layout.relative_path(rule)) is None
    assert layout.dated_path(PurePosixPath("entries/work/facts/note.md")) is None  # no stamp: stays
    assert layout.kind_of(PurePosixPath("entries/work/summaries/2026/03/05/x.md")) == "summaries/2026/03/05"  # not read
    assert layout.kind_of(PurePosixPath("entries/deleted/My_Chat/facts/2026/03/05/x.md")) == "facts"  # agent-cli


def test_an_entry_with_a_forged_id_cannot_name_a_path():
    with pytest.raises(UnsafePathError):
        layout.relative_path(Entry("x", id="../../etc/passwd"))


def test_scope_folders_are_readable_and_safe():
    assert layout.scope_conversation("alice", None, None) == "user-alice"
    folder = layout.scope_conversation("a/../b", "bot", "r1")  # changed by the slug: tagged with a hash
    assert folder.startswith("user-a_.._b-") and folder.endswith("_+agent-bot+run-r1")
    layout.check_conversation(layout.scope_conversation("../../x", None, None))
    assert layout.check_conversation(layout.scope_conversation("alice", "bot", "r1")) == "user-alice+agent-bot+run-r1"
