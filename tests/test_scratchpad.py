"""The per-session scratchpad: a key/value pad under .memvault/session/<conversation>/scratchpad.json,
never committed nor indexed, size-limited, cleared at session end."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.errors import NotFoundError, UnsafePathError, UsageError
from memvault.vault.write.scratchpad import MAX_KEYS, MAX_TOTAL_CHARS, MAX_VALUE_CHARS


@pytest.fixture
def memvault(tmp_path):
    m = Memvault.open(settings_module.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    yield m
    m.close()


def git(memvault, *args: str) -> str:
    return subprocess.run(["git", "-C", str(memvault.vault.root), *args], capture_output=True, text=True,
                          check=True).stdout


def test_write_read_list_and_remove(memvault):
    pad = memvault.scratchpad("trip")
    pad.write("plan", "1. trains 2. hotels")
    pad.write("open", "which pass?")
    assert pad.read("plan") == "1. trains 2. hotels"
    assert pad.items() == {"plan": "1. trains 2. hotels", "open": "which pass?"}
    assert memvault.scratchpad("other").items() == {}  # one pad per conversation's session
    pad.write("open", "")  # an empty value removes the key
    assert list(pad.items()) == ["plan"]
    with pytest.raises(NotFoundError, match="no scratchpad key 'open'"):
        pad.read("open")
    path = memvault.vault.root / ".memvault" / "session" / "trip" / "scratchpad.json"
    assert json.loads(path.read_text(encoding="utf-8")) == {"plan": "1. trains 2. hotels"}


def test_never_committed_nor_indexed(memvault):
    commits = git(memvault, "rev-list", "--count", "HEAD")
    memvault.scratchpad("trip").write("plan", "a distinctive zebra itinerary")
    assert git(memvault, "rev-list", "--count", "HEAD") == commits
    assert git(memvault, "status", "--porcelain") == ""  # under the git-ignored .memvault/
    memvault.reindex()
    assert not any("zebra" in hit.text for hit in memvault.search("zebra itinerary", score_threshold=0.0))


def test_cleared_at_session_end(memvault):
    pad = memvault.scratchpad("trip")
    pad.write("plan", "x")
    other_file = pad.folder / "held.jsonl"  # another layer's session file stays for its owner
    other_file.write_text("{}\n", encoding="utf-8")
    pad.clear()
    assert pad.items() == {} and not pad.path.exists() and other_file.exists()
    other_file.unlink()
    pad.write("plan", "y")
    pad.clear()
    assert not pad.folder.exists()


def test_size_limits_and_bad_input(memvault):
    pad = memvault.scratchpad("trip")
    with pytest.raises(UsageError, match="more than"):
        pad.write("big", "x" * (MAX_VALUE_CHARS + 1))
    with pytest.raises(UsageError, match="key is empty"):
        pad.write("  ", "x")
    with pytest.raises(UsageError, match="invalid scratchpad key"):
        pad.write("a\nb", "x")
    with pytest.raises(UsageError, match="lone surrogate"):
        pad.write("k", "\ud800")
    for i in range(MAX_TOTAL_CHARS // MAX_VALUE_CHARS):
        pad.write(f"k{i}", "v" * (MAX_VALUE_CHARS - 10))
    with pytest.raises(UsageError, match="more than 64,000 characters"):
        pad.write("one-more", "v" * 1000)
    for i in range(MAX_TOTAL_CHARS // MAX_VALUE_CHARS):
        pad.write(f"k{i}", "")
    for i in range(MAX_KEYS):
        pad.write(f"key{i}", "v")
    with pytest.raises(UsageError, match=f"{MAX_KEYS} keys already"):
        pad.write("key-too-many", "v")
    assert len(pad.items()) == MAX_KEYS  # a refused write changes nothing
    escaping = memvault.scratchpad("../escape")  # any conversation id: its folder is a safe name
    escaping.write("k", "v")
    assert not (memvault.vault.state_dir / "escape").exists()
    assert [p.parent.parent for p in memvault.vault.state_dir.rglob("scratchpad.json")] == [
        memvault.vault.state_dir / "session"] * 2
    with pytest.raises(UnsafePathError):
        memvault.scratchpad("a\tb")  # not printable: refused


def test_a_linked_session_folder_is_not_written_through(memvault, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    sessions = memvault.vault.state_dir / "session"
    sessions.mkdir()
    os.symlink(outside, sessions / "trip")
    with pytest.raises(UnsafePathError):
        memvault.scratchpad("trip").write("plan", "x")
    assert list(outside.iterdir()) == []
