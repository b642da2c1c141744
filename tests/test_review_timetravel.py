"""Hostile review of time travel on a vault agent-cli wrote: `show --as-of` reaches every id today's
`show` reaches (agent-cli's summary ids, hand-made ids), and a past file reads with the same
defaults as today's (a tombstone agent-cli moved is deleted then as now, in its own conversation)."""

from __future__ import annotations

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
