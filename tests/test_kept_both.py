"""Settling what a sync kept both versions of in a core file (`memvault resolve`, `doctor --fix
--kept-both`): real clones of a bare remote, real merges, a person's choice, one commit."""

from __future__ import annotations

import pytest

from memvault.errors import UsageError
from memvault.vault.devices.keptboth import blocks, settled
from memvault.vault.devices.merge import KEPT_BOTH, merge_core
from tests.support.cli import Cli
from tests.test_sync_devices import devices, git, sync_all

BASE = "# About me\nName: Ann\nLikes: tea\nLives: Oslo\n"


def kept(ours: str, theirs: str) -> str:
    text, record = merge_core(BASE, ours, theirs, "core/USER.md")
    assert record == {"event": "MERGE-KEPT-BOTH", "path": "core/USER.md"}
    return text


def test_settled_keeps_one_version_or_both_and_drops_the_headings():
    text = kept(BASE.replace("tea", "green tea"), BASE.replace("tea", "coffee"))
    [block] = blocks(text)
    assert sorted(block.versions) == [("Likes: coffee",), ("Likes: green tea",)]
    first, second = block.versions[0][0], block.versions[1][0]
    assert settled(text, "1") == BASE.replace("Likes: tea", first)
    assert settled(text, "2") == BASE.replace("Likes: tea", second)
    assert settled(text, "both") == BASE.replace("Likes: tea", f"{first}\n{second}")
    assert settled(text, "ours", ours_is=lambda _: 2) == settled(text, "2")
    assert settled(text, "theirs", ours_is=lambda _: 2) == settled(text, "1")
    # a side that removed the lines: an empty version
    text = kept(BASE.replace("Likes: tea\n", ""), BASE.replace("tea", "coffee"))
    assert sorted(settled(text, choice) for choice in ("1", "2")) == sorted(
        [BASE.replace("Likes: tea\n", ""), BASE.replace("tea", "coffee")])


def test_a_block_edited_by_hand_or_a_bad_choice_is_refused():
    text = kept(BASE.replace("tea", "green tea"), BASE.replace("tea", "coffee"))
    with pytest.raises(UsageError, match="edited by hand"):
        settled(text.replace("### Version 2\n", ""), "1")
    with pytest.raises(UsageError, match="no end line"):
        settled(text.replace("<!-- end", "<!-- gone"), "both")
    with pytest.raises(UsageError, match="choose one of"):
        settled(text, "mine")
    with pytest.raises(UsageError, match="choose 1 or 2"):
        settled(text, "ours")


def clashed(tmp_path):
    """Two devices that changed the same line of USER.md: the desktop merged (its own version is
    ours there), the laptop fast-forwarded to that merge from its own commit."""
    remote, (laptop, desktop) = devices(tmp_path)
    laptop.ok("core", "edit", "USER", "--text", "Name: Ann\nLikes: tea\nLives: Oslo")
    sync_all(laptop, desktop, rounds=1)
    laptop.ok("core", "edit", "USER", "--text", "Name: Ann\nLikes: green tea\nLives: Oslo")
    desktop.ok("core", "edit", "USER", "--text", "Name: Ann\nLikes: coffee\nLives: Oslo")
    laptop.ok("sync")
    desktop.ok("sync")
    laptop.ok("sync")
    for cli in (laptop, desktop):
        assert KEPT_BOTH in (cli.vault / "core" / "USER.md").read_text()
    return remote, laptop, desktop


def user_md(cli: Cli) -> str:
    return (cli.vault / "core" / "USER.md").read_text()


def test_resolve_ours_is_each_devices_own_version_in_one_commit(tmp_path):
    remote, laptop, desktop = clashed(tmp_path)
    doctor = desktop("doctor", "--no-llm-check", "--json").json()
    [check] = [c for c in doctor["checks"] if c["name"] == "sync"]
    assert check["status"] == "warn" and "memvault resolve NAME --keep" in check["fix"]
    before = git(desktop.vault, "rev-parse", "HEAD").strip()
    desktop.ok("resolve", "core/USER.md", "--keep", "ours")
    assert user_md(desktop) == "Name: Ann\nLikes: coffee\nLives: Oslo\n"
    assert git(desktop.vault, "rev-list", "--count", f"{before}..HEAD").strip() == "1"
    assert git(desktop.vault, "log", "-1", "--format=%s").startswith("memvault resolve: USER.md: kept ours")
    assert git(desktop.vault, "status", "--porcelain") == ""
    assert laptop.ok("resolve", "USER", "--keep", "ours", "--json").json()["resolved"] == ["core/USER.md"]
    assert user_md(laptop) == "Name: Ann\nLikes: green tea\nLives: Oslo\n"
    # nothing left to settle: said, nothing committed
    again = desktop("resolve", "USER", "--keep", "theirs")
    assert again.exit_code == 2 and "holds no lines a sync kept both versions of" in again.stderr
    assert desktop.ok("resolve", "--keep", "both").stderr.startswith("No core file holds")


def test_theirs_and_a_fresh_clone_that_cannot_tell_ours(tmp_path):
    remote, laptop, desktop = clashed(tmp_path)
    desktop.ok("resolve", "--keep", "theirs")
    assert user_md(desktop) == "Name: Ann\nLikes: green tea\nLives: Oslo\n"
    Cli(tmp_path / "unused").ok("clone", str(remote), str(tmp_path / "server"))
    server = Cli(tmp_path / "server")
    refused = server("resolve", "USER", "--keep", "ours")
    assert refused.exit_code == 2 and "choose 1 or 2" in refused.stderr and "Traceback" not in refused.stderr
    assert KEPT_BOTH in user_md(server)  # untouched
    server.ok("resolve", "USER", "--keep", "2")
    assert KEPT_BOTH not in user_md(server) and user_md(server).count("Likes:") == 1


def test_doctor_fix_kept_both_settles_every_file_and_plain_fix_leaves_them(tmp_path):
    _, laptop, desktop = clashed(tmp_path)
    desktop.ok("doctor", "--fix", "--no-llm-check")
    assert KEPT_BOTH in user_md(desktop)  # a choice a person makes: plain --fix never guesses
    assert desktop("doctor", "--kept-both", "both", "--no-llm-check").exit_code == 2  # needs --fix
    result = desktop.ok("doctor", "--fix", "--kept-both=both", "--no-llm-check", "--json").json()
    assert "kept both in core/USER.md" in result["fixed"]
    assert [c["status"] for c in result["checks"] if c["name"] == "sync"] == ["ok"]
    assert user_md(desktop) in ("Name: Ann\nLikes: coffee\nLikes: green tea\nLives: Oslo\n",
                                "Name: Ann\nLikes: green tea\nLikes: coffee\nLives: Oslo\n")


def test_a_bad_choice_is_refused_even_when_nothing_is_left_to_settle(tmp_path):
    """`resolve --keep 3` on a vault with no kept-both block said "No core file holds..." and exited 0."""
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    refused = cli("resolve", "--keep", "3")
    assert refused.exit_code == 2 and "choose one of ours, theirs, both, 1, 2" in refused.stderr
    assert "Traceback" not in refused.stderr
