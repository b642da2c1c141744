"""The core's write path for chat turns: written now, committed later in a batch, indexed on commit;
leftovers of a stop committed and indexed at the next start. Real files, git, index and MiniLM."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memvault import settings
from memvault.converse import ChatTurn, MemoryChat
from memvault.core import Memvault


def git(vault: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def core(tmp_path):
    m = Memvault.open(settings.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    m.index()  # open, as in a running server
    yield m
    m.close()


def turn_entries(core: Memvault, conversation: str, said: str):
    return MemoryChat(core, conversation).turn_entries(ChatTurn(messages=[]), said, f"answer to {said}")


def test_turns_are_written_uncommitted_then_committed_together_and_searchable(core):
    first = core.write_turns(turn_entries(core, "a", "my boat is called Heron"))
    second = core.write_turns(turn_entries(core, "b", "the lighthouse keeper is Ada"))
    assert len(git(core.vault.root, "status", "--porcelain", "--untracked-files=all").splitlines()) == 4
    core.commit_turns(first + second, "memvault chat: 2 turns")
    assert git(core.vault.root, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(core.vault.root, "log", "-1", "--format=%s").strip() == "memvault chat: 2 turns"
    assert all(core.index().by_id(change.entry.id) is not None for change in first + second)  # indexed on commit
    assert "my boat is called Heron" in [hit.text for hit in core.search("boat name", None, score_threshold=0.0)]


def test_turns_a_stop_left_uncommitted_are_committed_and_indexed_at_the_next_start(core):
    written = core.write_turns(turn_entries(core, "a", "said before the stop"))
    (core.vault.root / "entries" / "notes.txt").write_text("a person's file")
    assert core.commit_leftover_turns() == 2
    assert git(core.vault.root, "status", "--porcelain", "--untracked-files=all").split() == ["??",
                                                                                             "entries/notes.txt"]
    assert all(core.index().by_id(change.entry.id) is not None for change in written)
    assert core.commit_leftover_turns() == 0
