"""A vault moves between machines through a git remote."""

import subprocess

from tests.support.cli import Cli


def test_push_then_pull_carries_memories_and_reindexes(tmp_path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    laptop = Cli(tmp_path / "laptop")
    laptop.ok("init")
    subprocess.run(["git", "remote", "add", "origin", str(remote)], cwd=laptop.vault, check=True)
    laptop.ok("add", "The boiler service is due in March")
    laptop.ok("push")
    subprocess.run(["git", "clone", "-q", str(remote), str(tmp_path / "desktop")], check=True)
    desktop = Cli(tmp_path / "desktop")
    desktop.ok("init")  # an existing clone is used as is
    desktop.ok("search", "boiler", "--json")
    laptop.ok("add", "The dentist appointment moved to Tuesday")
    laptop.ok("push")
    report = desktop.ok("pull", "--json").json()
    assert report["added"] == 1
    assert desktop.ok("search", "dentist", "--json").json()[0]["text"] == "The dentist appointment moved to Tuesday"


def test_push_without_a_remote_is_a_clear_error(tmp_path):
    cli = Cli(tmp_path / "v")
    cli.ok("init")
    result = cli("push")
    assert result.exit_code == 1 and "no git remote" in result.stderr
