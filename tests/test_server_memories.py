"""The REST memory API through a real uvicorn server: happy paths, every error status, trailing
slashes, hand edits picked up by the watcher, and an OpenAPI document that lists every route."""

from __future__ import annotations

import time
from pathlib import Path, PurePosixPath
from types import SimpleNamespace

import httpx
import pytest

from memvault.server.run import running
from memvault.settings import Settings
from tests.support.server import isolated_env, server_settings

pytestmark = pytest.mark.timeout(300)


def rest_settings(vault: Path, allow_reset: bool = False) -> Settings:
    settings = server_settings(vault, allow_reset=allow_reset)  # no llm.model: `add` stores what it is given
    settings.retrieval.score_threshold = 0.0  # no cross-encoder here: keep every candidate
    return settings


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    base = tmp_path_factory.mktemp("rest")
    settings = rest_settings(base / "vault")
    with isolated_env(base / "home"), running(settings) as url, httpx.Client(base_url=url, timeout=120) as client:
        yield SimpleNamespace(client=client, settings=settings, vault=Path(settings.vault.path))


def add(api, text: str, **scopes) -> str:
    reply = api.client.post("/v1/memories/", json={"messages": [{"role": "user", "content": text}],
                                                   "infer": False, **scopes})
    assert reply.status_code == 200, reply.text
    (event,) = reply.json()["results"]
    assert event["event"] == "ADD" and event["memory"] == text
    return event["id"]


def error_of(reply, status: int) -> str:
    assert reply.status_code == status, reply.text
    message = reply.json()["error"]["message"]
    assert message and "\n" not in message
    return message


def test_add_get_list_search_update_history_delete(api):
    memory_id = add(api, "Priya is learning the violin.", user_id="priya", metadata={"source": "test"})
    add(api, "Bob fixed the garden fence.", user_id="bob")

    got = api.client.get(f"/v1/memories/{memory_id}/").json()
    assert got["memory"] == "Priya is learning the violin." and got["user_id"] == "priya"
    assert got["metadata"]["source"] == "test"

    listed = api.client.get("/v1/memories/", params={"user_id": "priya"}).json()["results"]
    assert [m["id"] for m in listed] == [memory_id]

    by_query = api.client.get("/v1/memories/search/", params={"query": "violin lessons", "user_id": "priya"})
    assert by_query.status_code == 200
    assert by_query.json()["results"][0]["id"] == memory_id
    by_body = api.client.post("/v1/memories/search/", json={"query": "violin", "user_id": "priya", "limit": 5,
                                                            "filters": {"source": "test"}})
    assert [m["id"] for m in by_body.json()["results"]] == [memory_id]

    updated = api.client.put(f"/v1/memories/{memory_id}/", json={"text": "Priya plays the violin well."})
    assert updated.status_code == 200
    assert api.client.get(f"/v1/memories/{memory_id}/").json()["memory"] == "Priya plays the violin well."

    history = api.client.get(f"/v1/memories/{memory_id}/history/").json()
    assert [h["event"] for h in history] == ["ADD", "UPDATE"]
    assert history[1]["old_memory"] == "Priya is learning the violin."

    assert api.client.delete(f"/v1/memories/{memory_id}/").status_code == 200
    error_of(api.client.get(f"/v1/memories/{memory_id}/"), 404)
    assert api.client.get("/v1/memories/", params={"user_id": "priya"}).json()["results"] == []
    assert [h["event"] for h in api.client.get(f"/v1/memories/{memory_id}/history/").json()][-1] == "DELETE"


def test_delete_all_of_a_scope_leaves_other_scopes(api):
    add(api, "Noor likes green tea.", user_id="noor")
    add(api, "Noor visited Kyoto.", user_id="noor")
    kept = add(api, "Chen bought a vintage camera.", user_id="chen")
    assert api.client.delete("/v1/memories/", params={"user_id": "noor"}).status_code == 200
    assert api.client.get("/v1/memories/", params={"user_id": "noor"}).json()["results"] == []
    assert [m["id"] for m in api.client.get("/v1/memories/", params={"user_id": "chen"}).json()["results"]] == [kept]


