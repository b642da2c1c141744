"""mem0's own clients against `memvault serve` (a real uvicorn server): the hosted `MemoryClient`
of mem0ai 2.2.1 pointed at the server's URL, and plain HTTP on mem0's OSS server paths."""

from __future__ import annotations

import os
from types import SimpleNamespace

import httpx
import pytest

from memvault.server.run import running
from tests.support.server import isolated_env, server_settings

os.environ["MEM0_TELEMETRY"] = "False"  # before mem0 is imported: no telemetry, no network
pytestmark = pytest.mark.timeout(300)
KEY = "server-key"
ALICE_KEY = "alice-key"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("mem0-server")
    settings = server_settings(base / "vault", api_key=KEY)  # no llm.model: `add` stores what it is given
    settings.retrieval.score_threshold = 0.0
    settings.server.keys = {ALICE_KEY: {"user_id": ("alice",)}}
    with isolated_env(base / "home"), running(settings) as url, \
            httpx.Client(base_url=url, timeout=120, headers={"Authorization": f"Bearer {KEY}"}) as http:
        yield SimpleNamespace(url=url, http=http)


def test_the_hosted_memory_client_works_against_memvault_serve(served):
    from mem0 import MemoryClient

    http = httpx.Client(timeout=120)
    client = MemoryClient(api_key=KEY, host=served.url, client=http)  # pings /v1/ping/ ("Authorization: Token")
    try:
        use_every_method(client)
    finally:
        http.close()


def use_every_method(client):
    from mem0.exceptions import MemoryNotFoundError

    added = client.add("Alice grows tomatoes on her balcony", user_id="alice", infer=False,
                       metadata={"topic": "garden"})
    [event] = added["results"]
    assert (event["event"], event["memory"]) == ("ADD", "Alice grows tomatoes on her balcony")
    client.add([{"role": "user", "content": "Bob collects stamps", "name": "bob"}], user_id="bob", infer=False)

    listed = client.get_all(filters={"user_id": "alice"})
    assert listed["count"] == 1 and [m["memory"] for m in listed["results"]] == ["Alice grows tomatoes on her balcony"]
    found = client.search("what does alice grow?", filters={"user_id": "alice"}, top_k=5)
    assert [m["id"] for m in found["results"]] == [event["id"]]
    assert client.get(event["id"])["metadata"] == {"topic": "garden"}

    updated = client.update(event["id"], text="Alice grows tomatoes and basil")
    assert updated == {"message": "Memory updated successfully!"}
    assert [(h["event"], h["new_memory"]) for h in client.history(event["id"])] == [
        ("ADD", "Alice grows tomatoes on her balcony"), ("UPDATE", "Alice grows tomatoes and basil")]
    client.delete(event["id"])
    with pytest.raises(MemoryNotFoundError):
        client.get(event["id"])
    client.delete_all(user_id="bob")
    assert client.get_all(filters={"user_id": "bob"})["results"] == []


def test_a_wrong_key_is_refused_at_the_client_s_start(served):
    from mem0 import MemoryClient

    with httpx.Client() as http, pytest.raises(ValueError, match="401 Unauthorized"):
        MemoryClient(api_key="not-the-key", host=served.url, client=http)


def test_mem0_oss_server_paths_over_plain_http(served):
    http = served.http
    reply = http.post("/memories", json={"messages": [{"role": "user", "content": "Carol speaks Welsh"}],
                                         "user_id": "carol", "infer": False})
    assert reply.status_code == 200, reply.text
    memory_id = reply.json()["results"][0]["id"]
    assert [m["memory"] for m in http.get("/memories", params={"user_id": "carol"}).json()["results"]] == [
        "Carol speaks Welsh"]
    assert http.get(f"/memories/{memory_id}").json()["memory"] == "Carol speaks Welsh"
    searched = http.post("/search", json={"query": "which language?", "user_id": "carol"}).json()
    assert [m["id"] for m in searched["results"]] == [memory_id]
    searched = http.post("/search", json={"query": "which language?", "filters": {"user_id": "carol"}}).json()
    assert [m["id"] for m in searched["results"]] == [memory_id]  # mem0 2.x: the scope inside filters
    assert [m["id"] for m in http.get("/v1/memories/search/", params={"q": "Welsh", "user_id": "carol"}
                                      ).json()["results"]] == [memory_id]  # GET search takes `q` too
    assert http.put(f"/memories/{memory_id}", json={"text": "Carol speaks Welsh and Breton"}).status_code == 200
    history = http.get(f"/memories/{memory_id}/history").json()
    assert [(h["event"], h["old_value"], h["new_value"]) for h in history] == [
        ("ADD", None, "Carol speaks Welsh"), ("UPDATE", "Carol speaks Welsh", "Carol speaks Welsh and Breton")]
    assert http.delete(f"/memories/{memory_id}").json() == {"message": "Memory deleted successfully"}
    missing = http.get(f"/memories/{memory_id}")
    assert (missing.status_code, missing.json()) == (200, None)  # mem0's server: Memory.get's None
    assert http.delete("/memories", params={"user_id": "carol"}).json() == {"message": "All relevant memories deleted"}


