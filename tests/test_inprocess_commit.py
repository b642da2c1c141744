"""Commits, refs and a split index written in this process (vault.git.identity, vault.git.refs,
vault.git.split_index) are what git's own commit-tree, update-ref and update-index write: the same
commit sha for the same tree and time, both reflogs, an index git reads as following HEAD. Real git,
real files; where git must decide (a date in the environment, a lock held), git's own command runs."""

import os
import signal
import subprocess

import pytest

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.vault.format.entry import Entry
from memvault.vault.git import fastcommit, split_index
from memvault.vault.git.identity import without_crud
from memvault.vault.git.refs import interrupts_deferred, move_branch
from memvault.vault.git.repository import VaultGit

IDENTITY = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")


def git(vault, *args, env=None) -> str:
    return subprocess.run(["git", *args], cwd=vault, check=True, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}).stdout


def open_core(vault) -> Memvault:
    return Memvault.open(settings_module.load(None, {"vault.path": str(vault)}), create=True)


def add(core: Memvault, text: str) -> None:
    core.add_entries([Entry(text, conversation_id="c")], f"memvault add: {text}")


def gits_run(monkeypatch) -> list[str]:
    ran: list[str] = []
    real = VaultGit.run

    def run(self, *args, **kw):
        ran.append(args[0])
        return real(self, *args, **kw)

    monkeypatch.setattr(VaultGit, "run", run)
    return ran


def same_as_commit_tree(vault, sha: str, env: dict | None = None) -> None:
    """git's commit-tree, given the commit's tree, parent, message and dates, writes the same object."""
    fields = git(vault, "show", "-s", "--format=%T%n%P%n%ad%n%cd", "--date=raw", sha).splitlines()
    tree, parent, author_date, committer_date = fields
    message = git(vault, "cat-file", "commit", sha).split("\n\n", 1)[1]
    dates = {"GIT_AUTHOR_DATE": author_date, "GIT_COMMITTER_DATE": committer_date}
    theirs = subprocess.run(["git", "commit-tree", tree, "-p", parent, "-F", "-"], cwd=vault, input=message, text=True,
                            capture_output=True, check=True, env={**os.environ, **(env or {}), **dates}).stdout.strip()
    assert theirs == sha


def test_an_add_runs_no_git_for_its_commit_and_writes_what_git_commit_tree_writes(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "first")
    ran = gits_run(monkeypatch)
    add(core, "second,   with  spaces")
    assert "commit-tree" not in ran and "update-ref" not in ran
    head = git(vault, "rev-parse", "HEAD").strip()
    same_as_commit_tree(vault, head, core.vault.git.env)
    assert git(vault, "reflog", "-1", "--format=%gs", "HEAD") == "commit: memvault add: second, with spaces\n"
    assert git(vault, "reflog", "-1", "--format=%gs", "main") == "commit: memvault add: second, with spaces\n"
    assert git(vault, "reflog", "-1", "--format=%H %gn <%ge>", "main").split()[0] == head
    assert git(vault, "status", "--porcelain") == ""
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=vault, check=True, capture_output=True)
    core.close()


def test_the_identity_is_gits_from_the_config_with_its_crud_stripped(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "first")
    core.close()
    for key in IDENTITY:
        monkeypatch.delenv(key, raising=False)
    git(vault, "config", "user.name", " .Ann <Lee>; ")
    git(vault, "config", "user.email", "ann@example.org")
    git(vault, "config", "committer.email", "<robot@example.org>")
    core = open_core(vault)
    add(core, "by ann")
    head = git(vault, "rev-parse", "HEAD").strip()
    assert git(vault, "show", "-s", "--format=%an <%ae>|%cn <%ce>", head) == \
        "Ann Lee <ann@example.org>|Ann Lee <robot@example.org>\n"
    same_as_commit_tree(vault, head, core.vault.git.env)
    core.close()
    assert without_crud(' "x\n<y>. ') == "xy"


