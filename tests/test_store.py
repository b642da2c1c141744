import subprocess

import pytest

from memvault.errors import AmbiguousIdError, EntryFormatError, NotFoundError, VaultError
from memvault.vault.format.entry import Entry
from memvault.vault.write.store import Vault


@pytest.fixture
def vault(tmp_path):
    return Vault.init(tmp_path / "vault")


def add(vault, text, **fields):
    entry = Entry(text, **fields)
    with vault.transaction("add", f"add {text}", entry.conversation_id) as tx:
        tx.write(entry, event="ADD")
    return entry


def git(vault, *args):
    return subprocess.run(["git", *args], cwd=vault.root, capture_output=True, text=True, check=True).stdout


def test_init_makes_a_repository_that_ignores_the_index(vault):
    assert (vault.root / ".git").is_dir()
    assert ".memvault/" in (vault.root / ".gitignore").read_text()
    assert git(vault, "log", "--oneline").strip().endswith("memvault init")
    Vault.init(vault.root)  # idempotent: no second line in .gitignore, no empty commit
    assert (vault.root / ".gitignore").read_text().count(".memvault/") == 1
    assert len(git(vault, "log", "--oneline").splitlines()) == 1


def test_opening_again_with_a_persons_untracked_file_is_no_error(vault):
    (vault.root / "entries" / "draft.txt").write_text("not committed yet")
    Vault.init(vault.root)  # git says "nothing added to commit but untracked files present": no change
    assert len(git(vault, "log", "--oneline").splitlines()) == 1
    assert git(vault, "status", "--porcelain", "--untracked-files=all").split() == ["??", "entries/draft.txt"]


def test_a_write_is_one_commit_of_exactly_its_file(vault):
    entry = add(vault, "tea")
    files = git(vault, "show", "--name-only", "--format=", "HEAD").split()
    assert files == [str(vault.path_of(entry.id))]
    assert files[0].startswith("entries/default/facts/") and entry.created_at.strftime("/%Y/%m/%d/") in files[0]
    assert not git(vault, "status", "--porcelain")


def test_resolve_accepts_unique_prefixes_and_reports_ambiguity(vault):
    a = add(vault, "one", id="aaaa1111-0000-4000-8000-000000000000")
    add(vault, "two", id="aaaa2222-0000-4000-8000-000000000000")
    assert vault.resolve("aaaa1")[1].id == a.id
    with pytest.raises(AmbiguousIdError, match="ambiguous"):
        vault.resolve("aaaa")
    with pytest.raises(NotFoundError):
        vault.resolve("bbbb")


def test_soft_delete_moves_to_a_tombstone_and_keeps_the_text(vault):
    entry = add(vault, "coffee")
    with vault.transaction("delete", "rm", "default") as tx:
        tx.soft_delete(entry, replaced_by="b" * 8)
    assert list(vault.entry_files()) == []
    rel, tomb = vault.resolve(entry.id[:8])
    assert "deleted/facts" in str(rel) and tomb.text == "coffee" and tomb.deleted_at and tomb.replaced_by


def test_a_failure_inside_a_transaction_puts_every_file_back(vault):
    kept = add(vault, "keep me")
    before = (vault.root / vault.path_of(kept.id)).read_bytes()
    with pytest.raises(RuntimeError):
        with vault.transaction("mixed", "boom", "default") as tx:
            tx.write(Entry("new one"), event="ADD")
            tx.write(kept.replace(text="changed"), event="UPDATE")
            tx.soft_delete(kept)
            raise RuntimeError("crash half-way")
    assert [vault.read(r).text for r in vault.entry_files()] == ["keep me"]
    assert (vault.root / vault.path_of(kept.id)).read_bytes() == before
    assert not git(vault, "status", "--porcelain")


def test_hand_written_and_broken_files_are_read_or_reported_never_touched(vault):
    folder = vault.root / "entries" / "notes" / "facts"
    folder.mkdir(parents=True)
    (folder / "idea.md").write_text("A plain note a person wrote.\n")
    (folder / "bad.md").write_text("---\nid: [oops\n---\ntext\n")
    (folder / "latin1.md").write_bytes("---\nid: x\n---\ncaf\xe9".encode("latin-1"))
    results = {rel.name: item for rel, item in vault.iter_entries()}
    assert results["idea.md"].text == "A plain note a person wrote." and results["idea.md"].conversation_id == "notes"
    assert isinstance(results["bad.md"], EntryFormatError) and "broken front matter" in str(results["bad.md"])
    assert isinstance(results["latin1.md"], EntryFormatError) and "UTF-8" in str(results["latin1.md"])
    assert (folder / "bad.md").read_text() == "---\nid: [oops\n---\ntext\n"


def test_a_user_repository_is_used_as_is_and_unrelated_changes_are_left_alone(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "notes.txt").write_text("mine\n")
    subprocess.run(["git", "-c", "user.name=u", "-c", "user.email=u@x", "add", "notes.txt"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-qm", "user"], cwd=repo, check=True)
    (repo / "notes.txt").write_text("mine, staged edit\n")
    subprocess.run(["git", "add", "notes.txt"], cwd=repo, check=True)
    (repo / "scratch.txt").write_text("untracked\n")
    vault = Vault.init(repo / "memory", use_enclosing_repo=True)  # asked for: issue 15
    add(vault, "a memory")
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
    assert "M  notes.txt" in status and "?? scratch.txt" in status
    committed = subprocess.run(["git", "show", "--name-only", "--format=", "HEAD"], cwd=repo, capture_output=True,
                               text=True).stdout.split()
    assert len(committed) == 1 and committed[0].startswith("memory/entries/default/facts/")


def test_a_vault_path_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(VaultError, match="is a file"):
        Vault.init(tmp_path / "file")
    with pytest.raises(VaultError, match="no vault"):
        Vault.open(tmp_path / "missing")


def test_detached_or_conflicted_repositories_refuse_writes(vault):
    add(vault, "first")
    head = git(vault, "rev-parse", "HEAD").strip()
    git(vault, "checkout", "-q", head)
    with pytest.raises(VaultError, match="detached HEAD"):
        add(vault, "second")
    git(vault, "checkout", "-q", "main")
    (vault.root / ".git" / "MERGE_HEAD").write_text(head + "\n")
    with pytest.raises(VaultError, match="middle of a merge"):
        add(vault, "third")
    assert [vault.read(r).text for r in vault.entry_files()] == ["first"]
