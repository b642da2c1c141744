"""A sync killed mid-way through adopting the history an erase rewrote (memvault/vault/devices/adopt.py,
devices/resume.py) is finished by the next one: real clones of a bare remote on disk, a real
`python -m memvault sync` process stopped at a step of the adoption (it waits there when
MEMVAULT_TEST_SYNC_PAUSE names the step) and killed with its process group (SIGKILL, SIGTERM,
SIGINT). Then `memvault sync` again, and the invariants: the vault on the rewritten history, the
stale side's own memories committed exactly once, no erased byte anywhere (work tree, index, objects,
reflogs), a person's uncommitted edit kept, no record left."""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvault.vault.devices.adopt import PAUSE, REPLAYED
from memvault.vault.devices.resume import ADOPTING
from tests.support.cli import Cli, killed_after
from tests.support.server import isolated_env
from tests.test_erase import leftovers
from tests.test_erase_sync import SECRET, add, remote_log, texts
from tests.test_sync_devices import devices, git, live_fact_ids, tree

pytestmark = [pytest.mark.timeout(600), pytest.mark.crash_points("step", "sig")]  # tests/support/crash_points.py

OWN = ("The desktop's owner plants tulips in October", "The desktop's owner swims on Fridays",
       "The desktop's owner keeps bees")
STATE = ".memvault"


def killed_at(cli: Cli, step: str, sig: int = signal.SIGKILL) -> None:
    """A `memvault sync` process, stopped at `step` of its adoption and killed there with its process group."""
    proc = subprocess.Popen([sys.executable, "-m", "memvault", "sync", "--json", "--vault", str(cli.vault)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, PAUSE: step})
    marker = cli.vault / STATE / f"paused-{step}"
    deadline = time.monotonic() + 180
    while not marker.exists():
        assert proc.poll() is None, f"the sync ended before {step}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"the sync never reached {step}"
        time.sleep(0.02)
    os.killpg(proc.pid, sig)
    _, err = proc.communicate(timeout=120)
    marker.unlink()
    assert proc.returncode != 0, err


def replay_commits(cli: Cli) -> int:
    return sum(subject.endswith(REPLAYED) for subject in git(cli.vault, "log", "--format=%s").splitlines())


def records_left(cli: Cli) -> list[str]:
    return sorted(p.name for p in (cli.vault / STATE).glob("sync*.json"))


def build_stale_desktop(where: Path) -> tuple[list[str], Path]:
    """The laptop erased and synced; the desktop, on the old history, holds its own unpushed memories
    and a person's uncommitted edit of a file the adoption does not write."""
    _, (laptop, desktop) = devices(where)
    add(laptop, f"The spare key code is {SECRET}")
    boiler = add(laptop, "The boiler service is due in March")
    laptop.ok("sync")
    desktop.ok("sync")
    assert SECRET in desktop.ok("search", "spare key code", "--json").stdout  # the desktop's index holds it
    own = [add(desktop, text) for text in OWN]
    laptop.ok("erase", "--matching", SECRET, "-y")
    laptop.ok("sync")
    [edited] = (desktop.vault / "entries").rglob(f"*{boiler}.md")
    edited.write_text(edited.read_text().replace("March", "April"))  # a person's edit, not committed
    return own, edited.relative_to(where)


def build_stale_remote(where: Path) -> tuple[list[str], None]:
    """The laptop erased, not synced yet; the desktop pushed its own memories on the old history."""
    _, (laptop, desktop) = devices(where)
    secret = add(laptop, f"The spare key code is {SECRET}")
    laptop.ok("sync")
    desktop.ok("sync")
    laptop.ok("erase", secret, "-y")
    own = [add(desktop, text) for text in OWN]
    desktop.ok("sync")  # the remote's old history moves on, with what was erased
    return own, None


@pytest.fixture(scope="module")
def templates(tmp_path_factory):
    """Each starting state is built once (two devices, memories, an erase, syncs: most of a test's time)
    and copied for every test that starts from it: the same files, histories, indexes and state."""
    built: dict = {}

    def template(builder):
        if builder not in built:
            where = tmp_path_factory.mktemp(builder.__name__)
            with isolated_env(tmp_path_factory.mktemp("home")):
                built[builder] = where, builder(where)
        return built[builder]

    return template


def copied(templates, builder, tmp_path: Path):
    """A copy of a built state in `tmp_path`, each device's remote pointed at the copied remote."""
    where, (own, edited) = templates(builder)
    shutil.copytree(where, tmp_path, symlinks=True, dirs_exist_ok=True)
    for name in ("laptop", "desktop"):
        git(tmp_path / name, "remote", "set-url", "origin", str(tmp_path / "remote.git"))
    return Cli(tmp_path / "laptop"), Cli(tmp_path / "desktop"), list(own), edited and tmp_path / edited


