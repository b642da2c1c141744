"""An erase rewrites history only from the oldest commit it touches (memvault/vault/forget/erase.py,
`rewritten_refs`): the commits before it keep their ids, and nothing erased is left anywhere, also when
an older commit quotes the memory in its message."""

from __future__ import annotations

import subprocess

import pytest

from memvault.vault.forget import erase
from tests.test_erase import git, leftovers, open_vault

pytestmark = pytest.mark.timeout(600)

PASSPORT = "Frank's first passport number was K-55-ALPHA-991."


def commits(root) -> list[str]:
    return git(root, "rev-list", "--reverse", "HEAD").decode().split()


def hand_commit(root, rel: str, text: str, message: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text)
    git(root, "add", rel)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=me", "-c", "user.email=me@x", "commit", "-q", "-m",
                    message], check=True)


@pytest.fixture
def vault(tmp_path):
    """(its folder, the open Memvault) of a new vault, closed after the test."""
    root = tmp_path / "vault"
    m = open_vault(root)
    yield root, m
    m.close()


@pytest.fixture
def ranges(monkeypatch):
    """What each history rewrite was given to rewrite (fast-export's revisions; empty: every commit)."""
    given = []
    real = erase.rewritten_refs

    def recorded(root, selection):
        given.append(real(root, selection))
        return given[-1]

    monkeypatch.setattr(erase, "rewritten_refs", recorded)
    return given


def test_a_recent_memory_is_erased_without_rewriting_the_commits_before_it(vault, ranges):
    root, m = vault
    older = [m.add_verbatim(f"Older note {n} about the harbour.", conversation="c") for n in range(3)]
    before = commits(root)
    gone = m.add_verbatim(PASSPORT, conversation="c")
    kept = m.add_verbatim("Frank likes sailing on Sundays.", conversation="c")
    m.update(gone.id, "Frank's passport number is now K-77-BRAVO-112.")
    result = m.erase(ids=[gone.id])
    after = commits(root)
    assert after[:len(before)] == before  # the older commits as they were, ids and all
    assert ranges == [["refs/heads/main", f"^{before[-1]}"]]
    assert result.rewritten == 3  # the add (pruned), the add after it, the update
    for text in ("K-55-ALPHA-991", "K-77-BRAVO-112", gone.id):
        assert leftovers(root, text) == [], text
    assert [m.get(e.id)[1].text for e in (*older, kept)] == [
        *(f"Older note {n} about the harbour." for n in range(3)), "Frank likes sailing on Sundays."]


def test_an_older_commit_whose_message_quotes_the_memory_is_rewritten_too(vault, ranges):
    root, m = vault
    m.add_verbatim("Older note about the harbour.", conversation="c")
    first = commits(root)
    hand_commit(root, "notes.txt", "a note beside the vault\n", f"todo: {PASSPORT}\n\nfrom my phone")
    gone = m.add_verbatim(PASSPORT, conversation="c")
    m.erase(ids=[gone.id])
    assert ranges == [["refs/heads/main", f"^{first[-1]}"]]
    assert commits(root)[:len(first)] == first
    assert leftovers(root, "K-55-ALPHA-991") == []
    assert b"from my phone" in git(root, "log", "--format=%B")  # the rest of that message stays


def test_a_file_that_quotes_the_memory_only_lately_keeps_its_older_versions(vault, ranges):
    root, m = vault
    m.add_verbatim("Older note about the harbour.", conversation="c")
    hand_commit(root, "notes/diary.md", "Dear diary, nothing happened today.\n", "diary")
    before = commits(root)
    gone = m.add_verbatim(PASSPORT, conversation="c")
    hand_commit(root, "notes/diary.md", f"Dear diary, nothing happened today.\n\n{PASSPORT}\n", "diary")
    m.erase(ids=[gone.id])
    assert ranges == [["refs/heads/main", f"^{before[-1]}"]]
    assert commits(root)[:len(before)] == before
    assert leftovers(root, "K-55-ALPHA-991") == []
    assert (root / "notes" / "diary.md").read_text().startswith("Dear diary, nothing happened today.")


def moved_after_a_bulk_import(root, m):
    """The passport memory, committed under a message that does not name it (a bulk import's), then moved
    by hand to another day folder (its bytes kept: one blob at two paths, as the move into day folders
    did to every file); returns it."""
    m.add_verbatim("Older note about the harbour.", conversation="c")
    gone = m.add_verbatim(PASSPORT, conversation="c")
    git(root, "-c", "user.name=me", "-c", "user.email=me@x", "commit", "-q", "--amend", "-m", "a bulk import")
    old = m.get(gone.id)[0]
    new = f"{old.parent.parent}/01/{old.name}"
    (root / new).parent.mkdir(parents=True, exist_ok=True)
    git(root, "mv", str(old), new)
    git(root, "-c", "user.name=me", "-c", "user.email=me@x", "commit", "-q", "-m", "moved by hand")
    m.vault.forget_paths()
    return gone


def test_a_memory_moved_since_is_erased_at_its_old_path_too(vault, ranges):
    """git lists a blob once, at its newer path: the commits before the move hold it at the old one."""
    root, m = vault
    gone = moved_after_a_bulk_import(root, m)
    kept = m.add_verbatim("Frank likes sailing on Sundays.", conversation="c")
    result = m.erase(ids=[gone.id])
    assert result.record is not None
    assert leftovers(root, "K-55-ALPHA-991") == []
    assert m.get(kept.id)[1].text == "Frank likes sailing on Sundays."


def test_a_blob_the_partial_rewrite_left_is_caught_and_every_commit_rewritten(vault, ranges, monkeypatch):
    """Should the selection miss a path (here: git's listing of each blob at one path only, as before the
    fix above), the blob is still in the repository once git is cleaned: the erase rewrites every commit."""
    root, m = vault
    real = erase.blob_paths
    monkeypatch.setattr(erase, "blob_paths", lambda *a: list({sha: (sha, path) for sha, path in real(*a)[::-1]}
                                                            .values()))
    gone = moved_after_a_bulk_import(root, m)
    result = m.erase(ids=[gone.id])
    assert len(ranges) == 1 and ranges[0]  # a part of history was rewritten first (then all of it)
    assert result.record is not None and leftovers(root, "K-55-ALPHA-991") == []


def test_turn_files_a_stop_left_uncommitted_are_committed_and_erased_with_the_rest(vault):
    """A proxy's turns written but not committed are history too: erase commits them (found by the
    same git status that checks nothing else is left uncommitted), then selects again."""
    from memvault.vault.format.entry import Entry

    root, m = vault
    m.add_verbatim(f"Frank said: {PASSPORT}", conversation="c", role="user")
    m.write_turns([Entry(text=f"Again: {PASSPORT}", role="user", conversation_id="c")])
    assert "??" in git(root, "status", "--porcelain").decode()
    result = m.erase(matching="K-55-ALPHA-991")
    assert result.roles == {"user": 2} and leftovers(root, "K-55-ALPHA-991") == []
    assert git(root, "status", "--porcelain").decode().strip() == ""
