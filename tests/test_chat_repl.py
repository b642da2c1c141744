"""`memvault chat` as a REPL, driven through a pipe: slash commands never reach the model or the vault,
Ctrl-C during an answer keeps the user's message (the partial answer is not stored)."""

import json

import pytest

from memvault.core.base import Storage
from tests.support.cli import Cli
from tests.support.scripted_llm import ScriptedLLM, chunks


class ChatLLM(ScriptedLLM):
    class settings:  # what the chat banner reads
        model = "scripted"


class InterruptedLLM(ChatLLM):
    """Streams the first piece of its answer, then the user presses Ctrl-C (what SIGINT raises)."""

    def stream(self, messages):
        self.reply(messages, None, "stream")
        yield chunks("I keep talking and talking")[0]
        raise KeyboardInterrupt


def scripted(cls=ChatLLM):
    return cls([("Latest user message", lambda prompt: json.dumps(
        ["The user keeps bees in Coimbra"] if "bees" in prompt.split("Latest user message")[-1] else []))],
        default="Nice.")


@pytest.fixture
def cli(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    return cli


def use(monkeypatch, llm):
    monkeypatch.setattr(Storage, "llm", lambda self: llm)
    return llm


def texts(cli, role):
    return [r["text"] for r in cli.ok("list", "--role", role, "--json").json()]


def streamed(llm):
    return [c for c in llm.calls if c.method == "stream"]


def test_slash_commands_never_reach_the_model_or_the_vault(cli, monkeypatch):
    llm = use(monkeypatch, scripted())
    result = cli.ok("chat", input="/help\n/memories\n/frobnicate now\n/session\n/exit\n")
    assert "/forget ID" in result.stderr and "/incognito" in result.stderr  # the help
    assert "unknown command /frobnicate" in result.stderr
    assert "usage: /session end" in result.stderr
    assert llm.calls == [] and texts(cli, "user") == []
    assert {c["operation"] for c in cli.ok("log", "--json").json()} == {"init", "core"}  # no chat commit


def test_double_slash_sends_a_message_starting_with_a_slash(cli, monkeypatch):
    llm = use(monkeypatch, scripted())
    cli.ok("chat", input="//usr/bin holds programs\n/quit\n")
    assert streamed(llm)[0].messages[-1]["content"].endswith("/usr/bin holds programs")
    assert texts(cli, "user") == ["/usr/bin holds programs"]


def test_ctrl_c_during_the_answer_keeps_the_message_not_the_partial_answer(cli, monkeypatch):
    llm = use(monkeypatch, scripted(InterruptedLLM))
    result = cli.ok("chat", input="My name is Bruno and I keep bees in Coimbra\n/exit\n")
    assert "answer interrupted" in result.stderr
    assert texts(cli, "user") == ["My name is Bruno and I keep bees in Coimbra"]
    assert texts(cli, "assistant") == []  # the cut answer is not remembered
    assert "The user keeps bees in Coimbra" in texts(cli, "memory")  # and the message is curated as any other
    assert len(streamed(llm)) == 1


def test_the_chat_goes_on_after_an_interrupted_answer(cli, monkeypatch):
    llm = use(monkeypatch, scripted(InterruptedLLM))
    cli.ok("chat", input="first question\nsecond question\n/exit\n")
    second = streamed(llm)[1].messages
    roles = [m["role"] for m in second if m["role"] != "system"]
    assert roles == ["user", "assistant", "user"]  # still alternating, as chat templates require
    assert texts(cli, "user") == ["first question", "second question"]


def test_memories_shows_what_was_used_and_what_would_be_injected(cli, monkeypatch):
    use(monkeypatch, scripted())
    cli.ok("add", "--no-llm", "The user's dog is called Pirata")
    result = cli.ok("chat", input="/memories what is my dog called\nHow is my dog Pirata?\n/memories\n/exit\n")
    assert result.stdout.count("The user's dog is called Pirata") == 2
    assert "no memories" not in result.stderr


def test_memories_shows_the_ids_forget_takes(cli, monkeypatch):
    use(monkeypatch, scripted())
    added = cli.ok("add", "--no-llm", "--json", "The user's dog is called Pirata").json()["results"][0]["id"]
    assert added[:8] in cli.ok("chat", input="/memories my dog Pirata\n/exit\n").stdout


def test_forget_soft_deletes_through_the_facade(cli, monkeypatch):
    use(monkeypatch, scripted())
    added = cli.ok("add", "--no-llm", "--json", "The user's dog is called Pirata").json()["results"][0]["id"]
    result = cli.ok("chat", input=f"/forget {added[:8]}\n/forget {added[:8]}\n/forget\n/exit\n")
    assert f"forgot {added[:8]}" in result.stderr
    assert "is deleted" in result.stderr and "usage: /forget ID" in result.stderr  # one line each, chat goes on
    assert texts(cli, "memory") == []
    assert cli.ok("show", added, "--json").json()["deleted_at"]  # soft: kept in deleted/


def test_forget_cannot_reach_another_users_memory(cli, monkeypatch):
    use(monkeypatch, scripted())
    alices = cli.ok("add", "--no-llm", "--json", "--user", "alice", "Alice's diary is in the drawer").json()
    added = alices["results"][0]["id"]
    result = cli.ok("chat", "--user", "bob", input=f"/forget {added}\n/exit\n")
    assert "no memory" in result.stderr
    assert texts(cli, "memory") == ["Alice's diary is in the drawer"]


def test_incognito_toggle_reads_and_writes_nothing_while_on(cli, monkeypatch):
    llm = use(monkeypatch, scripted())
    cli.ok("add", "--no-llm", "The user's dog is called Pirata")
    cli.ok("chat", input="/incognito\nmy dog Pirata and my bees\n/incognito\nmy dog Pirata again\n/exit\n")
    first, second = (c.messages[-1]["content"] for c in streamed(llm))
    assert "Pirata" in first and "The user's dog is called Pirata" not in first  # not read while incognito
    assert "The user's dog is called Pirata" in second
    assert texts(cli, "user") == ["my dog Pirata again"]
    assert "The user keeps bees in Coimbra" not in texts(cli, "memory")  # not curated either


def test_session_end_ends_it_and_the_chat_goes_on(cli, monkeypatch):
    use(monkeypatch, ChatLLM([("Latest user message", "[]"), ("session", "The user talked about bees.")],
                             default="Nice."))
    result = cli.ok("chat", input="one\ntwo\nthree\n/session end\nfour\n/exit\n")
    assert "Session ended" in result.stderr
    assert texts(cli, "user") == ["one", "two", "three", "four"]
    assert len(texts(cli, "session")) == 1  # written at /session end; "four" alone is too short for another