def test_a_date_in_the_environment_is_left_to_git(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "first")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2020-02-03T04:05:06Z")
    ran = gits_run(monkeypatch)
    add(core, "dated")
    assert "commit-tree" in ran and "update-ref" in ran
    assert git(vault, "show", "-s", "--format=%cI", "HEAD") == "2020-02-03T04:05:06+00:00\n"
    assert git(vault, "status", "--porcelain") == ""
    core.close()


def test_the_branch_moves_only_from_where_it_was_and_never_past_a_held_lock(tmp_path):
    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "first")
    add(core, "second")
    core.close()
    dot = vault / ".git"
    head, parent = git(vault, "rev-parse", "HEAD", "HEAD~1").split()
    logs = (dot / "logs" / "HEAD").read_text()
    assert not move_branch(dot, dot, parent, parent, "x <x> 1 +0000\tno")  # HEAD is not at `old`
    (dot / "refs" / "heads" / "main.lock").write_text("someone's\n")
    assert not move_branch(dot, dot, parent, head, "x <x> 1 +0000\tno")  # a git holds the branch
    assert (dot / "refs" / "heads" / "main.lock").read_text() == "someone's\n"  # theirs, left alone
    (dot / "refs" / "heads" / "main.lock").unlink()
    assert git(vault, "rev-parse", "HEAD").strip() == head and (dot / "logs" / "HEAD").read_text() == logs
    assert not (dot / "HEAD.lock").exists()
    git(vault, "pack-refs", "--all")  # the branch in packed-refs alone
    assert not (dot / "refs" / "heads" / "main").exists()
    assert move_branch(dot, dot, parent, head, "Bo <b@x> 1700000000 +0100\tback one")
    assert git(vault, "rev-parse", "HEAD").strip() == parent
    assert git(vault, "reflog", "-1", "--format=%gs|%gn", "main") == "back one|Bo\n"
    assert not list(dot.rglob("*.lock"))


def test_a_ctrl_c_during_the_move_is_raised_after_it():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_deferred():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("the step finished")
    assert done == ["the step finished"]


def make_split(core: Memvault, vault) -> None:
    git(vault, "update-index", "--split-index")
    assert list((vault / ".git").glob("sharedindex.*"))


def index_is_head(vault) -> None:
    staged = git(vault, "ls-files", "-s").splitlines()
    tree = git(vault, "ls-tree", "-r", "HEAD").splitlines()
    assert [line.split("\t")[1] for line in staged] == [line.split("\t")[1] for line in tree]
    assert [line.split()[1] for line in staged] == [line.split()[2] for line in tree]
    assert git(vault, "status", "--porcelain") == ""


