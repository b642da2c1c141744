"""The interactive `memvault chat` loop and `chat -m`, with a scripted LLM standing in for the model."""

import json

import pytest

from memvault.core.base import Storage
from tests.support.cli import Cli
from tests.support.scripted_llm import ScriptedLLM


class ScriptedSettingsLLM(ScriptedLLM):
    class settings:  # what the chat banner reads
        model = "scripted"


@pytest.fixture
def llm(monkeypatch):
    fake = ScriptedSettingsLLM([("Latest user message", json.dumps(["The user is planning a trip to Oslo"])),
                                ("Previous summary:", "The user plans a trip to Oslo.")],
                               default="Bring a warm coat for Oslo.")
    monkeypatch.setattr(Storage, "llm", lambda self: fake)
    return fake


@pytest.fixture
def cli(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    cli.ok("add", "The user hates the cold weather in Oslo")
    return cli


def test_interactive_chat_streams_persists_and_learns(cli, llm):
    result = cli.ok("chat", "--show-memories", input="I'm planning a trip to Oslo\n\n/exit\n")
    assert "Bring a warm coat for Oslo." in result.stdout
    assert "The user hates the cold weather in Oslo" in result.stdout  # --show-memories table
    sent = [c for c in llm.calls if c.method == "stream"][0].messages[-1]["content"]
    assert "[memory] The user hates the cold weather in Oslo" in sent and sent.endswith("I'm planning a trip to Oslo")
    assert [r["text"] for r in cli.ok("list", "--role", "user", "--json").json()] == ["I'm planning a trip to Oslo"]
    assert [r["text"] for r in cli.ok("list", "--role", "assistant", "--json").json()] == [
        "Bring a warm coat for Oslo."]
    facts = [r["text"] for r in cli.ok("list", "--role", "memory", "--json").json()]
    assert "The user is planning a trip to Oslo" in facts  # curation finished before exit
    assert cli.ok("list", "--role", "summary", "--json").json()[0]["text"] == "The user plans a trip to Oslo."


def test_end_of_input_leaves_cleanly(cli, llm):
    assert cli("chat", input="").exit_code == 0


def test_one_shot_prints_only_the_answer(cli, llm):
    result = cli.ok("chat", "-m", "Any advice for Oslo?")
    assert result.stdout.strip() == "Bring a warm coat for Oslo."


def test_no_memory_stores_nothing(cli, llm):
    cli.ok("chat", "--no-memory", "-m", "secret question")
    assert cli.ok("list", "--role", "user", "--json").json() == []


def test_chat_without_an_llm_is_a_clear_error(cli):
    result = cli("chat", "-m", "hi")
    assert result.exit_code == 1 and "no LLM configured" in result.stderr