def test_paths_without_trailing_slash_are_served_too(api):
    memory_id = add(api, "Olek reads about Rust.", run_id="r1")
    assert api.client.get(f"/v1/memories/{memory_id}").json()["id"] == memory_id
    assert api.client.get("/v1/memories", params={"run_id": "r1"}).json()["results"][0]["id"] == memory_id


def test_errors_have_their_status_and_one_line(api):
    assert "user_id" in error_of(api.client.post("/v1/memories/", json={"messages": "no scope", "infer": False}), 400)
    error_of(api.client.get("/v1/memories/"), 400)  # listing needs a scope
    error_of(api.client.delete("/v1/memories/"), 400)
    error_of(api.client.get("/v1/memories/search/", params={"query": "x", "user_id": "u", "filters": "{bad"}), 400)
    error_of(api.client.get("/v1/memories/00000000-0000-4000-8000-000000000000/"), 404)
    error_of(api.client.put("/v1/memories/00000000-0000-4000-8000-000000000000/", json={"text": "x"}), 404)
    error_of(api.client.delete("/v1/memories/00000000-0000-4000-8000-000000000000/"), 404)
    error_of(api.client.get("/v1/memories/00000000-0000-4000-8000-000000000000/history/"), 404)
    assert "messages" in error_of(api.client.post("/v1/memories/", json={"user_id": "u"}), 422)
    error_of(api.client.get("/v1/memories/search/", params={"user_id": "u"}), 422)  # no query
    error_of(api.client.get("/v1/memories/search/", params={"query": "x", "user_id": "u", "limit": 0}), 422)
    assert "allow-reset" in error_of(api.client.post("/v1/reset/"), 403)


@pytest.fixture(scope="module")
def llm_down(tmp_path_factory):
    """A server whose LLM cannot be reached: nothing listens on port 9 (connection refused at once)."""
    base = tmp_path_factory.mktemp("llm-down")
    settings = server_settings(base / "vault", api_base="http://127.0.0.1:9/v1", model="openai/fake",
                               llm_key="upstream-key")
    settings.llm.max_retries = 0
    with isolated_env(base / "home"), running(settings) as url, httpx.Client(base_url=url, timeout=120) as client:
        yield SimpleNamespace(client=client, settings=settings)


@pytest.mark.parametrize("stream", [False, True])
def test_llm_failures_map_to_502(llm_down, stream):
    reply = llm_down.client.post("/v1/chat/completions", json={
        "model": "fake", "messages": [{"role": "user", "content": "Anyone there?"}], "stream": stream,
        "memory_id": "down"})
    message = error_of(reply, 502)
    assert message.startswith("upstream LLM error: ") and reply.json()["error"]["type"] == "api_error"


def test_a_curated_add_with_the_llm_down_keeps_the_text_and_says_why(llm_down):
    reply = llm_down.client.post("/v1/memories/", json={
        "messages": [{"role": "user", "content": "I keep bees on the roof."}], "user_id": "beekeeper"})
    assert reply.status_code == 200, reply.text  # curation degrades: nothing the user said is lost
    body = reply.json()
    assert [event["memory"] for event in body["results"]] == ["I keep bees on the roof."]
    assert any("LLM failed" in note for note in body["notes"]), body


def search_until(api, query: str, user_id: str, expected: list[str], seconds: float = 30) -> list[str]:
    deadline = time.monotonic() + seconds
    while True:
        found = [m["id"] for m in api.client.get("/v1/memories/search/", params={"query": query, "user_id": user_id}
                                                 ).json()["results"]]
        if found == expected or time.monotonic() > deadline:
            return found
        time.sleep(0.3)