def test_a_split_index_is_written_here_and_read_by_git_as_following_head(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    core = open_core(vault)
    for text in ("one", "two", "three"):
        add(core, text)
    (vault / "notes.txt").write_text("the user's own staged work\n")
    git(vault, "add", "notes.txt")
    make_split(core, vault)
    ran = gits_run(monkeypatch)
    for text in ("four", "five"):
        add(core, text)
    assert "update-index" not in ran  # the small part rewritten here
    names = [entry.name for entry in split_index.read(vault / ".git" / "index")[1] if entry.name]
    assert len(names) >= 2 and names == sorted(names)  # in git's order, as git writes them (git 2.39 reads either)
    assert git(vault, "diff", "--cached", "--name-only") == "notes.txt\n"  # theirs, still staged
    git(vault, "reset", "-q", "notes.txt")
    (vault / "notes.txt").unlink()
    index_is_head(vault)
    # an update of a memory in the shared part: an entry added over it
    shared = sorted((vault / "entries").rglob("*.md"))[0]
    shared.write_text(shared.read_text().replace("one", "one, changed"))
    core.vault.git.commit([str(shared.relative_to(vault))], "change a shared one")
    assert "update-index" not in ran
    index_is_head(vault)
    # its removal: the shared part still holds it, so git's update-index marks it deleted there
    shared.unlink()
    core.vault.git.commit([str(shared.relative_to(vault))], "remove it")
    assert "update-index" in ran
    index_is_head(vault)
    # git writes the index its way again, and reads ours after it
    git(vault, "update-index", "--refresh")
    add(core, "six")
    index_is_head(vault)
    subprocess.run(["git", "fsck", "--strict", "--no-dangling"], cwd=vault, check=True, capture_output=True)
    core.close()


def test_an_index_this_cannot_rewrite_is_left_to_git(tmp_path):
    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "first")
    dot = vault / ".git"
    blob = bytes(20)
    assert not split_index.record(dot, {"x.md": blob}, 1 << 20)  # not split
    make_split(core, vault)
    before = (dot / "index").read_bytes()
    (dot / "index.lock").write_bytes(b"")
    assert not split_index.record(dot, {"x.md": blob}, 1 << 20)  # a git is writing it
    (dot / "index.lock").unlink()
    # grown large: git makes a new shared part (right after --split-index the own part may hold no
    # entry at all, 0 bytes, so only a limit below any size is over it every time)
    assert not split_index.record(dot, {"x.md": blob}, -1)
    assert not split_index.record(dot, {"entries/gone.md": None}, 1 << 20)  # a removal
    assert (dot / "index").read_bytes() == before  # each left it as it was
    git(vault, "update-index", "--index-version", "4")
    assert not split_index.record(dot, {"x.md": blob}, 1 << 20)  # version 4
    git(vault, "update-index", "--index-version", "2")
    git(vault, "update-index", "--split-index")
    assert split_index.record(dot, {"x.md": blob}, 1 << 20)
    assert "x.md" in git(vault, "ls-files", "-s", "x.md")
    assert not list(dot.glob("*.lock"))
    core.close()


def test_the_commit_made_meanwhile_is_never_overwritten_by_the_move(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    core = open_core(vault)
    add(core, "first")
    real = fastcommit.move_branch

    def move(*args, **kw):  # someone commits between our commit object and the move of the branch
        (vault / "theirs.txt").write_text("theirs\n")
        git(vault, "add", "theirs.txt")
        git(vault, "-c", "user.name=them", "-c", "user.email=t@x", "commit", "-qm", "their commit", "--", "theirs.txt")
        return real(*args, **kw)

    monkeypatch.setattr(fastcommit, "move_branch", move)
    add(core, "ours")
    monkeypatch.setattr(fastcommit, "move_branch", real)
    assert git(vault, "log", "--format=%s").splitlines()[:2] == ["memvault add: ours", "their commit"]
    assert git(vault, "status", "--porcelain") == ""
    core.close()


def test_a_split_part_is_judged_by_its_entries_not_by_gits_cache_tree_beside_them(tmp_path, monkeypatch):
    """At a million files git's cache tree in the small part is 2 MB: taken for grown entries, it made
    every add write a new 160 MB shared part."""
    vault = tmp_path / "vault"
    core = open_core(vault)
    for text in ("one", "two", "three", "four"):
        add(core, text)
    dot = vault / ".git"
    git(vault, "read-tree", "HEAD")  # git's cache tree, which a split index keeps in its small part
    make_split(core, vault)
    data = (dot / "index").read_bytes()
    assert b"TREE" in data
    entries = split_index.entries_bytes(dot)
    assert entries is not None and entries < len(data) - 100
    monkeypatch.setattr(fastcommit, "SPLIT_INDEX_BYTES", entries + 50)  # the file is larger, its entries are not
    shared = set(dot.glob("sharedindex.*"))
    assert fastcommit.split_option(core.vault.git) == []
    ran = gits_run(monkeypatch)
    add(core, "five")
    assert "update-index" not in ran and set(dot.glob("sharedindex.*")) == shared  # no new shared part
    assert b"TREE" not in (dot / "index").read_bytes()  # the cache dropped, not left stale
    index_is_head(vault)
    core.close()
