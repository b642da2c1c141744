"""`memvault reindex --watch` as a real process: follows a hand edit, stops cleanly on Ctrl-C."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.support.cli import run_memvault

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def indexed(vault, needle: str) -> bool:
    """Whether the index holds a row with `needle`: only the watcher can have put the hand note there."""
    import apsw

    try:
        conn = apsw.Connection(str(vault / ".memvault" / "index.sqlite"), flags=apsw.SQLITE_OPEN_READONLY)
        conn.set_busy_timeout(5000)
        return bool(conn.execute("SELECT count(*) FROM entries WHERE text LIKE ?", (f"%{needle}%",)).fetchone()[0])
    except apsw.Error:
        return False


def test_watch_follows_a_hand_edit_and_stops_on_ctrl_c(tmp_path):
    vault = tmp_path / "vault"
    env = {**os.environ, "MEMVAULT_VAULT": str(vault)}
    assert run_memvault("init", env=env).returncode == 0
    assert run_memvault("add", "The spare key is under the blue pot", env=env).returncode == 0
    watcher = subprocess.Popen([sys.executable, "-m", "memvault", "reindex", "--watch"], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 400  # start-up: the model loads and the index is built
        while not (vault / ".memvault" / "index.sqlite").exists() and time.time() < deadline:
            time.sleep(0.5)
        line = ""
        while "Watching" not in line and time.time() < deadline:
            line = watcher.stderr.readline()
        assert "Watching" in line
        note = vault / "entries" / "default" / "facts" / "hand-note.md"
        note.write_text("The wifi password is taped inside the cupboard.\n")
        deadline = time.time() + 120
        while time.time() < deadline and not indexed(vault, "cupboard"):
            time.sleep(0.5)
        assert indexed(vault, "cupboard"), "the watcher did not index the hand-written note"
        out = run_memvault("search", "wifi password", "--json", env=env, timeout=240)
        assert "cupboard" in json.loads(out.stdout)[0]["text"]
    finally:
        watcher.send_signal(signal.SIGINT)
        code = watcher.wait(timeout=60)
    assert code == 0
    assert "Traceback" not in watcher.stderr.read()
