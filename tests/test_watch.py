"""The watcher of `reindex --watch`: a hand edit reaches the index within seconds; a burst of writes is
one sync; temporary files and state folders are ignored."""

from __future__ import annotations

import _thread
import threading
import time
from pathlib import PurePosixPath

import pytest

from memvault.index.watch import is_ignored, watch
from memvault.vault.write.store import Vault


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


def test_reindex_watch_indexes_a_hand_edit_and_stops_on_ctrl_c(tmp_path):
    """The watcher of `memvault reindex --watch` (`follow`), in this process with the real model: a
    note written by hand after it started is indexed by the watcher, and Ctrl-C ends it cleanly."""
    from memvault import settings as settings_module
    from memvault.cli.commands.index import follow
    from memvault.core import Memvault

    memvault = Memvault.open(settings_module.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    memvault.add_verbatim("The spare key is under the blue pot")
    memvault.reindex()  # what `reindex` does before it follows
    reports = []
    reindex = memvault.reindex

    def counted(**kwargs):  # watched, not changed: what each sync of the watcher did
        reports.append(reindex(**kwargs))
        return reports[-1]

    memvault.reindex = counted

    def edit_then_ctrl_c():
        try:
            # follow() syncs once after the observer is ready: from then on only the watcher can sync.
            if wait_for(lambda: reports, timeout=120):
                note = memvault.vault.root / "entries" / "default" / "facts" / "hand-note.md"
                note.write_text("The wifi password is taped inside the cupboard.\n")
                wait_for(lambda: any(report.added for report in reports[1:]), timeout=60)
        finally:
            _thread.interrupt_main()  # Ctrl-C

    helper = threading.Thread(target=edit_then_ctrl_c, daemon=True)
    helper.start()
    follow(memvault, quiet=True)  # returns on Ctrl-C
    helper.join(5)
    try:
        assert reports and reports[0].added == 0  # the catch-up sync after the observer started
        assert [report.added for report in reports[1:]] == [1], reports
        [hit] = [hit for hit in memvault.search("wifi password", "default") if "cupboard" in hit.text]
        assert hit.role == "memory"
    finally:
        memvault.close()


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
