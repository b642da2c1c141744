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


def test_an_entry_with_a_forged_id_cannot_name_a_path():
    with pytest.raises(UnsafePathError):
        layout.relative_path(Entry("x", id="../../etc/passwd"))


def test_scope_folders_are_readable_and_safe():
    assert layout.scope_conversation("alice", None, None) == "user-alice"
    folder = layout.scope_conversation("a/../b", "bot", "r1")  # changed by the slug: tagged with a hash
    assert folder.startswith("user-a_.._b-") and folder.endswith("_+agent-bot+run-r1")
    layout.check_conversation(layout.scope_conversation("../../x", None, None))
    assert layout.check_conversation(layout.scope_conversation("alice", "bot", "r1")) == "user-alice+agent-bot+run-r1"
