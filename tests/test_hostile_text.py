"""Text a person or a model sends that must not act on a terminal or the clock (issue 23, item 8):
ESC, OSC and bidi characters never reach commit subjects raw, and `--as-of` refuses the future."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta

import pytest

from tests.support.cli import initialised


@pytest.fixture
def cli(tmp_path):
    return initialised(tmp_path / "vault")


def test_escape_osc_and_bidi_characters_never_reach_a_commit_subject_raw(cli):
    text = "pay \x1b]0;owned\x07 Bob \x1b[2J\u202eevil\u2066 \x85 now"
    cli.ok("add", text, "--no-llm")
    subjects = subprocess.run(["git", "-C", str(cli.vault), "log", "--format=%s"], capture_output=True,
                              check=True).stdout.decode("utf-8")
    assert not any(c in subjects for c in "\x1b\x07\u202e\u2066\x85")
    assert "\\x1b]0;owned\\x07" in subjects  # shown, not acted on
    [row] = [r for r in cli.ok("list", "--json").json() if "Bob" in r["text"]]
    assert row["text"] == text  # the memory itself keeps what was said


@pytest.mark.parametrize("when", ["9999-12-31", (datetime.now(UTC) + timedelta(days=2)).strftime("%Y-%m-%d"),
                                  (datetime.now(UTC) + timedelta(hours=3)).strftime("%Y-%m-%dT%H:%M:%S")],
                         ids=["far", "in-two-days", "in-three-hours"])  # clock-free ids: alike in all workers
def test_as_of_a_moment_in_the_future_is_refused_in_one_line(cli, when):
    cli.ok("add", "Ada keeps bees", "--no-llm")
    result = cli("search", "bees", "--as-of", when)
    assert result.exit_code != 0
    assert "in the future" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_as_of_today_and_now_are_still_the_present(cli):
    cli.ok("add", "Ada keeps bees", "--no-llm")
    for when in (datetime.now(UTC).strftime("%Y-%m-%d"), datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")):
        assert any("bees" in hit["text"] for hit in cli.ok("search", "bees", "--as-of", when, "--json").json())
