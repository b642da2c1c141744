"""Writers racing on the same memory, a killed writer's git still running, and git's own refusals
(signing, hooks, ignore rules) reported by their real cause. Real processes, real git."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path, PurePosixPath

import pytest
from filelock import FileLock

from memvault.errors import NotFoundError
from memvault.vault.format.entry import Entry
from memvault.vault.write.store import Vault
from tests.support.crash import git


def committed_vault(root: Path, *texts: str) -> tuple[Vault, list[Entry]]:
    vault = Vault.init(root)
    entries = [Entry(text=text, conversation_id="default") for text in texts]
    with vault.transaction("add", "seed") as tx:
        for entry in entries:
            tx.write(entry, event="ADD")
    return vault, entries


def start_memvault(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "memvault", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def racing(vault: Vault, *commands: tuple[str, ...]) -> list[tuple[int, str, str]]:
    """Start the commands while the write lock is held, so they all resolve their targets first and
    then queue for the lock; release it and collect (exit code, stdout, stderr) of each."""
    with FileLock(str(vault.state_dir / "write.lock")):
        procs = [start_memvault(*cmd, "--vault", str(vault.root)) for cmd in commands]
        time.sleep(4)  # long enough for each to start and read the vault (resolving the id)
    return [(p.wait(timeout=120), *p.communicate()) for p in procs]


def files_of(vault: Vault, memory_id: str) -> list[str]:
    return sorted(str(rel) for rel in vault.entry_files(include_deleted=True) if memory_id in rel.name)


# -- 1. concurrent rm / edit / gc on one memory ----------------------------------------------------------
def test_two_rm_of_one_memory_at_once_keep_its_tombstone(tmp_path):
    vault, (entry,) = committed_vault(tmp_path / "vault", "the cat is called Tom")
    results = racing(vault, ("rm", entry.id), ("rm", entry.id))
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 1], results
    loser = next(err for code, _, err in results if code == 1)
    assert f"memory {entry.id[:8]} was deleted meanwhile" in loser and "Traceback" not in loser
    tombstones = files_of(vault, entry.id)
    assert len(tombstones) == 1 and tombstones[0].split("/")[2] == "deleted", tombstones
    assert vault.read(PurePosixPath(tombstones[0])).deleted is not None
    assert git(vault.root, "status", "--porcelain") == ""
    assert git(vault.root, "ls-files", "--", "entries").strip() == tombstones[0]


def test_rm_racing_edit_never_writes_a_live_entry_into_deleted(tmp_path):
    vault, (entry,) = committed_vault(tmp_path / "vault", "the dog is called Rex")
    (rm, _, rm_err), (edit, _, edit_err) = racing(vault, ("rm", entry.id), ("edit", entry.id, "--text", "Max"))
    assert rm == 0, rm_err
    (only,) = files_of(vault, entry.id)
    tombstone = vault.read(PurePosixPath(only))
    assert "/deleted/" in only and tombstone.deleted is not None
    if edit == 0:  # the edit took the lock first: the rm then deleted the edited text
        assert tombstone.text == "Max"
    else:  # the rm took it first (before the fix: a live-looking entry written into deleted/)
        assert "was deleted meanwhile" in edit_err and tombstone.text == "the dog is called Rex"
    assert git(vault.root, "status", "--porcelain") == ""


def test_soft_delete_and_write_refuse_an_entry_deleted_meanwhile(tmp_path):
    vault, (entry,) = committed_vault(tmp_path / "vault", "keys are in the drawer")
    with vault.transaction("delete", "first rm") as tx:
        tx.soft_delete(entry)
    head = git(vault.root, "rev-parse", "HEAD")
    for act in (lambda tx: tx.soft_delete(entry), lambda tx: tx.write(entry.replace(text="x"), event="UPDATE")):
        with pytest.raises(NotFoundError, match="was deleted meanwhile"):
            with vault.transaction("race", "second writer") as tx:
                act(tx)
        (only,) = files_of(vault, entry.id)
        assert "/deleted/" in only
        assert git(vault.root, "rev-parse", "HEAD") == head
        assert git(vault.root, "status", "--porcelain") == ""


def test_gc_skips_what_another_writer_deleted_meanwhile(tmp_path):
    from memvault import settings
    from memvault.core import Memvault

    committed_vault(tmp_path / "vault", *[f"fact number {i}" for i in range(4)])
    memvault = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault")}))
    vault = memvault.vault
    gone = memvault.gc(max_entries=1, dry_run=True).evict[0]
    real_transaction = vault.transaction

    def rm_first(*args, **kw):  # another writer's rm lands between gc's plan and its lock
        vault.transaction = real_transaction
        with real_transaction("delete", "other rm") as tx:
            tx.soft_delete(gone)
        return real_transaction(*args, **kw)

    vault.transaction = rm_first
    plan = memvault.gc(max_entries=1, git_gc=False)
    assert gone.id not in {e.id for e in plan.evict}
    assert len(files_of(vault, gone.id)) == 1
    assert git(vault.root, "status", "--porcelain") == ""
    memvault.close()


# -- 2. recovery while the killed writer's git still runs; the user's hooks never run ---------------------
def killed_mid_delete(vault: Vault, entry: Entry) -> None:
    """What a memvault killed between its file changes and its commit leaves: the intent notes and the
    changed files (the transaction's own steps, without the commit)."""
    from memvault.vault.write.transaction import Transaction

    vault.forget_paths()
    vault._intent_head = vault.git.head_sha()
    Transaction(vault, "delete").soft_delete(entry)
    vault._intent_head = None
    vault.forget_paths()


def test_recovery_refuses_to_roll_back_while_a_git_still_works_in_the_repository(tmp_path, monkeypatch):
    import memvault.vault.git.repository as vault_git
    from memvault.errors import VaultError

    monkeypatch.setattr(vault_git, "GIT_WAIT", 0.3)
    vault, (entry, other) = committed_vault(tmp_path / "vault", "the bike is blue", "the car is red")
    killed_mid_delete(vault, entry)
    orphan = subprocess.Popen(["git", "hash-object", "--stdin"], cwd=vault.root, stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL)  # a git at work in the repository until stdin closes
    try:
        time.sleep(0.2)
        with pytest.raises(VaultError, match=rf"git process {orphan.pid} is still working .* try again when it ends"):
            with vault.transaction("delete", "next writer") as tx:
                tx.soft_delete(other)
        assert "/deleted/" in files_of(vault, entry.id)[0]  # nothing rolled back under the running git
        assert vault.intent_path.exists()
    finally:
        orphan.communicate(b"", timeout=10)
    with vault.transaction("delete", "next writer") as tx:  # the git ended: now the roll-back is safe
        tx.soft_delete(other)
    assert "/deleted/" not in files_of(vault, entry.id)[0]
    assert git(vault.root, "status", "--porcelain") == ""


def test_the_users_hooks_never_run_on_memvaults_commits(tmp_path):
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for name in ("prepare-commit-msg", "commit-msg", "pre-commit"):
        hook = hooks / name
        hook.write_text(f"#!/bin/sh\ntouch {tmp_path}/ran-{name}\necho rewritten > \"$1\"\nexit 1\n")
        hook.chmod(0o755)
    Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text(f"[core]\n\thooksPath = {hooks}\n")
    vault, (entry,) = committed_vault(tmp_path / "vault", "hooks stay out")
    assert not list(tmp_path.glob("ran-*"))
    message = git(vault.root, "log", "-1", "--format=%B")
    assert f"Memvault-Event: ADD {entry.id}" in message


# -- 3, 4. git's refusals named by their cause ----------------------------------------------------------------
def test_a_global_commit_gpgsign_does_not_stop_memvaults_commits(tmp_path):
    Path(os.environ["GIT_CONFIG_GLOBAL"]).write_text("[commit]\n\tgpgsign = true\n[gpg]\n\tprogram = false\n")
    done = subprocess.run([sys.executable, "-m", "memvault", "init", "--vault", str(tmp_path / "vault")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert git(tmp_path / "vault", "status", "--porcelain") == ""
    assert "memvault init" in git(tmp_path / "vault", "log", "--format=%s")  # (then the core files' commit)


def test_git_errors_name_their_first_error_line_not_a_hint_or_the_last_fatal(tmp_path):
    from memvault.vault.git.repository import VaultGit

    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    done = subprocess.run(["git", "-c", "commit.gpgsign=true", "-c", "gpg.program=false", "-c", "user.name=p",
                           "-c", "user.email=p@p", "commit", "-qm", "x"], cwd=repo, capture_output=True, text=True)
    assert done.returncode != 0
    assert VaultGit(repo, repo).explain(done.stdout + done.stderr) == "error: gpg failed to sign the data"


def test_a_vault_in_a_repository_ignoring_md_files_names_the_ignore_rule(tmp_path):
    from memvault.errors import VaultError

    project = tmp_path / "project"
    git(tmp_path, "init", "-q", "-b", "main", str(project))
    (project / ".gitignore").write_text("*.md\n")
    vault = Vault.init(project / "notes", use_enclosing_repo=True)
    with pytest.raises(VaultError) as raised:
        with vault.transaction("add", "add") as tx:
            tx.write(Entry(text="ignored?", conversation_id="default"), event="ADD")
    message = str(raised.value)
    assert "The following paths are ignored by one of your .gitignore files: notes/entries/" in message
    assert "git check-ignore -v notes/entries/" in message and "hint" not in message
    assert "\n" not in message
    assert not list(vault.entry_files())  # rolled back


def test_rm_naming_one_memory_twice_deletes_it_once(tmp_path):
    from tests.support.cli import Cli

    vault, (entry,) = committed_vault(tmp_path / "vault", "twice named")
    result = Cli(vault.root)("rm", entry.id, entry.id[:8])
    assert result.exit_code == 0, result.stderr
    (only,) = files_of(vault, entry.id)
    assert "/deleted/" in only and git(vault.root, "status", "--porcelain") == ""


def test_a_tombstone_keeps_the_text_an_edit_wrote_after_the_rm_read_it(tmp_path):
    vault, (stale,) = committed_vault(tmp_path / "vault", "the plant needs water weekly")
    with vault.transaction("update", "edit lands first") as tx:
        tx.write(stale.replace(text="the plant needs water daily"), event="UPDATE")
    with vault.transaction("delete", "rm read before the edit") as tx:
        rel = tx.soft_delete(stale)
    assert vault.read(rel).text == "the plant needs water daily"


# -- 5. an editor that removes the draft; 6. init on a detached HEAD ----------------------------------------
def test_an_editor_that_removes_the_draft_changes_nothing(tmp_path, monkeypatch):
    from tests.support.cli import Cli

    vault, (entry,) = committed_vault(tmp_path / "vault", "unchanged text")
    script = tmp_path / "editor.sh"
    script.write_text('#!/bin/sh\nrm "$1"\n')
    script.chmod(0o755)
    monkeypatch.setenv("EDITOR", str(script))
    head = git(vault.root, "rev-parse", "HEAD")
    result = Cli(vault.root)("edit", entry.id)
    assert result.exit_code == 2 and "the editor removed the draft" in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "nothing changed" in result.stderr
    assert git(vault.root, "rev-parse", "HEAD") == head
    assert vault.read(PurePosixPath(files_of(vault, entry.id)[0])).text == "unchanged text"


def test_init_never_commits_onto_a_detached_head(tmp_path):
    from memvault.errors import VaultError

    project = tmp_path / "project"
    git(tmp_path, "init", "-q", "-b", "main", str(project))
    (project / "README").write_text("theirs\n")
    git(project, "add", "README")
    git(project, "-c", "user.name=p", "-c", "user.email=p@p", "commit", "-qm", "their work")
    git(project, "checkout", "-q", "--detach")
    head = git(project, "rev-parse", "HEAD")
    with pytest.raises(VaultError, match="detached HEAD"):
        Vault.init(project / "notes", use_enclosing_repo=True)
    assert git(project, "rev-parse", "HEAD") == head
    assert git(project, "diff", "--cached", "--name-only") == ""
