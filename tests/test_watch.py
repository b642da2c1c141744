"""The watcher: a hand edit reaches the index within seconds; temp files and state folders are ignored."""

from __future__ import annotations

import threading
import time
from pathlib import PurePosixPath

import pytest

from memvault.index.store import IndexStore
from memvault.index.watch import is_ignored, watch, watch_and_sync
from memvault.vault.entry import Entry
from memvault.vault.store import Vault
from tests.support.fakes import WordEmbedder, put


@pytest.mark.parametrize("path, ignored", [
    ("entries/work/facts/a.md", False),
    ("entries/work", False),
    (".memvault/index.sqlite-wal", True),
    (".git/index.lock", True),
    ("entries/work/facts/.a.md.swp", True),
    ("entries/work/facts/a.md.tmp", True),
    ("entries/work/facts/a.md~", True),
    ("entries/work/facts/4913", True),
    ("entries/work/facts/#a.md#", True),
])
def test_is_ignored(path, ignored):
    assert is_ignored(PurePosixPath(path)) is ignored


def run_in_thread(target, **kwargs):
    stop, ready = threading.Event(), threading.Event()
    thread = threading.Thread(target=target, kwargs={**kwargs, "stop_event": stop, "ready": ready}, daemon=True)
    thread.start()
    assert ready.wait(10), "watcher did not start"
    return thread, stop


def wait_for(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_hand_edit_reaches_the_index_within_seconds(tmp_path):
    vault = Vault.init(tmp_path / "vault")
    entry = Entry(text="the first version", conversation_id="work")
    put(vault, entry)
    embedder = WordEmbedder()
    reports = []
    with IndexStore.open(vault.state_dir, embedder.identity, embedder.dims) as index:
        thread, stop = run_in_thread(watch_and_sync, vault=vault, index=index, embedder=embedder,
                                     on_report=reports.append, debounce=0.2)
        try:
            assert reports and reports[0].added == 1  # the initial sync
            put(vault, entry.replace(text="a version edited by hand"))
            assert wait_for(lambda: any(r.updated == 1 for r in reports)), reports
            assert index.by_id(entry.id)["text"] == "a version edited by hand"
            assert embedder.embedded == 2
        finally:
            stop.set()
            thread.join(5)
        assert not thread.is_alive()


def test_a_burst_of_writes_is_one_callback(tmp_path):
    vault = Vault.init(tmp_path / "vault")
    folder = vault.root / "entries" / "work" / "facts"
    folder.mkdir(parents=True)
    bursts = []
    thread, stop = run_in_thread(watch, vault=vault, on_change=bursts.append, debounce=0.3)
    try:
        for name in ("a.md", "b.md", "c.md"):
            (folder / name).write_text("text")
        assert wait_for(lambda: bursts)
        time.sleep(0.6)
        assert len(bursts) == 1
        assert {PurePosixPath(f"entries/work/facts/{n}") for n in ("a.md", "b.md", "c.md")} <= bursts[0]
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()


def test_only_ignored_files_trigger_nothing(tmp_path):
    vault = Vault.init(tmp_path / "vault")
    folder = vault.root / "entries" / "work" / "facts"
    folder.mkdir(parents=True)
    bursts = []
    thread, stop = run_in_thread(watch, vault=vault, on_change=bursts.append, debounce=0.2)
    try:
        (folder / "a.md.tmp").write_text("x")
        (folder / ".hidden.md").write_text("x")
        (vault.state_dir / "index.sqlite-wal").write_text("x")
        (vault.root / ".git" / "scratch").write_text("x")
        time.sleep(1.0)
        assert bursts == []
    finally:
        stop.set()
        thread.join(5)
    assert not thread.is_alive()