def stale_desktop(templates, tmp_path: Path) -> tuple[Cli, Cli, list[str], Path]:
    return copied(templates, build_stale_desktop, tmp_path)


def stale_remote(templates, tmp_path: Path) -> tuple[Path, Cli, Cli, list[str]]:
    laptop, desktop, own, _ = copied(templates, build_stale_remote, tmp_path)
    return tmp_path / "remote.git", laptop, desktop, own


def assert_finished(cli: Cli, own: list[str], edited: Path | None = None) -> None:
    assert leftovers(cli.vault, SECRET) == []  # work tree, index and WAL, objects, packs, reflogs
    assert SECRET not in cli.ok("search", "spare key code", "--json").stdout
    ids = live_fact_ids(cli.vault)
    assert [ids.get(memory_id) for memory_id in own] == [1] * len(own)
    assert replay_commits(cli) == 1  # the stale side's changes committed exactly once
    assert records_left(cli) == []
    assert not (cli.vault / ".git" / "MERGE_HEAD").exists()
    dirty = git(cli.vault, "status", "--porcelain").splitlines()
    if edited is None:
        assert dirty == []
    else:  # the person's uncommitted edit is kept, and it is the only change left
        assert "April" in edited.read_text()
        assert [line[3:] for line in dirty] == [str(edited.relative_to(cli.vault))]
    git(cli.vault, "fsck", "--full")  # raises when git finds the repository broken


def converge(laptop: Cli, desktop: Cli, edited: Path) -> None:
    git(desktop.vault, "commit", "-qam", "the person's edit", check=False)  # unless doctor --fix committed it
    for cli in (desktop, laptop, desktop):
        cli.ok("sync")
    assert tree(laptop.vault) == tree(desktop.vault)
    assert texts(laptop) == texts(desktop) == sorted([*OWN, "The boiler service is due in April"])
    for cli in (laptop, desktop):
        assert leftovers(cli.vault, SECRET) == []


@pytest.mark.parametrize(("step", "sig"), [
    ("reset", signal.SIGKILL),  # HEAD moved to the rewritten history, nothing replayed yet
    ("replay", signal.SIGKILL),  # one file replayed, not committed
    ("replay", signal.SIGINT),  # Ctrl-C: Python's own cleanup runs, the record stays
    ("commit", signal.SIGTERM),  # replayed and committed, not pushed, not purged
    ("purge", signal.SIGKILL),  # pushed; the index still holds the erased memory
    ("pruning", signal.SIGKILL),  # purged; the stale history's objects still in this clone
])
def test_the_stale_device_killed_mid_adoption_is_finished_by_the_next_sync(templates, tmp_path, step, sig):
    laptop, desktop, own, edited = stale_desktop(templates, tmp_path)
    killed_at(desktop, step, sig)
    assert records_left(desktop)  # the adoption's record is left for the next sync
    for own_file in [] if step == "pruning" else (desktop.vault / "entries").rglob(f"*{own[0]}.md"):
        # what a kill inside the replay's atomic write leaves beside the file: the next sync removes it
        own_file.with_name(f".{own_file.name}.k1l2m3.tmp").write_text("half a replayed file")
    doctor = desktop("doctor", "--json")
    assert "adopting the history an erase rewrote was cut short" in doctor.stdout
    if step in ("purge", "pruning"):
        assert leftovers(desktop.vault, SECRET)  # what the next sync must still take away

    report = desktop.ok("sync", "--json").json()
    assert report["recovered"] and report["outcome"] == "erasure adopted"
    assert_finished(desktop, own, edited)
    assert "adopting" not in desktop("doctor", "--json").stdout
    converge(laptop, desktop, edited)


@pytest.mark.parametrize("step", ["replay", "commit", "purge"])
def test_the_erasing_device_killed_mid_adoption_is_finished_by_the_next_sync(templates, tmp_path, step):
    """The desktop pushed on the old history after the laptop's erase: the laptop's sync replays the
    desktop's memories, replaces the remote with a lease and prunes; killed anywhere in there, the
    next sync does what was left."""
    remote, laptop, desktop, own = stale_remote(templates, tmp_path)

    killed_at(laptop, step)
    report = laptop.ok("sync", "--json").json()
    assert report["recovered"] and report["pushed"] or step == "purge"
    assert SECRET not in remote_log(remote)
    assert_finished(laptop, own)
    desktop.ok("sync")
    laptop.ok("sync")
    assert tree(laptop.vault) == tree(desktop.vault)
    assert leftovers(desktop.vault, SECRET) == []


