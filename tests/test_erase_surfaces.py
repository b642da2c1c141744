"""Erase through every door: Memory.delete/delete_all(erase=True), the vault.delete setting, REST's
DELETE ...?erase=true (a scoped key erases only its own scope), MCP's forget(erase=true); and push after
an erase, and pull on a clone that still holds what was erased."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest

from memvault import settings as settings_module
from memvault.api import Memory
from memvault.core import Memvault
from memvault.errors import VaultError
from memvault.server.run import running
from tests.support.server import isolated_env, server_settings
from tests.test_erase import leftovers

pytestmark = pytest.mark.timeout(600)
ADMIN, ALICE_KEY = "admin-key-0123456789", "alice-key-0123456789"


def log_p(root: Path) -> str:
    return subprocess.run(["git", "-C", str(root), "log", "--all", "-p"], capture_output=True, text=True,
                          check=True).stdout


def texts(memory: Memory, user: str) -> list[str]:
    return sorted(item["memory"] for item in memory.get_all(user_id=user)["results"])


def test_memory_delete_and_delete_all_erase(tmp_path):
    root = tmp_path / "vault"
    memory = Memory({"vault": {"path": str(root)}})
    gone = memory.add("Alice hides the spare key under the blue pot.", user_id="alice", infer=False)["results"][0]
    memory.add("Alice sings in a choir.", user_id="alice", infer=False)
    memory.add("Bob keeps bees on his roof.", user_id="bob", infer=False)
    soft = memory.add("Bob once lived in Oslo.", user_id="bob", infer=False)["results"][0]
    memory.delete(soft["id"])  # the default stays soft: git keeps it
    assert "Bob once lived in Oslo." in log_p(root)
    assert memory.delete(gone["id"], erase=True) == {"message": "Memory erased successfully!"}
    assert "blue pot" not in log_p(root) and texts(memory, "alice") == ["Alice sings in a choir."]
    memory.delete_all(user_id="alice", erase=True)
    assert "choir" not in log_p(root) and texts(memory, "alice") == []
    assert texts(memory, "bob") == ["Bob keeps bees on his roof."]


def test_the_vault_delete_setting_makes_delete_erase(tmp_path):
    root = tmp_path / "vault"
    memory = Memory({"vault": {"path": str(root), "delete": "erase"}})
    item = memory.add("Dana's locker is number 4411.", user_id="dana", infer=False)["results"][0]
    memory.delete(item["id"])
    assert "locker is number 4411" not in log_p(root)


def test_rest_erase_by_id_and_by_scope_confined_to_the_key(tmp_path):
    with isolated_env(tmp_path / "home"):
        settings = server_settings(tmp_path / "vault", api_key=ADMIN)
        settings.server.keys = {ALICE_KEY: {"user_id": ("alice",)}}
        with running(settings) as url, httpx.Client(base_url=url, timeout=300) as client:
            def add(text, user, key):
                reply = client.post("/v1/memories/", headers={"Authorization": f"Bearer {key}"},
                                    json={"messages": text, "infer": False, "user_id": user})
                assert reply.status_code == 200, reply.text
                return reply.json()["results"][0]["id"]

            first = add("Alice's bank is the one on Elm Street.", "alice", ALICE_KEY)
            add("Alice plays padel on Tuesdays.", "alice", ALICE_KEY)
            add("Bob's car is a green van.", "bob", ADMIN)
            alice = {"Authorization": f"Bearer {ALICE_KEY}"}
            reply = client.delete(f"/v1/memories/{first}/", params={"erase": "true"}, headers=alice)
            assert reply.status_code == 200 and reply.json()["message"] == "Memory erased successfully!"
            assert "Elm Street" not in log_p(tmp_path / "vault")
            # A scoped key cannot erase another scope.
            refused = client.delete("/v1/memories/", params={"user_id": "bob", "erase": "true"}, headers=alice)
            assert refused.status_code == 403
            assert "green van" in log_p(tmp_path / "vault")
            # Its own scope it may.
            mine = client.delete("/v1/memories/", params={"erase": "true"}, headers=alice)
            assert mine.status_code == 200, mine.text
            assert "padel" not in log_p(tmp_path / "vault")
            # The operator's key erases any scope.
            theirs = client.delete("/v1/memories/", params={"user_id": "bob", "erase": "true"},
                                   headers={"Authorization": f"Bearer {ADMIN}"})
            assert theirs.status_code == 200 and "green van" not in log_p(tmp_path / "vault")


def test_mcp_forget_erases_and_says_it_is_irreversible(tmp_path):
    from tests.test_mcp import ok, stdio_session

    root = tmp_path / "vault"
    with isolated_env(tmp_path / "home"):
        live = stdio_session(root)
        try:
            tools = {t.name: t for t in live.run(lambda s: s.list_tools()).tools}
            assert "irreversible" in tools["forget"].description
            assert "IRREVERSIBLE" in tools["forget"].input_schema["properties"]["erase"]["description"]
            (event,) = ok(live.call("remember", text="Erin's diary is in the attic trunk.", user_id="erin"))["results"]
            erased = ok(live.call("forget", memory_id=event["id"], erase=True))
            assert erased["event"] == "ERASE" and erased["id"] == event["id"]
        finally:
            live.close()
    assert "attic trunk" not in log_p(root)


def open_vault(root: Path) -> Memvault:
    return Memvault.open(settings_module.load(None, {"vault.path": str(root)}), create=True)


def test_push_after_erase_asks_for_force_with_lease_and_pull_drops_erased_content(tmp_path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    a = open_vault(tmp_path / "a")
    a.add_verbatim("Gus's safe combination is left-31-right-8.")
    a.add_verbatim("Gus walks his dog at seven.")
    a.vault.git.run("remote", "add", "origin", str(remote))
    a.push()
    subprocess.run(["git", "clone", "-q", str(remote), str(tmp_path / "b")], check=True)
    b = open_vault(tmp_path / "b")
    a.erase(matching="left-31-right-8")
    with pytest.raises(VaultError, match="push --force-with-lease"):
        a.push()
    a.push(force_with_lease=True)
    b.add_verbatim("Gus bought a kayak.")  # a local commit on the old history
    b.pull()
    assert leftovers(tmp_path / "b", "left-31-right-8") == []  # not even in the clone's reflogs or loose objects
    # The remote's history no longer has it; its unreachable objects go at the host's next gc.
    assert "left-31-right-8" not in log_p(remote)
    assert sorted(e.text for _, e in b.list().entries) == ["Gus bought a kayak.", "Gus walks his dog at seven."]
    a.close()
    b.close()
