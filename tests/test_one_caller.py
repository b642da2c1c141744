"""One caller (issue 35): who is asking travels as a `Caller` and core alone decides what they see.

Each door is driven with a caller that must not see alice's memory (bob, or a chat's owner) and with
one that must (alice, or the vault's owner at the CLI and MCP): by id (get, update, delete, history)
and in listings. Mutate the one decision (`Caller.sees`, `Caller.walls`) and these tests fail; before
it, `api.Memory`'s get/update/delete could ignore scopes and all of test_api_memory.py still passed.
"""

from __future__ import annotations

import json

import httpx
import pytest

import memvault
from memvault import settings
from memvault.core import Memvault
from memvault.core.base import Storage
from memvault.core.caller import ANYONE, Caller
from memvault.errors import NotFoundError
from memvault.mcp.server import MemoryTools
from memvault.server.run import running
from memvault.vault.format.entry import Entry
from tests.support.cli import Cli
from tests.support.scripted_llm import ScriptedLLM
from tests.support.server import server_settings

pytestmark = pytest.mark.timeout(300)

ALICES = "Alice keeps her diary in the drawer"
BOB_KEY = "bob-key-0123"


@pytest.fixture
def vault(tmp_path):
    """A vault holding one memory of alice's; returns (folder, its id)."""
    folder = tmp_path / "vault"
    with memvault.Memory(vault=folder) as m:
        memory_id = m.add(ALICES, user_id="alice", infer=False)["results"][0]["id"]
    return folder, memory_id


def test_the_rule_itself():
    alice = Entry(ALICES, conversation_id="user-alice", user_id="alice")
    owners = Entry("The owner's own note", conversation_id="global")
    assert Caller(user_id="alice").sees(alice) and ANYONE.sees(alice) and ANYONE.sees(owners)
    assert not Caller(user_id="bob").sees(alice) and not Caller(agent_id="helper").sees(alice)
    assert Caller(user_id="bob").walls() == {"user_id": "bob"}
    chat_owner = Caller(person=True)  # a chat without --user: the vault's owner, never another user
    assert chat_owner.sees(owners) and not chat_owner.sees(alice)
    assert chat_owner.walls() == {"user_id": None}


def test_the_mem0_api_refuses_bob_by_id_and_in_listings(vault):
    folder, memory_id = vault
    with memvault.Memory(vault=folder) as m:
        assert m.get(memory_id, user_id="bob") is None
        with pytest.raises(memvault.NotFoundError):
            m.update(memory_id, "Bob rewrote it", user_id="bob")
        with pytest.raises(memvault.NotFoundError):
            m.delete(memory_id, user_id="bob")
        assert m.history(memory_id, user_id="bob") == []
        assert m.get_all(user_id="bob")["results"] == []
        assert m.search("diary drawer", user_id="bob", threshold=0.0)["results"] == []
        # alice sees it, on every path (the rule refuses what is wrong and keeps what is right)
        assert m.get(memory_id, user_id="alice")["memory"] == ALICES
        assert [r["memory"] for r in m.get_all(user_id="alice")["results"]] == [ALICES]
        assert [r["memory"] for r in m.search("diary drawer", user_id="alice", threshold=0.0)["results"]] == [ALICES]
        assert [r["event"] for r in m.history(memory_id, user_id="alice")] == ["ADD"]
        m.update(memory_id, "Alice keeps her diary in the desk", user_id="alice")
        assert m.get(memory_id)["memory"] == "Alice keeps her diary in the desk"


def test_rest_refuses_bob_and_bob_s_key(vault):
    folder, memory_id = vault
    config = server_settings(folder)
    config.server.api_key = "admin-key-0123"
    config.server.keys = {BOB_KEY: {"user_id": ("bob",)}}
    admin, bob = {"Authorization": "Bearer admin-key-0123"}, {"Authorization": f"Bearer {BOB_KEY}"}
    one = f"/v1/memories/{memory_id}/"
    with running(config) as url, httpx.Client(base_url=url, timeout=120) as client:
        for headers, params in ((admin, {"user_id": "bob"}), (bob, {})):
            assert client.get(one, params=params, headers=headers).status_code == 404
            assert client.put(one, params=params, headers=headers, json={"text": "Bob's now"}).status_code == 404
            assert client.delete(one, params=params, headers=headers).status_code == 404
            assert client.get(one + "history/", params=params, headers=headers).status_code == 404
            listed = client.get("/v1/memories/", params={"user_id": "bob"}, headers=headers).json()
            assert listed["results"] == []
        assert client.get(one, params={"user_id": "alice"}, headers=admin).json()["memory"] == ALICES
        assert client.get(one, headers=admin).json()["memory"] == ALICES  # the server key: the whole vault
        listed = client.get("/v1/memories/", params={"user_id": "alice"}, headers=admin).json()["results"]
        assert [r["memory"] for r in listed] == [ALICES]


def test_mcp_lists_by_scope_and_shows_the_owner_everything(vault):
    folder, memory_id = vault
    tools = MemoryTools(settings.load(None, {"vault.path": str(folder)}))
    try:
        assert tools.list_memories(user_id="bob").structured_content["results"] == []
        listed = tools.list_memories(user_id="alice").structured_content["results"]
        assert [r["memory"] for r in listed] == [ALICES]
        assert tools.get_memory(memory_id).structured_content["memory"] == ALICES  # MCP is the owner's door
        assert [r["event"] for r in tools.memory_history(memory_id).structured_content["history"]] == ["ADD"]
    finally:
        tools.core.close()


def test_the_cli_lists_by_scope_and_a_chat_forgets_only_its_owner_s_memory(vault, monkeypatch):
    folder, memory_id = vault
    cli = Cli(folder)
    assert cli.ok("list", "--user", "bob", "--json").json() == []
    assert [r["text"] for r in cli.ok("list", "--user", "alice", "--json").json()] == [ALICES]
    assert cli.ok("show", memory_id, "--json").json()["text"] == ALICES  # the owner's terminal: everything

    class ChatLLM(ScriptedLLM):
        class settings:
            model = "scripted"

    monkeypatch.setattr(Storage, "llm", lambda self: ChatLLM([("", lambda prompt: json.dumps([]))], default="Ok."))
    for who in ((), ("--user", "bob")):  # the chat's owner and bob: alice's memory is not theirs
        result = cli.ok("chat", *who, input=f"/forget {memory_id}\n/exit\n")
        assert "no memory" in result.stderr and "forgot" not in result.stderr
    assert cli.ok("show", memory_id, "--json").json()["deleted_at"] is None
    result = cli.ok("chat", "--user", "alice", input=f"/forget {memory_id[:8]}\n/exit\n")
    assert f"forgot {memory_id[:8]}" in result.stderr


def test_core_by_id_answers_not_found_to_a_caller_outside_the_walls(vault):
    folder, memory_id = vault
    core = Memvault.open(settings.load(None, {"vault.path": str(folder)}))
    try:
        with pytest.raises(NotFoundError, match="no memory"):
            core.get(memory_id, caller=Caller(user_id="bob"))
        with pytest.raises(NotFoundError, match="no memory"):
            core.get_live(memory_id[:8], caller=Caller(person=True))
        assert core.live_entry(memory_id, Caller(user_id="bob")) is None
        assert core.live_entry(memory_id, Caller(user_id="alice")).text == ALICES
        assert core.get(memory_id)[1].text == ALICES
    finally:
        core.close()
