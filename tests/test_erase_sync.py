"""An erase on one device, then `memvault sync` on every device (memvault/vault/devices/adopt.py): real
clones of a bare remote on disk. The erased text never comes back to the erasing device, the other
device loses it from its work tree, its index and its git objects, the erasure record is in both
histories, and a third round is clean.

What stays: the bare remote's own unreachable objects until the host's gc (`git gc --prune=now`
there); on the devices nothing, since the sync that adopts an erase expires reflogs and prunes."""

from __future__ import annotations

import subprocess

import pytest

from tests.support.cli import Cli
from tests.test_erase import leftovers
from tests.test_sync_devices import assert_clean, devices, git, live_fact_ids, tree

pytestmark = pytest.mark.timeout(600)

SECRET = "Quetzal-Marmalade-5531"  # not a token shape: redaction leaves it, only erase removes it


def add(cli: Cli, text: str) -> str:
    return cli.ok("add", text, "--json").json()["results"][0]["id"]


def texts(cli: Cli) -> list[str]:
    return sorted(entry["text"] for entry in cli.ok("list", "--json").json())


def remote_log(remote) -> str:
    return subprocess.run(["git", "-C", str(remote), "log", "--all", "-p"], capture_output=True, text=True,
                          check=True).stdout


def remote_objects(remote) -> bytes:
    return subprocess.run(["git", "-C", str(remote), "cat-file", "--batch-all-objects", "--batch", "--unordered"],
                          capture_output=True, check=True).stdout


def records(cli: Cli) -> list[str]:
    return git(cli.vault, "log", "--format=%H", "--grep=^Memvault-Operation: erase$").split()


def test_an_erase_reaches_the_other_device_through_sync(tmp_path):
    remote, (laptop, desktop) = devices(tmp_path)
    add(laptop, f"The spare key code is {SECRET}")
    add(laptop, "The boiler service is due in March")
    laptop.ok("sync")
    desktop.ok("sync")
    assert SECRET in desktop.ok("search", "spare key code", "--json").stdout  # the desktop's index holds it
    garden = add(desktop, "The desktop's owner plants tulips in October")  # not pushed yet
    laptop.ok("erase", "--matching", SECRET, "-y", "--reason", "asked by the user")

    report = laptop.ok("sync", "--json").json()
    assert leftovers(laptop.vault, SECRET) == []  # the fetched old history did not come back
    assert SECRET not in remote_log(remote)  # replaced, leased on the head fetched
    assert report["outcome"] == "erasure adopted" and report["pushed"]

    report = desktop.ok("sync", "--json").json()
    assert leftovers(desktop.vault, SECRET) == []  # tree, index (and WAL), objects, packs, reflogs
    assert report["outcome"] == "erasure adopted" and report["erased"]
    assert SECRET not in desktop.ok("search", "spare key code", "--json").stdout
    assert live_fact_ids(desktop.vault).get(garden) == 1  # its own memory replayed, not lost

    laptop.ok("sync")  # the third round: the desktop's memory arrives, nothing erased comes back
    for cli in (laptop, desktop):
        assert texts(cli) == ["The boiler service is due in March", "The desktop's owner plants tulips in October"]
        assert len(records(cli)) == 1
        assert leftovers(cli.vault, SECRET) == []
        assert_clean(cli.vault)
    assert tree(laptop.vault) == tree(desktop.vault)
    again = [cli.ok("sync", "--json").json()["outcome"] for cli in (desktop, laptop)]
    assert again == ["up-to-date", "up-to-date"]
    # The bare remote still holds the replaced history's objects, unreachable, until its own gc.
    assert SECRET.encode() in remote_objects(remote)
    subprocess.run(["git", "-C", str(remote), "gc", "-q", "--prune=now"], check=True)
    assert SECRET.encode() not in remote_objects(remote)


def test_the_erasing_device_replays_what_another_device_pushed_on_the_old_history(tmp_path):
    """The desktop pushes on the old history after the laptop's erase (an edit of the erased memory
    among it): the laptop's sync keeps the desktop's new memory, not the edit, and leases its push."""
    remote, (laptop, desktop) = devices(tmp_path)
    secret = add(laptop, f"The spare key code is {SECRET}")
    laptop.ok("sync")
    desktop.ok("sync")
    laptop.ok("erase", secret, "-y")
    desktop.ok("edit", secret, "-m", f"The spare key code is {SECRET}, under the blue pot")
    kept = add(desktop, "The desktop's owner runs on Tuesdays")
    desktop.ok("sync")  # the remote's old history moves on: the laptop's lease is for the head before

    report = laptop.ok("sync", "--json").json()
    assert leftovers(laptop.vault, SECRET) == [] and SECRET not in remote_log(remote)
    assert report["outcome"] == "erasure adopted" and report["pushed"]
    assert live_fact_ids(laptop.vault) == {kept: 1}

    desktop.ok("sync")
    assert leftovers(desktop.vault, SECRET) == []
    assert texts(desktop) == ["The desktop's owner runs on Tuesdays"]
    laptop.ok("sync")
    assert tree(laptop.vault) == tree(desktop.vault)
    for cli in (laptop, desktop):
        assert_clean(cli.vault)


def test_an_uncommitted_edit_where_the_adoption_must_write_stops_it_and_is_kept(tmp_path):
    _, (laptop, desktop) = devices(tmp_path)
    add(laptop, f"The spare key code is {SECRET}")
    laptop.ok("sync")
    desktop.ok("sync")
    own = add(desktop, "The desktop's owner bakes rye bread")
    [path] = (desktop.vault / "entries").rglob(f"*{own}.md")
    path.write_text(path.read_text().replace("rye", "spelt"))  # a person's edit, not committed
    laptop.ok("erase", "--matching", SECRET, "-y")
    laptop.ok("sync")

    stopped = desktop("sync")
    assert stopped.exit_code == 6 and "uncommitted edit" in stopped.stderr and "Traceback" not in stopped.stderr
    assert "spelt" in path.read_text()  # nothing lost
    git(desktop.vault, "commit", "-qam", "the person's edit")
    report = desktop.ok("sync", "--json").json()
    assert report["outcome"] == "erasure adopted"
    assert leftovers(desktop.vault, SECRET) == [] and texts(desktop) == ["The desktop's owner bakes spelt bread"]


def test_on_the_erasing_device_an_uncommitted_edit_the_replay_would_overwrite_stops_it(tmp_path):
    _, (laptop, desktop) = devices(tmp_path)
    add(laptop, f"The spare key code is {SECRET}")
    shared = add(laptop, "The bins go out on Thursday")
    laptop.ok("sync")
    desktop.ok("sync")
    laptop.ok("erase", "--matching", SECRET, "-y")
    desktop.ok("edit", shared, "-m", "The bins go out on Wednesday")
    desktop.ok("sync")  # on the old history
    [path] = (laptop.vault / "entries").rglob(f"*{shared}.md")
    path.write_text(path.read_text().replace("Thursday", "Friday"))  # the laptop's person, not committed

    stopped = laptop("sync")
    assert stopped.exit_code == 6 and "uncommitted edit" in stopped.stderr and "Traceback" not in stopped.stderr
    assert "Friday" in path.read_text()
