"""Git lock files a killed git leaves behind (issue 11, item 1): removed when no live git holds them,
otherwise named with the fix in one line; `doctor` finds them and `--fix` removes them; `serve`
starts with one present. Real git, real processes (a live git is a real `git` process waiting on stdin)."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.server.run import running
from tests.support.cli import Cli
from tests.support.server import server_settings


def git(vault: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def vault(tmp_path) -> Path:
    core = Memvault.open(settings_module.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    core.add_verbatim("committed before the crash")
    core.close()
    return tmp_path / "vault"


def leave_lock(vault: Path, name: str = "index.lock") -> Path:
    """What `kill -9` of a git in the middle of a write leaves: its lock file, and nobody holding it."""
    lock = vault / ".git" / name
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_bytes(b"")
    return lock


@pytest.fixture
def live_git(vault):
    """A real git process working in the vault's repository (it waits for stdin until closed)."""
    process = subprocess.Popen(["git", "hash-object", "--stdin"], cwd=vault, stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL)
    yield process
    process.stdin.close()
    process.wait(10)


@pytest.mark.parametrize("name", ["index.lock", "HEAD.lock", "refs/heads/main.lock"])
def test_a_lock_no_git_holds_is_removed_by_the_next_write(vault, name):
    lock = leave_lock(vault, name)
    result = Cli(vault)("add", "--no-llm", "written after the crash")
    assert result.exit_code == 0, result.stderr
    assert not lock.exists()
    assert "written after the crash" in git(vault, "log", "-1", "--format=%s")
    assert not git(vault, "status", "--porcelain")


def test_a_lock_a_live_git_holds_is_left_and_named_with_its_fix_in_one_line(vault, live_git, monkeypatch):
    import importlib

    git_module = importlib.import_module("memvault.vault.git.repository")
    monkeypatch.setattr(git_module, "GIT_WAIT", 0.5)  # waited for, a little, then reported
    lock = leave_lock(vault)
    result = Cli(vault)("add", "--no-llm", "must wait")
    assert result.exit_code == 1
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert str(lock) in message and f"pid {live_git.pid}" not in message  # named by file; the pid follows
    assert f"git process {live_git.pid}" in message and "wait for it to finish" in message
    assert not message.endswith("'") and message.count("'") % 2 == 0  # no stray quote from git's text
    assert lock.exists()  # never taken from a running git
    live_git.stdin.close()
    live_git.wait(10)
    assert Cli(vault)("add", "--no-llm", "after the git ended").exit_code == 0
    assert not lock.exists()


def test_a_lock_left_but_not_removable_names_the_file_and_rm(vault, monkeypatch):
    """Where the running processes cannot be seen (no /proc), a young lock is left alone and the error
    says which file it is and how to remove it; an old one is removed."""
    from memvault.vault.git.repository import STALE_LOCK_AGE, VaultGit

    monkeypatch.setattr(VaultGit, "lock_holders", lambda self: None)
    lock = leave_lock(vault)
    result = Cli(vault)("add", "--no-llm", "blocked")
    assert result.exit_code == 1
    assert f"rm {lock}" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    old = time.time() - STALE_LOCK_AGE - 5
    os.utime(lock, (old, old))
    assert Cli(vault)("add", "--no-llm", "unblocked").exit_code == 0
    assert not lock.exists()


def test_the_next_write_waits_for_a_git_that_is_finishing(vault):
    """A killed memvault's git child goes on: the next writer waits for it rather than failing."""
    lock = leave_lock(vault)
    finishing = subprocess.Popen(["sh", "-c", f"sleep 1; rm {lock}"], cwd=vault)  # not git: its name is sh
    git_child = subprocess.Popen(["git", "hash-object", "--stdin"], cwd=vault, stdin=subprocess.PIPE,
                                 stdout=subprocess.DEVNULL)
    try:
        import threading

        threading.Timer(1.0, git_child.stdin.close).start()  # the git ends after 1 s, its lock with it
        assert Cli(vault)("add", "--no-llm", "after waiting").exit_code == 0
    finally:
        finishing.wait(10)
        git_child.wait(10)
    assert "after waiting" in git(vault, "log", "-1", "--format=%s")