def test_hand_edits_are_searchable_while_serving(api):
    from memvault.vault.format import layout
    from memvault.vault.format.entry import Entry
    from memvault.vault.format.markdown import render

    # As a person would: files written, edited and removed with no commit and no journal.
    entry = Entry("Grandma bakes sourdough bread on Sundays.", conversation_id="user-hand", user_id="hand")
    target = api.vault / layout.relative_path(entry)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render(entry), encoding="utf-8")
    assert search_until(api, "sourdough", "hand", [entry.id]) == [entry.id]
    target.write_text(render(entry.replace(text="Grandma grows tomatoes in the garden.")), encoding="utf-8")
    assert search_until(api, "tomatoes garden", "hand", [entry.id]) == [entry.id]
    assert api.client.get(f"/v1/memories/{entry.id}/").json()["memory"] == "Grandma grows tomatoes in the garden."
    target.unlink()
    assert search_until(api, "tomatoes garden", "hand", []) == []


def test_watcher_handles_bursts_by_path_and_falls_back_to_a_full_sync(tmp_path):
    from memvault.index.keeper import journal_items

    memory_id = "0f3c2d8e-6a4b-4c1d-9e2f-123456789abc"
    live = PurePosixPath(f"entries/c1/facts/20240101T000000000Z__{memory_id}.md")
    (tmp_path / live).parent.mkdir(parents=True)
    (tmp_path / live).write_text("x")
    tomb = PurePosixPath(f"entries/c1/deleted/facts/20240101T000000000Z__{memory_id}.md")
    assert journal_items(tmp_path, frozenset({live, tomb})) == [(memory_id, None), (memory_id, str(live))]
    assert journal_items(tmp_path, frozenset({PurePosixPath("entries/c1/summaries/summary.md")})) == []
    assert journal_items(tmp_path, frozenset({PurePosixPath("entries/c1/facts/my-note.md")})) is None
    assert journal_items(tmp_path, frozenset({PurePosixPath("entries/c1/facts")})) is None  # a folder
    assert journal_items(tmp_path, frozenset({PurePosixPath("README.md")})) == []


def test_reset_when_allowed(tmp_path):
    with running(rest_settings(tmp_path / "vault", allow_reset=True)) as url, httpx.Client(base_url=url,
                                                                                            timeout=120) as client:
        client.post("/v1/memories/", json={"messages": "Tomás hates tomatoes.", "user_id": "t", "infer": False})
        assert client.post("/v1/reset/").status_code == 200
        assert client.get("/v1/memories/", params={"user_id": "t"}).json()["results"] == []


def test_openapi_lists_every_route_with_its_parameters(api):
    from fastapi.routing import APIRoute

    from memvault.server.app import create_app

    doc = api.client.get("/openapi.json").json()
    def api_routes(routes):  # included routers are nested (FastAPI keeps them as their own objects)
        for route in routes:
            if isinstance(route, APIRoute):
                yield route
            inner = getattr(route, "original_router", None)
            if inner is not None:
                yield from api_routes(inner.routes)

    routes = [r for r in api_routes(create_app(api.settings).routes) if r.include_in_schema]
    assert routes
    for route in routes:
        assert route.path in doc["paths"], route.path
        for method in route.methods:
            operation = doc["paths"][route.path][method.lower()]
            documented = {p["name"] for p in operation.get("parameters", [])}
            expected = {p.alias for p in route.dependant.path_params + route.dependant.query_params}
            # Query models (Annotated[Model, Query()]) are flattened into one parameter per field.
            for param in route.dependant.query_params:
                fields = getattr(param.field_info.annotation, "model_fields", None)
                if fields:
                    expected.discard(param.alias)
                    expected |= set(fields)
            assert documented == expected, (route.path, method)
            assert bool(route.dependant.body_params) == ("requestBody" in operation), (route.path, method)
    assert set(doc["paths"]) == {r.path for r in routes}
    search = {p["name"] for p in doc["paths"]["/v1/memories/search/"]["get"]["parameters"]}
    assert {"query", "user_id", "agent_id", "run_id", "limit", "threshold", "filters"} == search
