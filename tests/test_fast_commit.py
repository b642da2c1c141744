"""Commits written with git's plumbing (memvault.vault.git.fastcommit): one commit of exactly the paths
written, as `commit --only` made it, never taking the user's staged changes or overwriting a commit
made meanwhile; its trees the ones git itself would write, git's index following HEAD, a kill
between the index and the ref undone by the next write. Real git, real files."""

import signal
import subprocess
import sys
import textwrap

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.vault.format.entry import Entry
from memvault.vault.git import fastcommit
from memvault.vault.git import objects as git_objects
from memvault.vault.git.repository import VaultGit


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
    ran = [line.split("built-in: git ", 1)[1].split()[0] for line in trace.read_text().splitlines()
           if "built-in: git " in line]
    assert ran == ["update-index"]  # commit and ref written here; no add, write-tree or commit: no index scan
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
    """git's own update-ref (a date in the environment leaves the commit and the move to git)."""
    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "first")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2024-01-02T03:04:05Z")
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


def tree_of_worktree(vault) -> str:
    """The tree git itself writes for the work tree as it is (a scratch index: the real one untouched)."""
    env = {"GIT_INDEX_FILE": str(vault / ".git" / "scratch-index"), "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "add", "-A", "."], cwd=vault, check=True, env=env)
    tree = subprocess.run(["git", "write-tree"], cwd=vault, check=True, env=env, capture_output=True, text=True)
    (vault / ".git" / "scratch-index").unlink()
    return tree.stdout.strip()


def test_trees_written_in_process_are_the_ones_git_writes(tmp_path):
    """Names that sort differently as files and as folders ('foo' the folder sorts as 'foo/', after
    'foo-bar' and 'foo.md'), nested folders made and emptied: the commit's tree is git's, byte for byte."""
    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "first")
    git_ = core.vault.git
    steps = [
        {"foo/a.md": "a", "foo-bar": "b", "foo.md": "c", "foo/deep/x/y.md": "d", "zed": "e"},
        {"foo/deep/x/y.md": None, "foo/a.md": "a2", "foo/deep/z.md": "z"},  # a folder emptied vanishes
        {"foo/a.md": None, "foo/deep/z.md": None},  # 'foo' gone entirely
    ]
    for number, step in enumerate(steps):
        for rel, text in step.items():
            path = vault / rel
            if text is None:
                path.unlink()
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
        sha = git_.commit(list(step), f"step {number}")
        assert sha is not None and git(vault, "rev-parse", "HEAD^{tree}").strip() == tree_of_worktree(vault)
    assert not (vault / "foo").exists() or not any((vault / "foo").rglob("*.md"))
    assert git(vault, "status", "--porcelain") == ""
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=vault, check=True, capture_output=True)
    assert git_.commit(["zed"], "nothing changed") is None  # the same bytes: no commit
    core.close()


def test_objects_are_written_as_git_reads_them(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    vault_git = VaultGit.open(tmp_path)
    sha = git_objects.store(vault_git, b"blob", b"hello\n")
    hashed = subprocess.run(["git", "hash-object", "--stdin"], cwd=tmp_path, input="hello\n", capture_output=True,
                            text=True, check=True).stdout.strip()
    assert sha.hex() == hashed
    assert git(tmp_path, "cat-file", "-p", sha.hex()) == "hello\n"
    assert git_objects.store(vault_git, b"blob", b"hello\n") == sha  # written once


def test_a_large_index_is_made_split_and_stays_consistent(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "first")
    assert not list((vault / ".git").glob("sharedindex.*"))
    monkeypatch.setattr(fastcommit, "SPLIT_INDEX_BYTES", 10)  # this small vault's index counts as large
    add(core, "second")
    assert list((vault / ".git").glob("sharedindex.*"))
    add(core, "third")
    assert git(vault, "status", "--porcelain") == ""
    assert len(git(vault, "ls-files", "entries").split()) == 3
    core.close()


def test_a_split_index_that_grew_is_pushed_into_a_new_shared_part(tmp_path, monkeypatch):
    """A commit of many paths (a move into day folders) leaves them in the split part, which each later
    write would read and rewrite whole: the next write pushes them into a new shared part."""
    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "first")
    monkeypatch.setattr(fastcommit, "SPLIT_INDEX_BYTES", 10)
    add(core, "second")  # split from here on
    index = vault / ".git" / "index"
    small = index.stat().st_size
    monkeypatch.setattr(fastcommit, "SPLIT_INDEX_BYTES", small + 4000)
    core.add_entries([Entry(f"bulk {i}") for i in range(300)], "many paths")  # into the small part, here
    grown = index.stat().st_size
    assert grown > small + 4000
    add(core, "after")
    assert index.stat().st_size < grown / 4
    assert git(vault, "status", "--porcelain") == ""
    assert len(git(vault, "ls-files", "entries").split()) == 303
    core.close()


def test_a_kill_between_the_index_and_the_ref_is_undone_by_the_next_write(tmp_path):
    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "kept")
    core.close()
    code = f"""
        import os, signal
        from memvault import settings
        from memvault.core import Memvault
        from memvault.vault.format.entry import Entry
        from memvault.vault.git import fastcommit

        def move_branch(*args, **kw):  # the index is written, the branch not moved
            os.kill(os.getpid(), signal.SIGKILL)
        fastcommit.move_branch = move_branch
        core = Memvault.open(settings.load(None, {{"vault.path": {str(vault)!r}}}))
        core.add_entries([Entry("never acknowledged", conversation_id="c")], "memvault add: lost")
    """
    killed = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert git(vault, "diff", "--cached", "--name-only")  # the index ran ahead of HEAD
    core = open_core(vault)
    add(core, "the next write")
    assert git(vault, "status", "--porcelain", "--untracked-files=all") == ""
    assert sorted(e.text for _, e in core.list().entries) == ["kept", "the next write"]
    core.close()


def test_attributes_that_convert_files_leave_the_commit_to_git(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    core = open_core(vault)
    (vault / ".git" / "info").mkdir(exist_ok=True)
    (vault / ".git" / "info" / "attributes").write_text("*.md text eol=crlf\n")
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    add(core, "converted by git")
    monkeypatch.delenv("GIT_TRACE")
    assert "built-in: git commit " in trace.read_text()  # git's own commit, which applies the attributes
    assert git(vault, "status", "--porcelain") == ""
    core.close()


def test_a_path_a_global_ignore_file_ignores_is_refused_as_git_add_refuses_it(tmp_path, monkeypatch):
    """No .gitignore on the way, yet git ignores the file (the user's global ignore file): the commit
    is git's `add`, which refuses it and names the rule, and nothing is left behind."""
    from memvault.errors import VaultError

    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "first")
    (tmp_path / "xdg" / "git").mkdir(parents=True)
    (tmp_path / "xdg" / "git" / "ignore").write_text("entries/c/facts/**/*.md\n")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    try:
        add(core, "ignored")
    except VaultError as exc:
        assert "ignored by one of your .gitignore files" in str(exc)
    else:
        raise AssertionError("an ignored file was committed")
    assert len(git(vault, "ls-files", "entries").split()) == 1
    assert git(vault, "status", "--porcelain") == ""
    core.close()
