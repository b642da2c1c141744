"""Memory follows its owner (docs/architecture.md): a fact learnt in one conversation, an imported
ChatGPT history's included, reaches the prompt of the same user's later chat and proxy requests in
other conversations; plain imported turns only when asked (retrieval.follow_user_turns); another
user's memory never."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from memvault.core import Memvault
from memvault.core.base import Storage
from memvault.server.run import running
from memvault.transfer import import_source
from tests.support.cli import Cli
from tests.support.scripted_llm import ScriptedLLM
from tests.support.server import isolated_env, server_settings
from tests.support.upstream import served_upstream

EXPORT = Path(__file__).parent / "fixtures" / "chatgpt" / "conversations.json"
FACT = "The user is vegetarian."
TURN = "I'm vegetarian. Here is a photo of the hotel."
QUESTION = "Which dishes suit me, as a vegetarian?"


def not_a_chat(prompt: str) -> bool:
    return "Current message:" not in prompt  # the chat injection's header: this is a curation call


def curating_llm() -> ScriptedLLM:
    """Import curation: the vegetarian message gives its fact; the chat's answer is 'Noted.'."""
    return ScriptedLLM([
        (lambda p: not_a_chat(p) and "Previous summary:" in p, "The user is vegetarian."),
        (lambda p: not_a_chat(p) and "I'm vegetarian" in p.split("Latest user message")[-1],
         '{"facts": ["The user is vegetarian."]}'),
        (not_a_chat, '{"facts": []}'),
    ], default="Noted.")


@pytest.fixture
def cli(tmp_path, monkeypatch):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    cli.llm = curating_llm()
    monkeypatch.setattr(Storage, "llm", lambda self: cli.llm)
    return cli


def chat_prompt(cli: Cli, *args: str, env: dict | None = None) -> str:
    """The last user message `chat -m QUESTION` sent the model (memory injected)."""
    before = len(cli.llm.calls)
    cli.ok("chat", "-m", QUESTION, *args, env=env)
    return next(c for c in cli.llm.calls[before:] if c.method == "stream").messages[-1]["content"]


def test_an_imported_conversations_curated_fact_reaches_a_later_chat(cli):
    cli.ok("import", str(EXPORT), "--curate")
    facts = cli.ok("list", "--role", "memory", "--json").json()
    assert [(f["text"], f["conversation_id"] == "default") for f in facts] == [(FACT, False)]
    sent = chat_prompt(cli)  # in the conversation "default", which never saw the import
    assert f"[memory] {FACT}" in sent
    assert TURN not in sent  # plain imported turns: only on request
    assert FACT not in chat_prompt(cli, env={"MEMVAULT_RETRIEVAL_FOLLOW_USER": "false"})  # the switch works


def test_plain_imported_turns_reach_the_chat_on_request(cli):
    cli.ok("import", str(EXPORT))  # not curated: turns only
    assert TURN not in chat_prompt(cli)
    sent = chat_prompt(cli, "-c", "elsewhere", env={"MEMVAULT_RETRIEVAL_FOLLOW_USER_TURNS": "true"})
    assert f"[user] {TURN}" in sent
    assert "Alfama" not in sent  # the assistant's turns stay where they were said


def test_another_users_facts_never_follow(cli):
    cli.ok("add", "--no-llm", "--user", "alice", "-c", "alice-kitchen", "Alice is vegetarian and allergic to nuts")
    cli.ok("add", "--no-llm", "--user", "bob", "-c", "bob-garage", "Bob restores a vegetarian food truck")
    alice = chat_prompt(cli, "--user", "alice", "-c", "alice-travel")
    assert "Alice is vegetarian" in alice and "Bob restores" not in alice
    bob = chat_prompt(cli, "--user", "bob")
    assert "Bob restores" in bob and "Alice is vegetarian" not in bob
    owner = chat_prompt(cli)  # the vault's owner (no user): neither
    assert "Alice is vegetarian" not in owner and "Bob restores" not in owner


def test_an_imported_fact_reaches_a_proxy_request_and_a_scoped_key_never_sees_it(tmp_path):
    with served_upstream() as upstream, isolated_env(tmp_path / "home"):
        settings = server_settings(tmp_path / "vault", upstream.root + "/v1", "openai/fake")
        settings.server.keys = {"key-owner": {}, "key-bob": {"user_id": ["bob"]}}
        core = Memvault.open(settings, create=True)
        try:
            import_source(core, [str(EXPORT)], llm=curating_llm())
        finally:
            core.close()
        with running(settings) as url:
            for key in ("key-owner", "key-bob"):
                reply = httpx.post(url + "/v1/chat/completions", headers={"Authorization": f"Bearer {key}"},
                                   json={"model": "fake", "messages": [{"role": "user", "content": QUESTION}],
                                         "memory_id": "a-new-chat"}, timeout=120)
                assert reply.status_code == 200, reply.text
        prompts = [request["messages"][-1]["content"] for request in upstream.chat_requests()]
        owner, bob = [prompt for prompt in prompts if QUESTION in prompt][:2]  # not the curation calls
    assert f"[memory] {FACT}" in owner
    assert FACT not in bob


def test_mcp_with_memory_follows_the_user_and_stops_at_another(cli):
    from memvault.mcp.tools import MemoryTools
    from memvault.settings import Settings

    cli.ok("add", "--no-llm", "--user", "alice", "-c", "alice-kitchen", "Alice is vegetarian and allergic to nuts")
    settings = Settings()
    settings.vault.path = str(cli.vault)
    tools = MemoryTools(settings)
    try:
        alice = tools.with_memory(QUESTION, conversation="alice-new", user_id="alice")
        bob = tools.with_memory(QUESTION, conversation="alice-new", user_id="bob")
    finally:
        tools.core.close()
    assert "Alice is vegetarian" in alice and "Alice is vegetarian" not in bob
