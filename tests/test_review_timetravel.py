"""Hostile review of time travel on a vault agent-cli wrote: `show --as-of` reaches every id today's
`show` reaches (agent-cli's summary ids, hand-made ids), and a past file reads with the same
defaults as today's (a tombstone agent-cli moved is deleted then as now, in its own conversation)."""

from __future__ import annotations

from tests.support.cli import Cli
from tests.test_agentcli_vault import JANE, SUMMARY, cli  # noqa: F401 - the fixture, shared


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
    def on(day: str) -> dict[str, str]:
        return {"GIT_AUTHOR_DATE": f"{day}T12:00:00+00:00", "GIT_COMMITTER_DATE": f"{day}T12:00:00+00:00"}

    vault_cli = Cli(tmp_path / "vault")
    vault_cli.ok("init", env=on("1972-01-01"))
    vault_cli.ok("add", "The first fact, from 1972", "--no-llm", env=on("1972-01-02"))
    vault_cli.ok("add", "A later fact, from 2026", "--no-llm", env=on("2026-01-02"))

    def found(day: str) -> list[str]:
        return [hit["text"] for hit in vault_cli.ok("search", "fact", "--as-of", day, "--json").json()]

    assert found("1972-06-01") == ["The first fact, from 1972"]
    too_early = vault_cli("search", "fact", "--as-of", "1971-06-01")
    assert too_early.exit_code == 2 and "no commit at or before 1971-06-01" in too_early.stderr