def test_mem0_paths_refuse_what_they_must(served):
    http = served.http
    no_scope = http.post("/search", json={"query": "anything"})
    assert no_scope.status_code == 400 and "filters must contain at least one of" in no_scope.json()["detail"]
    assert http.post("/configure", json={"llm": {"provider": "openai", "config": {"api_key": "x"}}}).status_code == 403
    assert http.post("/reset").status_code == 403  # only with server.allow_reset
    assert httpx.get(served.url + "/memories", params={"user_id": "x"}).status_code == 401  # no key
    unreadable = http.post("/v3/memories/search/", json={"query": "x", "filters": {
        "user_id": "carol", "NOT": [{"field": "topic", "operator": "between", "value": [1, 2]}]}})
    assert unreadable.status_code == 400 and "unknown filter operator" in unreadable.json()["detail"]


def test_a_scoped_key_cannot_reach_past_its_scope_through_mem0_s_filters(served):
    http = served.http
    for user in ("alice", "dave"):
        assert http.post("/memories", json={"messages": [{"role": "user", "content": f"{user} plays chess"}],
                                            "user_id": user, "infer": False}).status_code == 200
    alice = {"Authorization": f"Token {ALICE_KEY}"}
    for body in ({"filters": {"user_id": "*"}}, {"filters": {"user_id": {"in": ["alice", "dave"]}}}):
        for path, extra in (("/v3/memories/", {}), ("/v3/memories/search/", {"query": "chess"})):
            refused = http.post(path, json={**body, **extra}, headers=alice)
            assert refused.status_code == 403 and "plainly" in refused.json()["detail"], (path, body)
    other = http.post("/v3/memories/search/", json={"query": "chess", "filters": {"user_id": "dave"}}, headers=alice)
    assert other.status_code == 403
    mine = http.post("/v3/memories/search/", json={"query": "chess", "filters": {"user_id": "alice"}}, headers=alice)
    assert [m["memory"] for m in mine.json()["results"]] == ["alice plays chess"]
    listed = http.post("/v3/memories/", json={}, headers=alice).json()  # the key's one scope is implied
    assert [m["memory"] for m in listed["results"]] == ["alice plays chess"] and listed["count"] == 1


def test_mem0_oss_paths_read_an_explicit_null_as_omitted_as_mem0s_server_does(served):
    """mem0's OSS server drops None values before calling Memory: `"infer": null` is not a 422."""
    added = served.http.post("/memories", json={"messages": [{"role": "user", "content": "Nina plays the oboe"}],
                                                "user_id": "nina", "infer": None, "metadata": None})
    assert added.status_code == 200, added.text
    found = served.http.post("/search", json={"query": "oboe", "user_id": "nina", "explain": None,
                                              "show_expired": None, "rerank": None, "top_k": None})
    assert found.status_code == 200, found.text
    assert [m["memory"] for m in found.json()["results"]] == ["Nina plays the oboe"]
    listed = served.http.post("/v3/memories/", json={"filters": {"user_id": "nina"}, "show_expired": None})
    assert listed.status_code == 200 and listed.json()["count"] == 1


def test_get_memories_honours_top_k_and_show_expired_on_both_paths(served):
    for n in range(3):
        served.http.post("/memories", json={"messages": f"Olga's note number {n}", "user_id": "olga", "infer": False})
    served.http.post("/memories", json={"messages": "Olga was in Riga last week", "user_id": "olga", "infer": False,
                                        "expiration_date": "2020-01-01"})
    for path in ("/memories", "/v1/memories/"):
        assert len(served.http.get(path, params={"user_id": "olga", "top_k": 2}).json()["results"]) == 2
        shown = served.http.get(path, params={"user_id": "olga"}).json()["results"]
        assert "Olga was in Riga last week" not in [m["memory"] for m in shown] and len(shown) == 3
        with_expired = served.http.get(path, params={"user_id": "olga", "show_expired": "true"}).json()["results"]
        assert "Olga was in Riga last week" in [m["memory"] for m in with_expired]


