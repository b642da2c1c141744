"""A running `memvault reindex --watch` vouches that nothing changed, so a reindex stats no file; every
change a person makes meanwhile is still found by the next reindex, however soon it comes. Real
processes, real inotify through watchdog, the real model."""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memvault.index import catchup, vouch
from memvault.index.vouch import vouched

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.skipif(sys.platform != "linux", reason="vouching reads inotify")]

FACTS = Path("entries") / "default" / "facts"


def fact(memory_id: str, text: str) -> str:
    return (f"---\nid: {memory_id}\nrole: memory\nconversation_id: default\n"
            f"created_at: '2026-01-0{memory_id[-1]}T10:00:00+00:00'\n---\n\n{text}\n")


@pytest.fixture
def memvault(tmp_path):
    from memvault import settings as settings_module
    from memvault.core import Memvault

    root = tmp_path / "vault"
    opened = Memvault.open(settings_module.load(None, {"vault.path": str(root)}), create=True)
    (root / FACTS).mkdir(parents=True)
    for number in range(1, 6):
        (root / FACTS / f"note-{number}.md").write_text(fact(f"note-000{number}", f"Hand note number {number}."))
    opened.reindex()
    yield opened
    opened.close()


def start_watcher(root: Path, *prefix: str) -> subprocess.Popen:
    env = {**os.environ, "MEMVAULT_VAULT": str(root)}
    return subprocess.Popen([*prefix, sys.executable, "-m", "memvault", "reindex", "--watch"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_vouched(root: Path, watcher: subprocess.Popen, timeout: float = 240) -> None:
    """Until the watcher vouches (its first sync done)."""
    deadline = time.monotonic() + timeout
    while (refused := vouched(root / ".memvault")) is not None:
        assert watcher.poll() is None, watcher.stderr.read()
        assert time.monotonic() < deadline, refused
        time.sleep(0.2)


def stop(watcher: subprocess.Popen) -> str:
    if watcher.poll() is None:
        watcher.send_signal(signal.SIGCONT)
        watcher.send_signal(signal.SIGINT)
        watcher.wait(timeout=60)
    return watcher.stderr.read()


@pytest.fixture
def walks(monkeypatch):
    """How many times a reindex stat'ed every file."""
    counted = []
    real = catchup.stat_walk

    def counting(*args, **kwargs):
        counted.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(catchup, "stat_walk", counting)
    return counted


def changed(report) -> tuple[int, int, int, int]:
    return report.added, report.updated, report.moved, report.removed


def in_step(memvault) -> bool:
    """Whether the index holds every entry file as it is on disk, and no other (whoever indexed it: the
    watcher may have synced an edit before the reindex came)."""
    root = memvault.vault.root
    on_disk = {str(path.relative_to(root)): catchup.hash_file(path) for path in (root / "entries").rglob("*.md")}
    indexed = {path: row.file_hash for path, row in memvault.keeper.store.files().items()
               if path.startswith("entries/")}
    return indexed == on_disk


def test_a_vouched_reindex_stats_nothing_and_each_edit_just_before_it_is_found(memvault, walks):
    root = memvault.vault.root
    watcher = start_watcher(root)
    try:
        wait_vouched(root, watcher)
        report = memvault.reindex()
        assert (walks, changed(report), report.unchanged) == ([], (0, 0, 0, 0), 5)
        edits = {
            "edit in place": lambda: (root / FACTS / "note-1.md").write_text(
                fact("note-0001", "Hand note number 1, now about the red kayak.")),
            "delete": lambda: (root / FACTS / "note-2.md").unlink(),
            "add": lambda: (root / FACTS / "note-6.md").write_text(fact("note-0006", "A new note.")),
            "rename": lambda: (root / FACTS / "note-3.md").rename(root / FACTS / "renamed.md"),
        }
        for kind, edit in edits.items():
            wait_vouched(root, watcher)
            assert in_step(memvault)
            edit()
            memvault.reindex()  # at once: the watcher may not have read the event yet
            assert in_step(memvault), kind
        wait_vouched(root, watcher)
        walks.clear()
        assert changed(memvault.reindex()) == (0, 0, 0, 0) and walks == []
        assert [hit.text for hit in memvault.search("red kayak") if "kayak" in hit.text]
    finally:
        stop(watcher)
    assert vouched(root / ".memvault") == "no watcher"  # Ctrl-C: the lock went with the process


def test_a_watcher_that_has_not_read_an_edit_yet_does_not_vouch_for_it(memvault, walks):
    """The kernel-to-thread delay, stretched: the watcher is stopped between the edit and the reindex's
    question, then resumed while the reindex waits. The edit's event is queued before the probe, so it
    is counted before the probe is answered."""
    root = memvault.vault.root
    watcher = start_watcher(root)
    try:
        wait_vouched(root, watcher)
        watcher.send_signal(signal.SIGSTOP)
        (root / FACTS / "note-4.md").write_text(fact("note-0004", "Hand note number 4, about the green tent."))
        threading.Timer(1.0, watcher.send_signal, (signal.SIGCONT,)).start()
        started = time.monotonic()
        assert vouched(root / ".memvault", wait=30) == "a change is not synced yet"
        assert time.monotonic() - started < 20  # answered once resumed, not timed out
        memvault.reindex()
        assert in_step(memvault)
    finally:
        stop(watcher)


def test_an_overflow_of_the_kernels_queue_is_not_vouched_for(memvault, walks):
    """The watcher stopped while more events than the kernel queues are made (temporary files, which
    alone would not need a sync), then an edit whose event the kernel drops."""
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 100_000:
        pytest.skip(f"max_queued_events is {limit}: too many files to make")
    root = memvault.vault.root
    watcher = start_watcher(root)
    flood = root / FACTS / "flood"
    try:
        wait_vouched(root, watcher)
        flood.mkdir()
        wait_vouched(root, watcher)
        watcher.send_signal(signal.SIGSTOP)
        for number in range(limit // 2 + 1000):  # a creation and a close each
            (flood / f"{number}.tmp").touch()
        (root / FACTS / "note-5.md").write_text(fact("note-0005", "Hand note number 5, about the yellow boat."))
        watcher.send_signal(signal.SIGCONT)
        time.sleep(2)  # the queue is read: a question now is queued after it
        memvault.reindex()
        assert in_step(memvault)
        wait_vouched(root, watcher)  # a full sync after the overflow, then clean again
        assert "overflowed" in stop(watcher)
    finally:
        stop(watcher)
        shutil.rmtree(flood, ignore_errors=True)


def test_a_watcher_killed_with_sigkill_vouches_for_nothing(memvault, walks, monkeypatch):
    root = memvault.vault.root
    watcher = start_watcher(root)
    try:
        wait_vouched(root, watcher)
        watcher.kill()
        watcher.wait(timeout=30)
        (root / FACTS / "note-1.md").write_text(fact("note-0001", "Edited after the watcher died."))
        monkeypatch.setattr(vouch, "ANSWER_WAIT", 30.0)
        started = time.monotonic()
        report = memvault.reindex()
        assert changed(report) == (0, 1, 0, 0) and walks == [1]
        assert time.monotonic() - started < 10  # the lock is gone: no question asked, no answer awaited
        assert vouched(root / ".memvault") == "no watcher"
    finally:
        stop(watcher)


def test_a_sync_that_leaves_a_file_broken_is_not_vouched_for(memvault, tmp_path):
    from tests.support.cli import run_memvault

    root = memvault.vault.root
    watcher = start_watcher(root)
    try:
        wait_vouched(root, watcher)
        (root / FACTS / "broken.md").write_text("---\nid: [unclosed\n---\nno front matter to read\n")
        time.sleep(4)  # the watcher's sync has run and found the file broken
        assert vouched(root / ".memvault") == "a change is not synced yet"
        done = run_memvault("reindex", "--vault", str(root))
        assert done.returncode == 1 and "broken.md" in done.stderr.decode()
    finally:
        stop(watcher)


def test_a_watcher_that_cannot_watch_every_folder_says_so_and_does_not_vouch(memvault, walks):
    """The watch limit, lowered in a user namespace of its own (the kernel counts watches per user
    and namespace): most conversation folders cannot be watched."""
    if shutil.which("unshare") is None or subprocess.run(
            ["unshare", "-Ur", "sh", "-c", "echo 6 > /proc/sys/user/max_inotify_watches"]).returncode != 0:
        pytest.skip("no user namespace with a lower inotify watch limit here")
    root = memvault.vault.root
    for number in range(20):
        (root / "entries" / f"topic-{number}" / "facts").mkdir(parents=True)
    watcher = start_watcher(root, "unshare", "-Ur", "sh", "-c",
                            'echo 6 > /proc/sys/user/max_inotify_watches && exec "$@"', "sh")
    try:
        deadline = time.monotonic() + 240
        while (refused := vouched(root / ".memvault")) is None or refused == "no watcher" \
                or "did not answer" in refused or "first sync" in refused:
            assert watcher.poll() is None and time.monotonic() < deadline, refused
            time.sleep(0.2)
        assert refused.startswith("the watcher cannot vouch: the system's limit of inotify watches is reached")
        note = root / "entries" / "topic-19" / "facts" / "late.md"
        note.write_text(fact("late-0007", "Written where no watch could be added."))
        time.sleep(2)
        memvault.reindex()
        assert in_step(memvault) and walks == [1]
    finally:
        err = stop(watcher)
    assert "fs.inotify.max_user_watches" in err and "Traceback" not in err