def test_doctor_finds_a_stale_lock_and_fix_removes_it(vault):
    lock = leave_lock(vault)
    result = Cli(vault)("doctor", "--json", "--no-llm-check")
    checks = {c["name"]: c for c in result.json()["checks"]}
    assert checks["git locks"]["status"] == "warn" and str(lock) in checks["git locks"]["detail"]
    assert checks["git locks"]["repair"] == "unlock"
    fixed = Cli(vault)("doctor", "--json", "--no-llm-check", "--fix").json()
    assert any("stale git lock" in line for line in fixed["fixed"])
    assert {c["name"]: c["status"] for c in fixed["checks"]}["git locks"] == "ok"
    assert not lock.exists()


def test_doctor_says_when_a_running_git_holds_the_lock(vault, live_git):
    leave_lock(vault)
    checks = {c["name"]: c for c in Cli(vault)("doctor", "--json", "--no-llm-check").json()["checks"]}
    assert checks["git locks"]["status"] == "warn" and checks["git locks"]["repair"] is None
    assert f"git process {live_git.pid}" in checks["git locks"]["detail"]


def test_serve_starts_with_a_stale_lock_and_commits_the_turns_left_over(vault):
    core = Memvault.open(server_settings(vault))
    from memvault.converse import ChatTurn, MemoryChat

    written = core.vault.write_new(MemoryChat(core, "c").turn_entries(ChatTurn(messages=[]), "hi", "hello"))
    core.close()
    lock = leave_lock(vault)
    with running(server_settings(vault)) as url:
        import httpx

        assert httpx.get(url + "/health", timeout=30).json()["status"] == "ok"
    assert not lock.exists()
    tracked = git(vault, "ls-files").split()
    assert all(str(change.rel) in tracked for change in written)


def running_as_git(process: subprocess.Popen) -> None:
    """Wait until a just-started git has exec'd (a busy machine may take a while to)."""
    deadline = time.monotonic() + 10
    while not Path(f"/proc/{process.pid}/comm").read_text().startswith("git") and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_lock_a_live_git_takes_during_a_commit_is_waited_for(vault, monkeypatch):
    """A person's `git status` refreshes the index under index.lock: one that starts between our
    stale-lock check and our `git add` made the commit fail (the proxy's turns then stayed
    uncommitted until a restart). The write waits for it and goes on."""
    from memvault.vault.git.repository import VaultGit

    checked = VaultGit.remove_stale_locks

    def then_someone_takes_the_lock(self):
        removed = checked(self)
        person = subprocess.Popen(["git", "hash-object", "--stdin"], cwd=vault, stdin=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL)  # a live git working in the repository
        running_as_git(person)  # a real git holds its lock once running
        lock = leave_lock(vault)

        def their_git_finishes():
            lock.unlink()
            person.stdin.close()
            person.wait(10)

        threading.Timer(0.5, their_git_finishes).start()
        return removed

    monkeypatch.setattr(VaultGit, "remove_stale_locks", then_someone_takes_the_lock)
    core = Memvault.open(settings_module.load(None, {"vault.path": str(vault)}))
    try:
        core.add_verbatim("written while a person ran git status")
    finally:
        core.close()
    assert "written while a person ran git status" in git(vault, "log", "-1", "--format=%s")
    assert not git(vault, "status", "--porcelain")


def test_a_git_that_exits_while_proc_is_read_is_not_an_unknown_holder(vault, tmp_path, monkeypatch):
    """On a busy machine a git elsewhere can exit between reading its name and its cwd: readlink then
    fails with ESRCH (ProcessLookupError), which is "gone", not "another user's git we cannot see"
    (that would leave a fresh stale lock in place and fail the write)."""
    import importlib

    git_module = importlib.import_module("memvault.vault.git.repository")
    elsewhere = subprocess.Popen(["git", "hash-object", "--stdin"], cwd=tmp_path, stdin=subprocess.PIPE,
                                 stdout=subprocess.DEVNULL)
    real_readlink = os.readlink

    def exiting(path, *args, **kwargs):
        if str(path).startswith(f"/proc/{elsewhere.pid}/"):
            raise ProcessLookupError(3, "No such process")
        return real_readlink(path, *args, **kwargs)

    running_as_git(elsewhere)  # before, /proc shows python, and the test would read nothing of it
    monkeypatch.setattr(git_module.os, "readlink", exiting)
    try:
        lock = leave_lock(vault)
        result = Cli(vault)("add", "--no-llm", "written while another git exits")
        assert result.exit_code == 0, result.stderr
        assert not lock.exists()
    finally:
        elsewhere.stdin.close()
        elsewhere.wait(10)