def test_an_unknown_id_is_a_200_null_on_mem0s_oss_path_and_a_404_on_memvaults_own(served):
    unknown = "00000000-0000-4000-8000-000000000000"
    oss = served.http.get(f"/memories/{unknown}", params={"user_id": "alice"})
    assert (oss.status_code, oss.json()) == (200, None)
    assert served.http.get(f"/v1/memories/{unknown}/", params={"user_id": "alice"}).status_code == 404


# -- what mem0 2.2.1's own MemoryClient accepts (the README's "Coming from mem0" table) ------------------
def test_the_memory_client_takes_scopes_in_filters_only_for_search_and_get_all(served):
    """mem0 2.2.1's MemoryClient refuses `user_id=` in search and get_all (before any request): the
    scope goes in `filters`. add, delete_all and delete_users take `user_id=`."""
    from mem0 import MemoryClient

    with httpx.Client(timeout=120) as http:
        client = MemoryClient(api_key=KEY, host=served.url, client=http)
        client.add("Petra keeps bees", user_id="petra", infer=False)
        for call in (lambda: client.search("bees", user_id="petra"), lambda: client.get_all(user_id="petra")):
            with pytest.raises(ValueError, match="Use filters"):
                call()
        assert [m["memory"] for m in client.search("bees", filters={"user_id": "petra"})["results"]] == [
            "Petra keeps bees"]
        assert client.get_all(filters={"user_id": "petra"})["count"] == 1
        client.delete_all(user_id="petra")
        assert client.get_all(filters={"user_id": "petra"})["count"] == 0


@pytest.fixture(scope="module")
def entities(tmp_path_factory):
    """A server of its own: the entities listed are this vault's users, agents and runs."""
    base = tmp_path_factory.mktemp("mem0-entities")
    settings = server_settings(base / "vault", api_key=KEY)
    settings.server.keys = {ALICE_KEY: {"user_id": ("alice",)}}
    with isolated_env(base / "home"), running(settings) as url, \
            httpx.Client(base_url=url, timeout=120, headers={"Authorization": f"Bearer {KEY}"}) as http:
        for text, scopes in (("Alice rows at dawn", {"user_id": "alice"}),
                             ("Alice reads Tolstoy", {"user_id": "alice", "agent_id": "tutor"}),
                             ("Bob bakes rye bread", {"user_id": "bob", "run_id": "week-1"})):
            assert http.post("/memories", json={"messages": text, "infer": False, **scopes}).status_code == 200
        yield SimpleNamespace(url=url, http=http)


def names(listing: dict) -> list[tuple[str, str, int]]:
    return sorted((item["type"], item["name"], item["total_memories"]) for item in listing["results"])


def test_entities_are_listed_from_memvault_s_scopes_on_both_mem0_paths(entities):
    oss = entities.http.get("/entities").json()
    assert names(oss) == [("agent", "tutor", 1), ("run", "week-1", 1), ("user", "alice", 2), ("user", "bob", 1)]
    assert oss["count"] == 4 and all(item["created_at"] and item["id"] == item["name"] for item in oss["results"])
    from mem0 import MemoryClient

    with httpx.Client(timeout=120) as http:
        client = MemoryClient(api_key=KEY, host=entities.url, client=http)
        assert names(client.users()) == names(oss)  # GET /v1/entities/


def test_a_scoped_key_lists_and_deletes_only_its_own_entities(entities):
    alice = {"Authorization": f"Bearer {ALICE_KEY}"}
    assert names(entities.http.get("/entities", headers=alice).json()) == [("agent", "tutor", 1), ("user", "alice", 2)]
    refused = entities.http.delete("/entities/user/bob", headers=alice)
    assert refused.status_code == 403 and "bob" in refused.json()["detail"]
    assert ("user", "bob", 1) in names(entities.http.get("/entities").json())  # still there


def test_deleting_an_entity_deletes_its_memories_and_nothing_else(entities):
    from mem0 import MemoryClient

    http = entities.http
    assert http.delete("/entities/app/x").status_code == 400  # memvault has users, agents and runs
    assert http.delete("/entities/user/nobody").status_code == 404
    assert http.delete("/entities/run/week-1").json() == {"message": "Entity deleted successfully."}
    assert http.get("/memories", params={"user_id": "bob"}).json()["results"] == []
    with httpx.Client(timeout=120) as raw:
        client = MemoryClient(api_key=KEY, host=entities.url, client=raw)
        client.delete_users(agent_id="tutor")  # DELETE /v2/entities/agent/tutor/
    assert names(http.get("/entities").json()) == [("user", "alice", 1)]
    assert [m["memory"] for m in http.get("/memories", params={"user_id": "alice"}).json()["results"]] == [
        "Alice rows at dawn"]
