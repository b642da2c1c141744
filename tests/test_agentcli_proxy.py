"""agent-cli's memory proxy tests, ported to a real `memvault serve` driven by the real `openai` client.

The originals (github.com/basnijholt/agent-cli, tests/memory/: test_api_health.py,
test_proxy_passthrough.py, test_memory_integration.py) drive agent-cli's FastAPI app in-process with
its client, upstream and store mocked. Here the same wire behaviour goes through HTTP: `python -m
memvault serve` in a subprocess, an OpenAI-shaped upstream on loopback that records what it receives
(tests/support/upstream.py: it answers "ok", the upstream's words are not what is tested), and the
`openai` package or httpx as the client. Added: what agent-cli's clients send that memvault refused
(memory_top_k 0, any memory_id), the `content` of memory hits, and CORS for browser clients.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from tests.support.cli import Cli
from tests.support.server import isolated_env, memvault_serve
from tests.support.upstream import INSTANT_TEXT, Upstream, served_upstream

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
# An in-process server imports litellm in a thread that may outlive a short test, after the test's
# environment is restored: litellm must still find this then, or it fetches its price list online.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
PAGE = "https://chat.example"  # a browser client's page, allowed by server.cors_origins


def dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again: nothing listens there


@pytest.fixture(scope="module")
def upstream():
    with served_upstream() as fake:
        yield fake


@pytest.fixture(scope="module")
def proxy(upstream, tmp_path_factory):
    base = tmp_path_factory.mktemp("agentcli-proxy")
    vault = base / "vault"
    env = {"MEMVAULT_LLM_API_BASE": upstream.root + "/v1", "MEMVAULT_SERVER_CORS_ORIGINS": PAGE}
    with isolated_env(base / "home"), memvault_serve(vault, env) as url:
        yield SimpleNamespace(url=url, vault=vault)


def openai_client(url: str, api_key: str = "client-key"):
    import openai

    return openai.OpenAI(base_url=url + "/v1", api_key=api_key, max_retries=0, timeout=120)


def chat(url: str, text: str, **memory):
    """A chat completion as agent-cli's clients send one: memory fields in the body (extra_body)."""
    return openai_client(url).chat.completions.create(
        model="demo-model", messages=[{"role": "user", "content": text}], extra_body=memory or None)


def last_chat(upstream: Upstream) -> dict:
    return upstream.chat_requests()[-1]


# -- test_api_health.py -------------------------------------------------------------------------------
def test_health_names_the_memory_store_as_agentcli_does(proxy, upstream):
    body = httpx.get(proxy.url + "/health", timeout=60).json()
    assert body["status"] == "ok"
    assert body["memory_store"] == str(proxy.vault.resolve())
    assert body["openai_base_url"] == upstream.root + "/v1" and body["default_top_k"].isdigit()
    assert body["vault"] == body["memory_store"]  # memvault's own fields stay


