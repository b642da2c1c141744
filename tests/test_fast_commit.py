"""Commits written with git's plumbing (memvault.vault.fastcommit): one commit of exactly the paths
written, as `commit --only` made it, never taking the user's staged changes or overwriting a commit
made meanwhile. Real git, real files."""

import subprocess

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.vault import fastcommit
from memvault.vault.entry import Entry
from memvault.vault.git import VaultGit


def git(vault, *args) -> str:
    return subprocess.run(["git", *args], cwd=vault, check=True, capture_output=True, text=True).stdout


def open_core(vault) -> Memvault:
    return Memvault.open(settings_module.load(None, {"vault.path": str(vault)}), create=True)


def add(core: Memvault, text: str) -> None:
    core.add_entries([Entry(text, conversation_id="c")], f"memvault add: {text}")


def test_an_add_commits_its_file_alone_without_git_commit(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "first")
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    add(core, "second memory")
    monkeypatch.delenv("GIT_TRACE")
    ran = trace.read_text()
    assert "built-in: git commit-tree" in ran and "built-in: git commit " not in ran  # the plumbing path
    assert git(vault, "status", "--porcelain") == ""  # git's index follows HEAD: nothing looks staged
    assert git(vault, "log", "-1", "--format=%s") == "memvault add: second memory\n"
    assert git(vault, "reflog", "-1", "--format=%gs") == "commit: memvault add: second memory\n"
    changed = git(vault, "show", "--name-only", "--format=", "HEAD").split()
    assert len(changed) == 1 and changed[0].startswith("entries/c/facts/")
    core.close()


def test_the_users_staged_changes_stay_staged_and_out_of_the_commit(tmp_path):
    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "first")
    (vault / "notes.txt").write_text("the user's own work\n")
    git(vault, "add", "notes.txt")
    add(core, "second")
    assert "notes.txt" not in git(vault, "show", "--name-only", "--format=", "HEAD")
    assert git(vault, "diff", "--cached", "--name-only") == "notes.txt\n"  # still staged, as they left it
    core.close()


def test_a_commit_made_meanwhile_is_never_overwritten(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "first")
    real_run = VaultGit.run

    def run(self, *args, **kw):
        if args[0] == "update-ref":  # someone commits between our write-tree and update-ref
            (vault / "theirs.txt").write_text("theirs\n")
            git(vault, "add", "theirs.txt")
            git(vault, "-c", "user.name=them", "-c", "user.email=t@x", "commit", "-qm", "their commit",
                "--", "theirs.txt")
        return real_run(self, *args, **kw)

    monkeypatch.setattr(VaultGit, "run", run)
    add(core, "ours")
    monkeypatch.setattr(VaultGit, "run", real_run)
    subjects = git(vault, "log", "--format=%s").splitlines()
    assert subjects[:2] == ["memvault add: ours", "their commit"]  # theirs kept, ours on top of it
    assert git(vault, "status", "--porcelain") == ""
    core.close()


def test_messages_are_stored_as_git_commit_would_keep_them_but_with_lines_starting_with_hash():
    assert fastcommit.clean_message("\nsubject  \n\n\n\n#tag body\n\n") == "subject\n\n#tag body\n"
