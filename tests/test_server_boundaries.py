"""The server keeps its boundaries (docs/architecture.md, Trust boundaries): a client never chooses where the operator's
key goes, and scopes are boundaries on every route, with or without per-key scopes."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from memvault.api import Memory
from memvault.api.errors import NotFoundError
from memvault.errors import ConfigError
from memvault.server.auth import identify
from memvault.server.run import running
from memvault.settings import load
from tests.support.server import isolated_env, server_settings
from tests.support.upstream import Upstream, serving

pytestmark = pytest.mark.timeout(300)
OPERATOR_KEY = "operator-llm-key"
ADMIN = "admin-key-0123"
ALICE_KEY = "alice-key-0123"
TEAM_KEY = "team-key-0123"
ROUTING_FIELDS = ["base_url", "api_base", "api_key", "custom_llm_provider", "extra_headers", "headers",
                  "organization", "api_version", "azure_ad_token", "aws_region_name", "vertex_project",
                  "mock_response", "callbacks", "metadata", "timeout"]


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    """A memvault server whose LLM is a recording fake under /tenant/v1, beside an "attacker" server."""
    base = tmp_path_factory.mktemp("boundaries")
    upstream, attacker = Upstream(), Upstream()
    with isolated_env(base / "home"), serving(upstream.app()) as root, serving(attacker.app()) as evil:
        settings = server_settings(base / "vault", api_base=root + "/tenant/v1", llm_key=OPERATOR_KEY,
                                   api_key=ADMIN, allow_reset=True)
        settings.server.keys = {ALICE_KEY: {"user_id": ("alice",)}, TEAM_KEY: {"user_id": ("alice", "bob")}}
        settings.retrieval.score_threshold = 0.0
        with running(settings) as url, httpx.Client(base_url=url, timeout=120) as client:
            yield SimpleNamespace(client=client, upstream=upstream, attacker=attacker, evil=evil,
                                  vault=Path(settings.vault.path))


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def chat(net, key: str = ADMIN, **extra) -> httpx.Response:
    return net.client.post("/v1/chat/completions", headers=auth(key), json={
        "model": "fake", "messages": [{"role": "user", "content": "what is my locker number?"}], **extra})


def add(net, text: str, key: str = ADMIN, **scopes) -> str:
    reply = net.client.post("/v1/memories/", headers=auth(key), json={"messages": text, "infer": False, **scopes})
    assert reply.status_code == 200, reply.text
    return reply.json()["results"][0]["id"]


# -- 10: the operator's key stays home -------------------------------------------------------------
@pytest.mark.parametrize("field", ROUTING_FIELDS)
def test_a_routing_field_is_refused_by_name_and_nothing_reaches_the_attacker(net, field):
    value = {"extra_headers": {"x": "y"}, "headers": {"x": "y"}, "metadata": {"model_group": "x"},
             "callbacks": ["x"], "timeout": 5}.get(field, net.evil + "/v1")
    reply = chat(net, **{field: value})
    assert reply.status_code == 400, reply.text
    assert field in reply.json()["error"]["message"]
    assert net.attacker.requests == []


def test_openai_parameters_are_forwarded_and_the_key_goes_only_upstream(net):
    reply = chat(net, temperature=0.25, max_tokens=7, seed=3, stop=["\n"])
    assert reply.status_code == 200, reply.text
    sent = net.upstream.chat_requests()[-1]
    assert (sent["temperature"], sent["max_tokens"], sent["seed"], sent["stop"]) == (0.25, 7, 3, ["\n"])
    assert net.upstream.requests[-1]["headers"]["authorization"] == f"Bearer {OPERATOR_KEY}"
    assert net.attacker.requests == []


@pytest.mark.parametrize("path", ["/v1/..%2F..%2Fother%2Fv1%2Fmodels", "/v1/..%2Fother", "/v1/%2e%2e/%2e%2e/other",
                                  "/v1/models/..%2F..%2F..%2Fother", "/v1/%252e%252e/other", "/v1/..%5C..%5Cother"])
def test_a_passthrough_path_cannot_leave_the_upstream_api(net, path):
    before = len(net.upstream.requests)
    reply = net.client.get(path, headers=auth(ADMIN))
    assert reply.status_code == 400, reply.text
    assert len(net.upstream.requests) == before  # nothing sent, so the key went nowhere


def test_a_passthrough_path_inside_the_api_is_normalised(net):
    assert net.client.get("/v1/files/..%2Fmodels", headers=auth(ADMIN)).status_code == 200
    assert net.upstream.requests[-1]["path"] == "/tenant/v1/models"


# -- 11: scopes are boundaries -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def pins(net):
    return SimpleNamespace(bob=add(net, "bob's locker is number 4921", user_id="bob"),
                           alice=add(net, "alice's locker is number 1357", user_id="alice"))


def test_an_id_outside_the_named_scope_is_not_found(net, pins):
    url = f"/v1/memories/{pins.bob}/"
    as_alice = {"user_id": "alice"}
    assert net.client.get(url, params=as_alice, headers=auth(ADMIN)).status_code == 404
    assert net.client.get(url + "history/", params=as_alice, headers=auth(ADMIN)).status_code == 404
    put = net.client.put(url, params=as_alice, headers=auth(ADMIN), json={"text": "owned by alice"})
    assert put.status_code == 404
    put = net.client.put(url, headers=auth(ADMIN), json={"text": "owned by alice", "user_id": "alice"})
    assert put.status_code == 404
    assert net.client.delete(url, params=as_alice, headers=auth(ADMIN)).status_code == 404
    mine = net.client.get(url, params={"user_id": "bob"}, headers=auth(ADMIN))
    assert mine.status_code == 200 and mine.json()["memory"] == "bob's locker is number 4921"


def test_a_scoped_key_reaches_only_its_scope_on_every_route(net, pins):
    alice = auth(ALICE_KEY)
    listed = net.client.get("/v1/memories/", headers=alice)  # user_id implied: the key allows one
    assert [m["memory"] for m in listed.json()["results"]] == ["alice's locker is number 1357"]
    found = net.client.get("/v1/memories/search/", params={"query": "locker number"}, headers=alice).json()["results"]
    assert [m["id"] for m in found] == [pins.alice]
    refused = [
        net.client.get("/v1/memories/", params={"user_id": "bob"}, headers=alice),
        net.client.get("/v1/memories/search/", params={"query": "locker", "user_id": "bob"}, headers=alice),
        net.client.post("/v1/memories/search/", json={"query": "locker", "user_id": "bob"}, headers=alice),
        net.client.post("/v1/memories/", json={"messages": "x", "infer": False, "user_id": "bob"}, headers=alice),
        net.client.delete("/v1/memories/", params={"user_id": "bob"}, headers=alice),
        net.client.get(f"/v1/memories/{pins.bob}/", params={"user_id": "bob"}, headers=alice),
        net.client.post("/v1/reset/", headers=alice),
    ]
    assert [r.status_code for r in refused] == [403] * len(refused), [r.text for r in refused]
    url = f"/v1/memories/{pins.bob}/"
    assert net.client.get(url, headers=alice).status_code == 404
    assert net.client.get(url + "history/", headers=alice).status_code == 404
    assert net.client.put(url, json={"text": "owned by alice"}, headers=alice).status_code == 404
    assert net.client.delete(url, headers=alice).status_code == 404
    filtered = net.client.get("/v1/memories/", params={"filters": '{"user_id": "bob"}'}, headers=alice)
    assert filtered.json()["results"] == []  # a filter narrows the key's scope, never widens it
    bob = net.client.get(url, params={"user_id": "bob"}, headers=auth(ADMIN)).json()
    assert bob["memory"] == "bob's locker is number 4921"  # untouched


def test_a_key_with_several_ids_must_name_one(net, pins):
    team = auth(TEAM_KEY)
    reply = net.client.get("/v1/memories/", headers=team)
    assert reply.status_code == 400 and "user_id" in reply.json()["error"]["message"]
    bob = net.client.get("/v1/memories/", params={"user_id": "bob"}, headers=team).json()["results"]
    assert [m["id"] for m in bob] == [pins.bob]
    assert net.client.get("/v1/memories/", params={"user_id": "carol"}, headers=team).status_code == 403
    assert chat(net, TEAM_KEY).status_code == 400  # the proxy cannot tell which user: refused, not guessed


def test_a_scoped_key_chats_inside_its_scope_whatever_the_memory_id(net, pins):
    reply = chat(net, ALICE_KEY, memory_id="user-bob", memory_score_threshold=0.0)
    assert reply.status_code == 200, reply.text
    hits = [hit["text"] for hit in reply.json()["memory_hits"]]
    assert "bob's locker is number 4921" not in hits
    assert (net.vault / "entries" / "user-alice+chat-user-bob").is_dir()
    assert net.upstream.requests[-1]["headers"]["authorization"] == f"Bearer {OPERATOR_KEY}"  # never alice's key
    # The server key still reaches any conversation by name.
    reply = chat(net, ADMIN, memory_id="user-bob", memory_score_threshold=0.0)
    assert "bob's locker is number 4921" in [hit["text"] for hit in reply.json()["memory_hits"]]


def test_an_unknown_key_is_refused(net):
    assert net.client.get("/v1/memories/", params={"user_id": "alice"}, headers=auth("alice-key-0124")
                          ).status_code == 401


def test_keys_are_told_apart_and_scoped():
    keys = {ALICE_KEY: {"user_id": ("alice",)}}
    assert identify(ALICE_KEY, ADMIN, keys) == (True, {"user_id": ("alice",)})
    assert identify(ADMIN, ADMIN, keys) == (True, None)
    assert identify("nope", ADMIN, keys)[0] is False
    assert identify(None, "", keys)[0] is False


# -- the Python API: mem0 semantics, all scopes given must match -----------------------------------
def test_memory_api_id_calls_respect_the_scopes_given(tmp_path):
    with Memory(vault=tmp_path / "vault") as memory:
        bob = memory.add("bob's locker is number 4921", user_id="bob", infer=False)["results"][0]["id"]
        assert memory.get(bob, user_id="alice") is None
        assert memory.get(bob, user_id="bob", agent_id="helper") is None
        assert memory.history(bob, user_id="alice") == []
        with pytest.raises(NotFoundError):
            memory.update(bob, "mine now", user_id="alice")
        with pytest.raises(NotFoundError):
            memory.delete(bob, user_id="alice")
        assert memory.get(bob, user_id="bob")["memory"] == "bob's locker is number 4921"
        assert memory.get(bob)["memory"] == "bob's locker is number 4921"  # no scope named: mem0's behaviour


def test_async_memory_takes_the_same_scopes(tmp_path):
    import asyncio

    from memvault.api import AsyncMemory

    async def run():
        async with AsyncMemory(vault=tmp_path / "vault") as memory:
            added = await memory.add("bob's locker is number 4921", user_id="bob", infer=False)
            bob = added["results"][0]["id"]
            return await memory.get(bob, user_id="alice"), await memory.history(bob, user_id="alice")

    assert asyncio.run(run()) == (None, [])


def test_query_and_body_scopes_must_agree(net, pins):
    reply = net.client.put(f"/v1/memories/{pins.bob}/", params={"user_id": "bob"}, headers=auth(ADMIN),
                           json={"text": "x", "user_id": "alice"})
    assert reply.status_code == 400 and "user_id" in reply.json()["error"]["message"]


# -- server.keys in the config file ------------------------------------------------------------------
def test_server_keys_load_from_a_toml_table(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('[server.keys]\n"key-abc-123" = {user_id = ["alice"]}\n"key-def-456" = {agent_id = "bot"}\n')
    assert load(path).server.keys == {"key-abc-123": {"user_id": ("alice",)}, "key-def-456": {"agent_id": ("bot",)}}


@pytest.mark.parametrize("table", ['"short" = {user_id = ["a"]}', '"key-abc-123" = {}',
                                   '"key-abc-123" = {user = ["a"]}', '"key-abc-123" = {user_id = []}',
                                   '"key-abc-123" = "alice"'])
def test_bad_server_keys_are_one_clear_error(tmp_path, table):
    path = tmp_path / "config.toml"
    path.write_text(f"[server.keys]\n{table}\n")
    with pytest.raises(ConfigError, match="server.keys") as caught:
        load(path)
    assert "key-abc-123" not in str(caught.value)  # a key is never echoed whole


# -- 14: /docs makes no request beyond this server -----------------------------------------------------
def test_the_docs_page_loads_everything_from_this_server(net):
    page = net.client.get("/docs", headers=auth(ADMIN))
    assert page.status_code == 200
    assert not re.search(r"(https?:)?//[\w.-]+", page.text), "the page names another host"
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert len(assets) == 3
    for asset in assets:
        reply = net.client.get(asset, headers=auth(ADMIN))
        assert reply.status_code == 200 and len(reply.content) > 1000, asset
    assert '"validatorUrl": null' in page.text  # Swagger UI's online validator badge stays off
    assert net.client.get("/redoc", headers=auth(ADMIN)).status_code in (401, 404)  # ReDoc's page is CDN-only
    assert net.client.get("/openapi.json", headers=auth(ADMIN)).json()["info"]["title"] == "memvault"