def test_kill_9_at_random_instants_of_an_adoption_is_finished_by_the_next_sync(templates, tmp_path):
    """No pause point: the sync is killed a random time after its adoption record is written (in the
    reset, the replay, the commit, the push, the purge or the prune, wherever that lands). At least three
    rounds, more (up to eight) while too few kills landed before the sync ended: how long an adoption takes
    depends on the machine's load, and a round whose sync ended first proves nothing of a kill."""
    rng = random.Random(25)
    killed = cut_short = 0
    for round_ in range(8):
        laptop, desktop, own, edited = stale_desktop(templates, tmp_path / f"round{round_}")
        record = desktop.vault / STATE / ADOPTING
        killed += killed_after(["sync", "--json", "--vault", str(desktop.vault)], record, rng.uniform(0, 0.6))
        cut_short += record.exists()
        assert desktop.ok("sync", "--json").json()["outcome"] in ("erasure adopted", "up-to-date", "pushed")
        assert_finished(desktop, own, edited)
        converge(laptop, desktop, edited)
        if round_ >= 2 and killed >= 2 and cut_short >= 1:
            break
    assert killed >= 2 and cut_short >= 1  # some kills landed mid-adoption, and the next sync finished them


@pytest.mark.parametrize("step", ["reset", "replay"])
def test_a_memory_added_between_the_kill_and_the_next_sync_is_kept(templates, tmp_path, step):
    """The person goes on using memvault after the kill (a commit over whatever HEAD the kill left):
    the adoption is finished over it, and nothing of either is lost."""
    laptop, desktop, own, edited = stale_desktop(templates, tmp_path)
    killed_at(desktop, step)
    later = add(desktop, "The desktop's owner repaints the shed in May")
    desktop.ok("sync")
    assert_finished(desktop, [*own, later], edited)
    git(desktop.vault, "commit", "-qam", "the person's edit", check=False)  # unless doctor --fix committed it
    for cli in (desktop, laptop, desktop):
        cli.ok("sync")
    assert tree(laptop.vault) == tree(desktop.vault)
    assert "The desktop's owner repaints the shed in May" in texts(laptop)


@pytest.mark.parametrize("step", ["replay", "purge"])
def test_doctor_fix_finishes_a_killed_adoption_without_the_network(templates, tmp_path, step):
    laptop, desktop, own, edited = stale_desktop(templates, tmp_path)
    killed_at(desktop, step)
    git(desktop.vault, "remote", "set-url", "origin", str(tmp_path / "gone.git"))  # offline: no fetch, no push
    fixed = desktop.ok("doctor", "--fix", "--json").json()["fixed"]
    assert "finished the adoption of an erased history a killed sync left" in fixed
    assert "April" in edited.read_text()  # the person's edit, kept (and committed by --fix, as doctor does)
    assert_finished(desktop, own)
    git(desktop.vault, "remote", "set-url", "origin", str(tmp_path / "remote.git"))
    converge(laptop, desktop, edited)


def test_doctor_fix_on_the_erasing_device_replays_and_leaves_the_push_to_the_next_sync(templates, tmp_path):
    remote, laptop, desktop, own = stale_remote(templates, tmp_path)
    killed_at(laptop, "replay")

    fixed = laptop.ok("doctor", "--fix", "--json").json()["fixed"]
    assert any("`memvault sync` pushes it and prunes" in line for line in fixed)
    assert records_left(laptop) == ["sync-adopt.json"] and replay_commits(laptop) == 1
    assert laptop.ok("sync", "--json").json()["pushed"]
    assert SECRET not in remote_log(remote)
    assert_finished(laptop, own)


def test_a_replayed_file_a_person_edits_after_the_kill_is_not_put_back(templates, tmp_path):
    laptop, desktop, own, edited = stale_desktop(templates, tmp_path)
    killed_at(desktop, "replay")
    [replayed] = [desktop.vault / line[3:] for line in git(desktop.vault, "status", "--porcelain", "-uall").splitlines()
                  if "facts" in line and desktop.vault / line[3:] != edited]
    # The person's edit is the later one (its updated_at says so): a hand edit that leaves updated_at as it was
    # ties with the replayed version, and merge_entry breaks a tie by the files' bytes, alike on every device.
    text = replayed.read_text().replace("The desktop's owner", "The desktop's own person")
    replayed.write_text(re.sub(r"^updated_at: .*$", "updated_at: '2099-01-01T00:00:00+00:00'", text, count=1,
                               flags=re.MULTILINE))

    stopped = desktop("sync")
    assert stopped.exit_code == 6 and "was edited after a sync" in stopped.stderr, stopped.stderr
    assert "desktop's own person" in replayed.read_text() and records_left(desktop) == ["sync-adopt.json"]
    git(desktop.vault, "add", "-A", "entries")
    git(desktop.vault, "commit", "-qm", "the person's edits")
    assert desktop.ok("sync", "--json").json()["outcome"] == "erasure adopted"
    assert_finished(desktop, own)
    assert sum("desktop's own person" in text for text in texts(desktop)) == 1
