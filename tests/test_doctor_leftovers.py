"""`doctor --fix` and what a killed `serve` leaves: atomic writes' temporary files anywhere in the
vault (the curation queue's and a session's state under .memvault/, core files), old ones removed,
young ones (a write may be under way) named with what to run."""

from __future__ import annotations

import os
import time

from tests.support.cli import Cli


def leftover(path, age: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b'{"turn": "half a record')
    then = time.time() - age
    os.utime(path, (then, then))


def test_doctor_fix_removes_or_names_every_temporary_file_a_killed_serve_left(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    cli.ok("add", "The boiler service is due in March")
    state = cli.vault / ".memvault"
    queue = state / ".curation-queue.jsonl.k3j2l1.tmp"
    session = state / "session" / "chat" / ".state.json.q8w7e6.tmp"
    core = cli.vault / "core" / ".USER.md.a1b2c3.tmp"
    fresh = state / ".pending.jsonl.z9y8x7.tmp"
    for path in (queue, session, core):
        leftover(path, age=600)
    leftover(fresh, age=0)
    check = next(c for c in cli("doctor", "--json").json()["checks"] if c["name"] == "temporary files")
    assert check["status"] == "warn" and check["repair"] == "clean"
    assert sorted(check["paths"]) == sorted(map(str, (queue, session, core)))
    assert str(fresh) in check["detail"] and "again in 60 s" in check["fix"]

    fixed = cli("doctor", "--fix")
    assert "removed 3 temporary file(s)" in fixed.stdout + fixed.stderr
    assert not any(p.exists() for p in (queue, session, core))
    assert fresh.exists()  # a write may be under way: named, left for a minute
    os.utime(fresh, (time.time() - 600,) * 2)
    cli("doctor", "--fix")
    assert not fresh.exists()
    check = next(c for c in cli("doctor", "--json").json()["checks"] if c["name"] == "temporary files")
    assert check["status"] == "ok"


def test_a_young_temporary_file_whose_writer_is_gone_is_removed_at_once(tmp_path):
    """A `kill -9` just now: the temporary file is seconds old, but its writer (the pid in its name) is
    gone, so it cannot be a write under way; one whose writer still runs is left for a minute."""
    import subprocess
    import sys

    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    state = cli.vault / ".memvault" / "session" / "load0"
    crashed = state / f".state.json.{gone}-mdc33r.tmp"
    writing = state / f".state.json.{os.getpid()}-k3j2l1.tmp"
    leftover(crashed, age=0)
    leftover(writing, age=0)
    check = next(c for c in cli("doctor", "--json").json()["checks"] if c["name"] == "temporary files")
    assert check["paths"] == [str(crashed)] and str(writing) in check["detail"]
    cli("doctor", "--fix")
    assert not crashed.exists() and writing.exists()
