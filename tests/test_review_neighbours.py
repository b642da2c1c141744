"""Hostile review of issue 16's neighbours: ids an agent-cli client or user sends that memvault
refused or mixed up. Real CLI, real files and git; the proxy case through `memvault serve` and the
real `openai` client (the fixtures of tests/test_agentcli_proxy.py)."""

from __future__ import annotations

import shutil
import time

import pytest

from memvault.vault.format import layout
from tests.support.cli import Cli
from tests.test_agentcli_proxy import chat, proxy, upstream  # noqa: F401 - fixtures, shared
from tests.test_agentcli_vault import FIXTURE, SUMMARY, git


@pytest.mark.parametrize("limit", [[], ["--limit", "5"]])
def test_listing_one_conversation_never_shows_another_that_shares_a_folder(tmp_path, limit):
    # "My_Chat" is a folder name as it is; "My Chat" is not, and its listing also reads My_Chat/
    # (where agent-cli keeps "My Chat"): only "My Chat"'s own entries may come back from there.
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    cli.ok("add", "the underscore one", "-c", "My_Chat", "--no-llm")
    cli.ok("add", "the spaced one", "-c", "My Chat", "--no-llm")
    spaced = cli.ok("list", "-c", "My Chat", "--json", *limit).json()
    assert [row["text"] for row in spaced] == ["the spaced one"]
    underscored = cli.ok("list", "-c", "My_Chat", "--json", *limit).json()
    assert [row["text"] for row in underscored] == ["the underscore one"]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_memory_id_windows_reserves_works_through_the_proxy(proxy):  # noqa: F811 - the fixture
    for memory_id in ("CON", "con.txt", "work."):
        answer = chat(proxy.url, f"Remember the colour ochre for {memory_id}.", memory_id=memory_id)
        assert answer.choices[0].message.content  # not a 400: any memory_id a client sends works
        deadline = time.monotonic() + 30
        while not Cli(proxy.vault).ok("list", "-c", memory_id, "--json").json() and time.monotonic() < deadline:
            time.sleep(0.05)
        rows = Cli(proxy.vault).ok("list", "-c", memory_id, "--json").json()
        assert rows and {row["conversation_id"] for row in rows} == {memory_id}
        folder = rows[0]["path"].split("/")[1]
        assert folder != memory_id and layout.is_portable_name(folder)


def test_history_of_a_deleted_summary_keeps_its_life_in_summary_md(tmp_path):
    # A summary lives in summary.md (no id in its name); `rm` moves it to deleted/<stamp>__<id>.md.
    # Its history must still show it was added there, not only (or nothing of) its tombstone.
    root = tmp_path / "agentcli"
    shutil.copytree(FIXTURE, root)
    git(root, "init", "-q")
    git(root, "-c", "user.name=Agent CLI", "-c", "user.email=agent-cli@local", "add", ".")
    git(root, "-c", "user.name=Agent CLI", "-c", "user.email=agent-cli@local", "commit", "-qm", "Initial commit")
    cli = Cli(root)
    cli.ok("rm", SUMMARY)
    events = [(row["event"], row["old_memory"], row["new_memory"])
              for row in cli.ok("history", SUMMARY, "--json").json()]
    text = "The user gardens: tomatoes on the balcony."
    assert events == [("ADD", None, text), ("DELETE", text, None)]