# -- test_memory_integration.py -----------------------------------------------------------------------
def test_round_trip_creates_turn_files_with_front_matter(proxy):
    answer = chat(proxy.url, "Hello there, my bicycle is green.", memory_id="round-trip")
    assert answer.choices[0].message.content == INSTANT_TEXT
    folder = proxy.vault / "entries" / "round-trip"
    deadline = time.monotonic() + 30
    while len(list(folder.rglob("*.md"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    files = sorted(folder.rglob("*.md"))
    assert [f.relative_to(folder).parts[:2] for f in files] == [("turns", "assistant"), ("turns", "user")]
    assert all(f.read_text().startswith("---\n") for f in files)  # YAML front matter present


def test_memory_hits_carry_content_as_agentcli_clients_read_it(proxy):
    Cli(proxy.vault).ok("add", "My sister Ingrid plays the cello.", "-c", "hits")  # another process
    answer = chat(proxy.url, "Who plays the cello?", memory_id="hits", memory_score_threshold=0.0)
    hits = answer.model_extra["memory_hits"]
    assert hits and any("Ingrid" in hit["content"] for hit in hits)
    assert all(hit["content"] == hit["text"] for hit in hits)


def test_memory_top_k_zero_turns_retrieval_off_and_keeps_the_turns(proxy, upstream):
    Cli(proxy.vault).ok("add", "My locker code is 4471.", "-c", "top-k")
    answer = chat(proxy.url, "What is my locker code?", memory_id="top-k", memory_top_k=0)
    assert answer.model_extra["memory_hits"] == []
    sent = last_chat(upstream)["messages"]
    assert sent[-1]["content"] == "What is my locker code?" and "4471" not in str(sent)  # nothing injected
    with_memory = chat(proxy.url, "What is my locker code?", memory_id="top-k", memory_score_threshold=0.0)
    assert "4471" in str(last_chat(upstream)["messages"]) and with_memory.model_extra["memory_hits"]


def test_any_memory_id_works_in_a_safe_folder_and_is_kept_as_sent(proxy):
    for memory_id in ("My Chat", "../../etc", "a/b\\c", "chat 日本"):
        chat(proxy.url, f"Remember the word tangerine for {memory_id}.", memory_id=memory_id)
    Cli(proxy.vault).ok("add", "The word is tangerine.", "-c", "../../etc")  # the CLI finds the same folder
    entries = proxy.vault / "entries"
    folders = [p.name for p in entries.iterdir()]
    assert all(p.resolve().parent == entries.resolve() for p in entries.iterdir())  # nothing outside entries/
    assert not (proxy.vault.parent / "etc").exists()
    rows = Cli(proxy.vault).ok("list", "--conversation", "My Chat", "--json").json()
    assert {row["conversation_id"] for row in rows} == {"My Chat"} and len(rows) >= 2
    assert next(f for f in folders if f.startswith("My_Chat-")) == Path(rows[0]["path"]).parts[1]
    again = chat(proxy.url, "Which word should I remember?", memory_id="../../etc", memory_score_threshold=0.0)
    assert "The word is tangerine." in [hit["content"] for hit in again.model_extra["memory_hits"]]
    assert len([f for f in folders if f.startswith("etc-")]) == 1
    bad = httpx.post(proxy.url + "/v1/chat/completions", timeout=60, json={
        "model": "demo-model", "messages": [{"role": "user", "content": "hi"}], "memory_id": "tab\there"})
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"


# -- test_proxy_passthrough.py ------------------------------------------------------------------------
def test_passthrough_models(proxy, upstream):
    models = openai_client(proxy.url).models.list()
    assert [m.id for m in models.data] == ["fake"]
    seen = upstream.requests[-1]
    assert (seen["method"], seen["path"]) == ("GET", "/v1/models")  # base ".../v1" + "models": no /v1/v1


def test_passthrough_catchall_other_path(proxy, upstream):
    reply = httpx.post(proxy.url + "/embeddings/x?foo=bar", content=b"payload", timeout=60)
    assert reply.status_code == 200
    seen = upstream.requests[-1]
    assert (seen["method"], seen["path"], seen["query"], seen["body"]) == ("POST", "/v1/embeddings/x", "foo=bar",
                                                                           b"payload")
    other = httpx.post(proxy.url + "/other/path", content=b"payload", timeout=60)  # not an OpenAI API path
    assert other.status_code == 404 and "server.passthrough_paths" in other.text and upstream.requests[-1] is seen
    escape = httpx.get(proxy.url + "/other/..%2F..%2F..%2Fadmin", timeout=60)
    assert escape.status_code == 400 and upstream.requests[-1] is seen  # never forwarded outside llm.api_base
    own = httpx.get(proxy.url + "/x/..%2Fv1/memories/", timeout=60)
    assert own.status_code in (200, 404) and upstream.requests[-1] is seen  # memvault's own, never forwarded


def test_passthrough_upstream_down_is_a_502_in_openai_shape(tmp_path):
    import openai

    env = {"MEMVAULT_LLM_API_BASE": f"http://127.0.0.1:{dead_port()}/v1"}
    with memvault_serve(tmp_path / "vault", env) as url:
        for call in (lambda: openai_client(url).models.list(), lambda: chat(url, "hello?"),
                     lambda: list(openai_client(url).chat.completions.create(
                         model="demo-model", messages=[{"role": "user", "content": "hi"}], stream=True))):
            with pytest.raises(openai.APIStatusError) as failure:
                call()
            assert failure.value.status_code == 502
            error = failure.value.body
            assert error["type"] and error["message"] and "\n" not in error["message"]
        other = httpx.get(url + "/embeddings", timeout=60)
        assert other.status_code == 502 and other.json()["error"]["code"] == "bad_gateway"


# -- browsers: CORS (agent-cli allows every origin; memvault only those configured) ---------------------
def test_cors_preflight_is_answered_for_configured_origins_only(proxy, upstream):
    preflight = {"Origin": PAGE, "Access-Control-Request-Method": "POST",
                 "Access-Control-Request-Headers": "authorization, content-type"}
    reply = httpx.options(proxy.url + "/v1/chat/completions", headers=preflight, timeout=60)
    assert reply.status_code == 200 and reply.headers["access-control-allow-origin"] == PAGE
    assert "authorization" in reply.headers["access-control-allow-headers"].lower()
    answer = httpx.post(proxy.url + "/v1/chat/completions", headers={"Origin": PAGE}, timeout=60, json={
        "model": "demo-model", "messages": [{"role": "user", "content": "hi from a page"}]})
    assert answer.status_code == 200 and answer.headers["access-control-allow-origin"] == PAGE
    evil = httpx.options(proxy.url + "/v1/chat/completions", headers={**preflight, "Origin": "https://evil.example"},
                         timeout=60)
    assert evil.status_code == 403 and "access-control-allow-origin" not in evil.headers
    rebound = httpx.get(proxy.url + "/health", headers={"Origin": PAGE, "Host": "evil.example"}, timeout=60)
    assert rebound.status_code == 421  # an allowed page never makes a rebound name this server


def test_without_cors_origins_a_page_is_refused_even_its_preflight(tmp_path, upstream):
    env = {"MEMVAULT_LLM_API_BASE": upstream.root + "/v1"}
    with memvault_serve(tmp_path / "vault", env) as url:
        reply = httpx.options(url + "/v1/chat/completions", timeout=60, headers={
            "Origin": PAGE, "Access-Control-Request-Method": "POST"})
        assert reply.status_code == 403 and "access-control-allow-origin" not in reply.headers


def test_a_scoped_key_never_reaches_paths_outside_v1(tmp_path, upstream):
    from memvault.server.run import running
    from tests.support.server import server_settings

    settings = server_settings(tmp_path / "vault", upstream.root + "/v1", api_key="admin-key-0123")
    settings.server.keys = {"alice-key-0123": {"user_id": ("alice",)}}
    with running(settings) as url:
        before = len(upstream.requests)
        scoped = httpx.post(url + "/embeddings", headers={"Authorization": "Bearer alice-key-0123"}, timeout=60)
        assert scoped.status_code == 403 and len(upstream.requests) == before
        admin = httpx.post(url + "/embeddings", headers={"Authorization": "Bearer admin-key-0123"}, timeout=60)
        assert admin.status_code == 200 and upstream.requests[-1]["path"] == "/v1/embeddings"
        assert "admin-key-0123" not in str(upstream.requests[-1]["headers"])  # the server's key stays home
        assert httpx.post(url + "/embeddings", timeout=60).status_code == 401


# -- tests/rag/test_api.py (agent-cli's other OpenAI-compatible proxy, same request model) ---------------
def test_chat_completion_extra_fields_reach_the_upstream(proxy, upstream):
    """agent-cli's ChatRequest keeps extra fields (extra="allow") and forwards them; so does memvault,
    but for those that would route the request or its key (tests/test_proxy_fields.py)."""
    chat(proxy.url, "Hello", response_format={"type": "json_object"}, rag_top_k=2, cache_prompt=True)
    sent = last_chat(upstream)
    assert sent["response_format"] == {"type": "json_object"}
    assert (sent["rag_top_k"], sent["cache_prompt"]) == (2, True)


def test_chat_completion_auth_forwarding(proxy, upstream):
    """The client's bearer token is the upstream's API key (a server without keys of its own)."""
    reply = httpx.post(proxy.url + "/v1/chat/completions", headers={"Authorization": "Bearer sk-test-key"},
                       timeout=60, json={"model": "demo-model", "messages": [{"role": "user", "content": "Hello"}]})
    assert reply.status_code == 200, reply.text
    assert upstream.requests[-1]["headers"]["authorization"] == "Bearer sk-test-key"


def test_chat_completion_server_api_key(tmp_path, upstream):
    """Without a client token, the server's own LLM key (agent-cli's chat_api_key, memvault's llm.api_key)."""
    from memvault.server.run import running
    from tests.support.server import server_settings

    with running(server_settings(tmp_path / "vault", upstream.root + "/v1", llm_key="sk-server-fallback")) as url:
        reply = httpx.post(url + "/v1/chat/completions", timeout=60, json={
            "model": "demo-model", "messages": [{"role": "user", "content": "Hello"}]})
        assert reply.status_code == 200, reply.text
        assert upstream.requests[-1]["headers"]["authorization"] == "Bearer sk-server-fallback"


def test_a_field_that_would_route_the_key_is_refused_by_name(proxy, upstream):
    """What agent-cli forwards and memvault does not: a field that chooses where the key goes."""
    import openai

    before = len(upstream.requests)
    with pytest.raises(openai.BadRequestError) as refused:
        chat(proxy.url, "Hello", api_base="http://evil.example/v1")
    assert "api_base" in refused.value.body["message"] and len(upstream.requests) == before


# -- tests/memory/test_engine.py: a streamed answer is stored, user and assistant ------------------------
def test_streaming_request_persists_user_and_assistant(proxy):
    stream = openai_client(proxy.url).chat.completions.create(
        model="demo-model", messages=[{"role": "user", "content": "Streaming: my kayak is orange."}], stream=True,
        extra_body={"memory_id": "streamed"})
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text
    rows = Cli(proxy.vault).ok("list", "--conversation", "streamed", "--json").json()
    assert sorted(row["role"] for row in rows) == ["assistant", "user"]
    assert "Streaming: my kayak is orange." in [row["text"] for row in rows]
