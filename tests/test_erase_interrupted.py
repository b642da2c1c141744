"""`memvault erase` against what a real trial did to it: writes journalled while it runs (it must not
wait on its own lock) and a kill in the middle (the next erase or `doctor --fix` finishes it)."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import threading
import time

import pytest

from memvault.index import journal
from memvault.vault.forget import intent as erase_intent
from tests.support.cli import killed_after, run_memvault
from tests.test_erase import leftovers, open_vault

pytestmark = [pytest.mark.timeout(600), pytest.mark.crash_points("step", "finisher")]  # tests/support/crash_points.py

SECRET = "Kestrel-Marmalade-4419"


def test_erase_with_a_journalled_write_never_waits_on_its_own_lock(tmp_path):
    root = tmp_path / "vault"
    m = open_vault(root)
    m.add_verbatim(f"My gate code is {SECRET}.", conversation="c", role="user")
    m.add_verbatim("Gina keeps bees on the roof.", conversation="c")
    assert m.search("gate code")  # the index exists
    m.close()
    writer = open_vault(root)  # another process's add: its index closed, so the write is journalled
    late = writer.add_verbatim("Hugo repairs clocks.", conversation="d")
    writer.close()
    assert (root / ".memvault" / journal.FILE_NAME).exists()
    m = open_vault(root)
    # The add landed after erase caught the index up and before it took the lock (the trial's race).
    m.keeper.caught_up = contextlib.nullcontext
    outcome: dict = {}
    worker = threading.Thread(target=lambda: outcome.update(result=m.erase(matching=SECRET)), daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "erase waited on the vault lock it holds itself"
    assert outcome["result"].roles == {"user": 1} and outcome["result"].index_rows == 1
    del m.keeper.caught_up
    assert leftovers(root, SECRET) == []
    assert [h.id for h in m.search("clocks")][:1] == [late.id]
    m.close()


def planted_vault(root):
    """Ten memories holding the secret (each in its own commit), one without, an index that holds them."""
    m = open_vault(root)
    for i in range(10):
        m.add_verbatim(f"Note {i}: the vault word is {SECRET}.", conversation="c")
    kept = m.add_verbatim("Ivy grows tomatoes on the balcony.", conversation="c")
    assert m.search(SECRET)  # the index holds it
    m.scratchpad("c").write("word", SECRET)
    m.close()
    return kept.id


@pytest.mark.parametrize("step,finisher", [("rewritten", "erase"), ("recorded", "erase"),
                                           ("rewritten", "doctor"), ("recorded", "doctor")])
def test_an_erase_killed_midway_is_finished_by_the_next_erase_or_doctor_fix(tmp_path, step, finisher):
    root = tmp_path / "vault"
    kept = planted_vault(root)
    killed = run_memvault("erase", "--vault", str(root), "--matching", SECRET, "-y", timeout=300,
                          env={erase_intent.TEST_KILL: step})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    intent = (root / ".memvault" / erase_intent.FILE_NAME).read_text()
    assert SECRET not in intent and '"ids"' in intent  # what it erases, never the secret in clear
    assert leftovers(root, SECRET)  # the kill left it in git's objects and the index
    if finisher == "erase":
        done = run_memvault("erase", "--vault", str(root), "--matching", "nothing-like-this-anywhere", "-y",
                            "--json", timeout=300)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["finished"] == 10
    else:
        warned = run_memvault("doctor", "--vault", str(root), "--json", timeout=300)
        check = next(c for c in json.loads(warned.stdout)["checks"] if c["name"] == "interrupted erase")
        assert check["status"] == "warn" and check["repair"] == "erase"
        fixed = run_memvault("doctor", "--vault", str(root), "--fix", timeout=300)
        assert b"finished the erase a crash cut short (10 memories" in fixed.stdout + fixed.stderr, fixed.stdout
    assert_finished_once(root, kept)


def assert_finished_once(root, kept: str) -> None:
    """The erase of the planted vault is whole: no byte of it anywhere (every git object, index.sqlite
    and its WAL, .memvault/, the work tree), no intent, the record once, the other memory found."""
    assert leftovers(root, SECRET) == []
    assert not (root / ".memvault" / erase_intent.FILE_NAME).exists()
    records = subprocess.run(["git", "-C", str(root), "log", "--format=%s", "--grep", "memvault erase:"],
                             capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(records) == 1 and "10 memories" in records[0]
    m = open_vault(root)
    try:
        assert m.search(SECRET) == [] or all(SECRET not in h.text for h in m.search(SECRET))
        assert [h.id for h in m.search("tomatoes balcony")][:1] == [kept]
    finally:
        m.close()


def test_an_erase_killed_before_its_rewrite_landed_is_finished_by_doctor_fix(tmp_path):
    """Its intent holds the criteria until the rewrite lands: `--fix` selects again and rewrites (on
    d22a9d1 it dropped the intent and the memories stayed)."""
    root = tmp_path / "vault"
    kept = planted_vault(root)
    killed = run_memvault("erase", "--vault", str(root), "--matching", SECRET, "-y", timeout=300,
                          env={erase_intent.TEST_KILL: "rewriting"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    fixed = run_memvault("doctor", "--vault", str(root), "--fix", timeout=300)
    assert b"finished the erase a crash cut short (10 memories" in fixed.stdout + fixed.stderr, fixed.stdout
    assert_finished_once(root, kept)


def test_an_erase_killed_at_a_random_instant_is_finished_by_doctor_fix(tmp_path):
    """No kill point: a real erase (its git-filter-repo child too: the whole process group) killed a
    random time after its intent is written; `doctor --fix` finishes it whatever the instant. One kill
    a run keeps it cheap; the seed is printed (ERASE_KILL_SEED replays one)."""
    seed = int(os.environ.get("ERASE_KILL_SEED") or time.time_ns() % 100_000)
    print(f"seed {seed}")
    rng = random.Random(seed)
    root = tmp_path / "vault"
    kept = planted_vault(root)
    intent = root / ".memvault" / erase_intent.FILE_NAME
    killed_after(["erase", "--vault", str(root), "--matching", SECRET, "-y"], intent, rng.uniform(0, 1.5))
    fixed = run_memvault("doctor", "--vault", str(root), "--fix", timeout=300)
    print("the kill cut the erase short" if b"finished the erase" in fixed.stderr else "the erase ended first")
    assert not intent.exists(), fixed.stdout + fixed.stderr
    assert_finished_once(root, kept)


def test_a_file_a_killed_rewrite_left_in_the_work_tree_is_put_back_by_doctor_fix(tmp_path):
    """filter-repo moves the refs, then resets the work tree: a kill between leaves the erased files on
    disk. `doctor --fix` finds them by their blob ids (never by name) and puts HEAD's version back."""
    root = tmp_path / "vault"
    planted_vault(root)
    erased = {path: path.read_bytes() for path in (root / "entries").rglob("*.md")
              if SECRET.encode() in path.read_bytes()}
    killed = run_memvault("erase", "--vault", str(root), "--matching", SECRET, "-y", timeout=300,
                          env={erase_intent.TEST_KILL: "rewritten"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    for path, data in erased.items():  # as the reset the kill cut short would have left them
        path.write_bytes(data)
    mine = root / "entries" / "c" / "my-own-note.md"
    mine.write_text(f"a person's own file, written after the kill, quoting {SECRET}\n")
    fixed = run_memvault("doctor", "--vault", str(root), "--fix", timeout=300)
    assert b"finished the erase a crash cut short" in fixed.stdout + fixed.stderr
    assert not any(path.exists() for path in erased)
    assert mine.exists()  # not an erased blob: the person's file is left alone
    mine.unlink()
    assert leftovers(root, SECRET) == []


def test_the_same_erase_run_again_after_a_kill_finishes_it(tmp_path):
    """Run again with the id a killed erase had already taken from the work tree: not "no memory with id",
    but the cut-short erase finished, and said so."""
    root = tmp_path / "vault"
    m = open_vault(root)
    secret = m.add_verbatim(f"My locker code is {SECRET}.", conversation="c")
    m.add_verbatim("Ivy grows tomatoes on the balcony.", conversation="c")
    m.close()
    killed = run_memvault("erase", "--vault", str(root), secret.id[:8], "-y", timeout=300,
                          env={erase_intent.TEST_KILL: "rewritten"})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert leftovers(root, SECRET)  # the index and git's objects still hold it
    again = run_memvault("erase", "--vault", str(root), secret.id[:8], "-y", timeout=300)
    assert again.returncode == 0, again.stderr
    said = again.stdout + again.stderr
    assert b"Finished first: the erase a crash cut short (1 memory)" in said, said
    assert leftovers(root, SECRET) == []
    assert not (root / ".memvault" / erase_intent.FILE_NAME).exists()
