"""Hostile review of time travel on a vault agent-cli wrote: `show --as-of` reaches every id today's
`show` reaches (agent-cli's summary ids, hand-made ids), and a past file reads with the same
defaults as today's (a tombstone agent-cli moved is deleted then as now, in its own conversation)."""

from __future__ import annotations

import gc
import hashlib
import os
import subprocess

from tests.support.cli import Cli
from tests.test_agentcli_vault import JANE, SUMMARY, cli  # noqa: F401 - the fixture, shared
from tests.test_time_travel import on


def test_show_as_of_reaches_ids_that_are_no_uuid(cli):  # noqa: F811 - the fixture
    summary = cli.ok("show", SUMMARY, "--as-of", "HEAD", "--json").json()
    assert summary["id"] == SUMMARY and summary["conversation_id"] == "My Chat"
    assert cli.ok("show", "note-1", "--as-of", "HEAD", "--json").json()["text"] == "The user's cat is called Miso."
    refused = cli("show", "../x", "--as-of", "HEAD")
    assert refused.exit_code != 0 and "invalid memory id" in refused.stderr


def test_a_past_agentcli_tombstone_reads_as_deleted_as_it_does_today(cli):  # noqa: F811 - the fixture
    today = cli.ok("show", JANE, "--json").json()
    past = cli.ok("show", JANE, "--as-of", "HEAD", "--json").json()
    assert today["deleted_at"] and past["deleted_at"]
    assert past["conversation_id"] == today["conversation_id"] == "default"
    assert past["path"] == today["path"]


def test_a_date_before_1973_is_read_as_that_date_not_as_today(tmp_path):
    # git reads '--before=@<seconds>' below 1e8 (March 1973) as an approximate date, not a time:
    # --as-of 1971-06-01 answered with today's vault. A vault whose history starts in 1972 shows it.
    vault_cli = Cli(tmp_path / "vault")
    vault_cli.ok("init", env=on("1972-01-01"))
    vault_cli.ok("add", "The first fact, from 1972", "--no-llm", env=on("1972-01-02"))
    vault_cli.ok("add", "A later fact, from 2026", "--no-llm", env=on("2026-01-02"))

    def found(day: str) -> list[str]:
        return [hit["text"] for hit in vault_cli.ok("search", "fact", "--as-of", day, "--json").json()]

    assert found("1972-06-01") == ["The first fact, from 1972"]
    too_early = vault_cli("search", "fact", "--as-of", "1971-06-01")
    assert too_early.exit_code == 2 and "no commit at or before 1971-06-01" in too_early.stderr


def test_relations_of_a_search_as_of_are_the_past_ones_and_todays_index_is_untouched(tmp_path, monkeypatch):
    # `search --as-of` printed the relations of TODAY's facts beside the past hits (and caught up,
    # so wrote, today's index): only --json, which prints no relations, was tested untouched.
    vault_cli = Cli(tmp_path / "vault")
    vault_cli.ok("init", env=on("2026-03-01"))
    fact = "0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9b01"
    folder = tmp_path / "vault" / "entries" / "default" / "facts"
    folder.mkdir(parents=True)
    (folder / f"20260302T120000000Z__{fact}.md").write_text(
        f"---\nid: {fact}\nrole: memory\nconversation_id: default\ncreated_at: '2026-03-02T12:00:00+00:00'\n"
        "subject: Alice\npredicate: works at\nobject: Acme\n---\nAlice works at Acme.\n")
    subprocess.run(["git", "add", "-A"], cwd=tmp_path / "vault", check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "by hand"],
                   cwd=tmp_path / "vault", check=True, env={**os.environ, **on("2026-03-02")})
    vault_cli.ok("rm", fact, env=on("2026-03-03"))
    assert "Acme" not in vault_cli.ok("search", "Alice").stdout  # today: deleted, no relation either
    gc.collect()  # in-process runs: a connection left to the collector would checkpoint today's WAL later
    index = tmp_path / "vault" / ".memvault" / "index.sqlite"
    today = hashlib.sha256(index.read_bytes()).hexdigest()
    past = vault_cli.ok("search", "Alice", "--as-of", "2026-03-02").stdout
    assert "Relations" in past and "acme" in past.split("Relations", 1)[1].lower()
    assert hashlib.sha256(index.read_bytes()).hexdigest() == today
    # The hits and their relations read one resolved past: the date is asked of git once.
    from memvault.vault.git import timetravel

    asked = []
    real = timetravel.resolve
    monkeypatch.setattr(timetravel, "resolve", lambda git, when: asked.append(when) or real(git, when))
    assert "Relations" in vault_cli.ok("search", "Alice", "--as-of", "2026-03-02").stdout
    assert asked == ["2026-03-02"]


def test_memory_search_as_of_neither_builds_nor_writes_todays_index(tmp_path, monkeypatch):
    # Memory.search first reindexed today's index (once per instance), as_of or not: a time-travel
    # question from a fresh Memory built (and embedded) the whole of today's index first.
    import memvault
    from memvault.settings import Settings

    def live_on(day: str) -> None:  # this process's commits dated that day
        for name, value in on(day).items():
            monkeypatch.setenv(name, value)

    with memvault.Memory(vault=tmp_path / "vault", settings=Settings()) as memory:
        live_on("2026-03-01")
        [added] = memory.add("Alice's favourite colour is teal", user_id="alice", infer=False)["results"]
        live_on("2026-03-02")
        memory.update(added["id"], "Alice's favourite colour is crimson")
    index = tmp_path / "vault" / ".memvault" / "index.sqlite"
    index.unlink()  # today's index gone (a fresh clone has none): a past question must not build it
    with memvault.Memory(vault=tmp_path / "vault", settings=Settings()) as memory:
        found = memory.search("favourite colour", user_id="alice", as_of="2026-03-01")["results"]
    assert [hit["memory"] for hit in found] == ["Alice's favourite colour is teal"]
    assert not index.exists()
