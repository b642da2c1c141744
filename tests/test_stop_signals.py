"""A stop (Ctrl-C to the terminal's process group, a service manager's stop) never undoes a commit
that landed, and git's helper processes do not die with the group (issue 23, item 1)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memvault.vault.format.entry import Entry
from memvault.vault.git import fastcommit
from memvault.vault.git.repository import VaultGit
from memvault.vault.write.store import Vault


@pytest.fixture
def vault(tmp_path):
    return Vault.init(tmp_path / "vault")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


def add(vault: Vault, text: str) -> Entry:
    entry = Entry(text)
    with vault.transaction("add", f"add {text}") as tx:
        tx.write(entry, event="ADD")
    return entry


def test_a_stop_after_the_commit_landed_keeps_the_committed_file(vault, monkeypatch):
    add(vault, "first")
    real_run = VaultGit.run

    def run(self, *args, **kwargs):
        out = real_run(self, *args, **kwargs)
        if args[0] in ("update-ref", "commit"):  # the commit is in: now the stop arrives
            raise KeyboardInterrupt
        return out

    def move_branch(*args, **kwargs):  # the branch moved in this process: the stop arrives after it
        if real_move(*args, **kwargs):
            raise KeyboardInterrupt
        return False

    real_move = fastcommit.move_branch
    monkeypatch.setattr(VaultGit, "run", run)
    monkeypatch.setattr(fastcommit, "move_branch", move_branch)
    with pytest.raises(KeyboardInterrupt):
        add(vault, "second")
    assert "add second" in git(vault.root, "log", "--format=%s")
    assert git(vault.root, "status", "--porcelain") == ""  # nothing rolled back: no ' D'


def test_a_dead_object_reader_neither_fails_nor_undoes_a_commit(vault):
    add(vault, "first")
    assert vault.git.repo.commit(vault.git.head_sha()).tree.hexsha  # GitPython's persistent cat-file now runs
    readers = [pid for pid in child_pids() if b"cat-file" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert readers
    for pid in readers:  # as a Ctrl-C to the process group did before they had a session of their own
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    entry = add(vault, "second")
    assert git(vault.root, "status", "--porcelain") == ""
    assert any(entry.id in line for line in git(vault.root, "ls-files").splitlines())


def child_pids() -> list[int]:
    children = Path(f"/proc/self/task/{os.getpid()}/children").read_text().split()
    return [int(pid) for pid in children]


GROUP_STOP = textwrap.dedent("""
    import os, signal, subprocess, sys
    from memvault.vault.format.entry import Entry
    from memvault.vault.write.store import Vault

    vault = Vault.open(sys.argv[1])
    def add(text):
        entry = Entry(text)
        with vault.transaction("add", "add " + text) as tx:
            tx.write(entry, event="ADD")
    add("before the stop")
    signal.signal(signal.SIGINT, lambda *_: print("stop asked", flush=True))  # as uvicorn does: finish first
    os.killpg(os.getpgrp(), signal.SIGINT)  # Ctrl-C in a terminal: the whole foreground group
    add("after the stop")
    print("done", flush=True)
""")


def test_ctrl_c_to_the_process_group_leaves_gits_helpers_alive(vault):
    """The group gets SIGINT while the writer finishes: its git processes (the persistent object
    reader, the commit's) live on, so the last write commits and nothing is rolled back."""
    done = subprocess.run([sys.executable, "-c", GROUP_STOP, str(vault.root)], capture_output=True, text=True,
                          timeout=60, start_new_session=True, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.stdout.split() == ["stop", "asked", "done"], done.stderr
    assert "Traceback" not in done.stderr
    assert git(vault.root, "log", "-1", "--format=%s").strip() == "add after the stop"
    assert git(vault.root, "status", "--porcelain") == ""


def test_a_killed_writers_temporary_files_are_swept_by_the_next_writer(vault):
    """A transaction killed mid-write leaves '.<name>.XXXX.tmp' beside the path it noted: the next
    writer, under the lock, removes them however young."""
    entry = Entry("killed mid-write")
    from memvault.vault.format import layout

    rel = layout.relative_path(entry)
    vault._intent_head = vault.git.head_sha()
    vault.note_intent(rel, None)
    (vault.root / rel.parent).mkdir(parents=True, exist_ok=True)
    tmp = vault.root / rel.parent / f".{rel.name}.abcd1234.tmp"
    tmp.write_bytes(b"half a memory")
    add(vault, "the next write")
    assert not tmp.exists()
    assert git(vault.root, "status", "--porcelain", "--untracked-files=all") == ""


KILLED_AFTER_COMMIT = textwrap.dedent("""
    import os, sys
    from memvault import settings
    from memvault.core import Memvault
    from memvault.index.keeper import IndexKeeper

    core = Memvault.open(settings.load(None, {"vault.path": sys.argv[1]}))
    core.search("bees", None)  # the index is open: writes are indexed at once, not journalled
    IndexKeeper.record = lambda self, changes: os._exit(9)  # kill -9 right after the commit landed
    if sys.argv[2] == "rm":
        core.delete([sys.argv[3]])
    else:
        core.add_verbatim("Bob sails on Sundays zqsails")
""")


@pytest.mark.parametrize("command", ["rm", "add"])
def test_a_kill_between_the_commit_and_the_index_is_caught_up_by_the_next_search(tmp_path, command):
    """kill -9 of `rm` after its commit moved the file to deleted/ left an index row pointing at the old
    path (and a killed `add`, a memory no search found) until a manual reindex (issue 23, item 2)."""
    from memvault import settings
    from memvault.core import Memvault
    from tests.support.crash import indexed_ids

    core = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    kept = core.add_verbatim("Ada keeps bees zqbees")
    core.search("bees", None)
    core.close()
    done = subprocess.run([sys.executable, "-c", KILLED_AFTER_COMMIT, str(tmp_path / "vault"), command, kept.id],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.returncode == 9, done.stderr
    core = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault")}))
    try:
        if command == "rm":
            assert kept.id not in {hit.id for hit in core.search("zqbees", None, score_threshold=0.0)}
            assert kept.id not in indexed_ids(tmp_path / "vault")
        else:
            assert "Bob sails on Sundays zqsails" in {hit.text for hit in core.search("zqsails", None,
                                                                                        score_threshold=0.0)}
    finally:
        core.close()
    assert git(tmp_path / "vault", "status", "--porcelain") == ""
