"""The server's trust boundaries under hostile requests: a real uvicorn memvault server in front of a
recording fake upstream on loopback. Nothing here may leave 127.0.0.1: a guard refuses any other
connection and records it, so a leak shows up as a recorded address, not as traffic."""

from __future__ import annotations

import socket
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from memvault.server.run import running
from memvault.server.upstream import client_model
from memvault.settings import LLMSettings
from tests.support.server import isolated_env, server_settings
from tests.support.upstream import served_upstream

ADMIN = {"Authorization": "Bearer admin"}
ALICE = {"Authorization": "Bearer alice-key"}
HI = [{"role": "user", "content": "hi"}]
# Prefixes the review used to send the operator's key to another provider or host.
FOREIGN = ["groq/llama3-8b-8192", "deepseek/deepseek-chat", "mistral/mistral-small", "together_ai/x",
           "anthropic/claude-3-haiku-20240307", "ollama/x"]
ESCAPING_WITH_BASE = ["replicate/x", "sagemaker/x", "bedrock/x", "vertex_ai/x", "watsonx/x", *FOREIGN]


@pytest.fixture(scope="module")
def outside():
    """Every connection attempt beyond loopback, refused and recorded."""
    attempts: list = []
    original = socket.socket.connect

    def connect(self, address):
        if isinstance(address, tuple) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            attempts.append(address)
            raise OSError("the tests never leave loopback")
        return original(self, address)

    socket.socket.connect = connect
    try:
        yield attempts
    finally:
        socket.socket.connect = original


@pytest.fixture(scope="module")
def upstream():
    with served_upstream() as fake:
        yield fake


@pytest.fixture(scope="module")
def server(upstream, outside, tmp_path_factory):
    base = tmp_path_factory.mktemp("hardening")
    settings = server_settings(base / "vault", upstream.root + "/v1", "fake", api_key="admin", llm_key="sk-OPERATOR")
    settings.server.keys = {"alice-key": {"user_id": ("alice",)}}
    with isolated_env(base / "home"), running(settings) as url:
        yield SimpleNamespace(url=url, settings=settings, vault=Path(settings.vault.path))


def chat(server, model, headers=ADMIN, **extra):
    return httpx.post(server.url + "/v1/chat/completions", json={"model": model, "messages": HI, **extra},
                      headers=headers, timeout=120)


def requests_for(upstream, before: int, model: str) -> list[dict]:
    """The upstream requests since `before` for `model` (the configured model, "fake", curates the
    turns in the background: those requests aside)."""
    return [r for r in upstream.requests[before:] if (r["json"] or {}).get("model") == model]


# 1. The client's model never chooses the provider or the host.

@pytest.mark.parametrize("model", ESCAPING_WITH_BASE)
def test_with_api_base_every_client_model_goes_to_that_base(server, upstream, outside, model):
    before = len(upstream.requests)
    reply = chat(server, model, ALICE)
    assert reply.status_code == 200, reply.text
    sent = requests_for(upstream, before, model)
    assert [r["path"] for r in sent] == ["/v1/chat/completions"]
    assert sent[0]["headers"]["authorization"] == "Bearer sk-OPERATOR"
    assert outside == []


@pytest.mark.parametrize("model", FOREIGN)
def test_without_api_base_another_provider_is_refused(server, upstream, outside, model, monkeypatch):
    monkeypatch.setattr(server.settings.llm, "api_base", "")
    monkeypatch.setattr(server.settings.llm, "model", "openai/gpt-4o-mini")
    before = len(upstream.requests)
    reply = chat(server, model, ALICE)
    assert reply.status_code == 400 and model in reply.text, reply.text
    assert requests_for(upstream, before, model) == [] and outside == []


@pytest.mark.parametrize(("configured", "requested", "expected"), [
    ("openai/gpt-4o-mini", "gpt-4o", "openai/gpt-4o"),
    ("openai/gpt-4o-mini", "openai/gpt-4o", "openai/gpt-4o"),
    ("openai/gpt-4o-mini", None, "openai/gpt-4o-mini"),
    ("groq/llama3-8b-8192", "llama3-70b-8192", "groq/llama3-70b-8192"),
    ("", "gpt-4o", "openai/gpt-4o"),
])
def test_without_api_base_the_configured_provider_is_kept(configured, requested, expected):
    assert client_model(requested, LLMSettings(model=configured, api_base="")) == expected


@pytest.mark.parametrize("model", ["groq/x", "anthropic/claude-3-haiku-20240307", "ollama/x"])
def test_without_any_configured_model_only_openai_names_pass(model):
    from memvault.errors import UsageError

    with pytest.raises(UsageError, match="provider"):
        client_model(model, LLMSettings(model="", api_base=""))


def test_a_refused_upstream_call_is_sent_once(server, upstream):
    before = len(upstream.requests)
    upstream.fail = (500, "broken")
    try:
        reply = chat(server, "once-only")
    finally:
        upstream.fail = None
    assert reply.status_code >= 500
    assert len(requests_for(upstream, before, "once-only")) == 1


def test_a_dropped_connection_is_not_retried(server, monkeypatch):
    """An upstream that accepts and hangs up at once: the proxy connects once (no retry of its own)."""
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list = []

    def hang_up() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(conn)
            conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    try:
        monkeypatch.setattr(server.settings.llm, "api_base", f"http://127.0.0.1:{listener.getsockname()[1]}/v1")
        reply = chat(server, "dropped")
    finally:
        listener.close()
    assert reply.status_code >= 500 and len(accepted) == 1


# 2. A conversation summary never crosses scopes.

LONG = "x" * 45


@pytest.mark.parametrize(("one", "other"), [
    ({"user_id": "alice"}, {"user_id": "alice."}),
    ({"user_id": "a@b"}, {"user_id": "a_b"}),
    ({"user_id": LONG + "1"}, {"user_id": LONG + "2"}),
    ({"user_id": "u" * 40, "agent_id": "a" * 40, "run_id": "r" * 40 + "1"},
     {"user_id": "u" * 40, "agent_id": "a" * 40, "run_id": "r" * 40 + "2"}),
])
def test_distinct_scopes_get_distinct_folders(one, other):
    from memvault.vault.format.layout import check_conversation, scope_conversation

    folders = [scope_conversation(s.get("user_id"), s.get("agent_id"), s.get("run_id")) for s in (one, other)]
    assert folders[0] != folders[1]
    assert [check_conversation(f) for f in folders] == folders


def test_a_plain_scope_keeps_its_folder():
    from memvault.vault.format.layout import scope_conversation

    assert scope_conversation("alice", "bot", None) == "user-alice+agent-bot"


def test_a_summary_of_another_scope_in_the_same_folder_is_not_injected(tmp_path):
    from memvault.converse import MemoryChat
    from memvault.converse.prompt import SUMMARY_HEADER
    from memvault.core import Memvault
    from memvault.vault.format.entry import Entry

    core = Memvault.open(server_settings(tmp_path / "vault"), create=True)
    try:
        folder = "user-alice"  # where "alice." went before folders were made injective
        core.add_entries([Entry(text="alice. owes 500 EUR", role="summary", conversation_id=folder,
                                user_id="alice.")], "summary of alice.")
        sent = MemoryChat(core, folder, scopes={"user_id": "alice"}).prepare(HI).messages
        assert SUMMARY_HEADER not in sent[-1]["content"] and "500 EUR" not in sent[-1]["content"]
        own = MemoryChat(core, folder, scopes={"user_id": "alice."}).prepare(HI).messages
        assert "500 EUR" in own[-1]["content"]
    finally:
        core.close()


# 3. DNS rebinding and foreign web pages.

@pytest.mark.parametrize("host", ["127.0.0.1", "localhost:1234", "[::1]:8000", "LOCALHOST", None])
def test_loopback_hosts_are_answered(server, host):
    headers = {**ADMIN, **({"Host": host} if host else {})}
    assert httpx.get(server.url + "/health", headers=headers).status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example", "[::2]:80"])
def test_a_foreign_host_is_refused(server, host):
    reply = httpx.get(server.url + "/health", headers={**ADMIN, "Host": host})
    assert reply.status_code == 421 and reply.json()["error"]["code"] == "misdirected_request"


@pytest.mark.parametrize(("origin", "status"), [("https://evil.example", 403), ("null", 403),
                                                ("http://localhost:3000", 200), ("http://127.0.0.1:9", 200)])
def test_a_foreign_origin_is_refused(server, upstream, origin, status):
    before = len(upstream.requests)
    reply = httpx.post(server.url + "/v1/chat/completions", json={"model": "from-a-page", "messages": HI},
                       headers={**ADMIN, "Origin": origin}, timeout=120)
    assert reply.status_code == status, reply.text
    assert len(requests_for(upstream, before, "from-a-page")) == (status == 200)


def test_the_servers_own_origin_is_answered(server):
    reply = httpx.get(server.url + "/health", headers={**ADMIN, "Origin": server.url})
    assert reply.status_code == 200


# 4. Scoped keys and memvault's own routes never reach the pass-through.

@pytest.mark.parametrize(("method", "path"), [("GET", "/v1/files"), ("POST", "/v1/batches"),
                                              ("GET", "/v1/models/fake"), ("POST", "/v1/models"),
                                              ("DELETE", "/v1/files/x")])
def test_a_scoped_key_gets_only_the_model_list(server, upstream, method, path):
    before = len(upstream.requests)
    reply = httpx.request(method, server.url + path, headers=ALICE)
    assert reply.status_code == 403, reply.text
    assert not [r for r in upstream.requests[before:] if not r["path"].endswith("/chat/completions")]


def test_a_scoped_key_may_list_the_models(server):
    reply = httpx.get(server.url + "/v1/models", headers=ALICE)
    assert reply.status_code == 200 and reply.json()["data"][0]["id"] == "fake"


def test_the_chat_route_with_a_trailing_slash_uses_memory(server, upstream):
    before = len(upstream.requests)
    reply = httpx.post(server.url + "/v1/chat/completions/", json={"model": "slash", "messages": HI},
                       headers=ADMIN, timeout=120)
    assert reply.status_code == 200 and "memory_hits" in reply.json(), reply.text
    assert len(requests_for(upstream, before, "slash")) == 1


@pytest.mark.parametrize("path", ["/v1//memories/x", "/v1/memories/a%2Fb/history/", "/v1//reset/",
                                  "/v1//chat/completions"])
def test_memvault_routes_written_oddly_are_not_forwarded(server, upstream, path):
    before = len(upstream.requests)
    reply = httpx.request("POST" if "chat" in path else "GET", server.url + path, headers=ADMIN,
                          json={"model": "odd", "messages": HI})
    assert reply.status_code in (404, 405), reply.text
    assert not [r for r in upstream.requests[before:] if (r["json"] or {}).get("model") != "fake"]


# 7. `..;` is a dot segment to servers that drop path parameters (Tomcat, some proxies).

@pytest.mark.parametrize("path", ["/v1/..;/admin", "/v1/a/..;x/..;/b", "/v1/.;/models"])
def test_dot_segments_with_parameters_are_refused(server, upstream, path):
    before = len(upstream.requests)
    reply = httpx.get(server.url + path, headers=ADMIN)
    assert reply.status_code == 400, reply.text
    assert not [r for r in upstream.requests[before:] if (r["json"] or {}).get("model") != "fake"]


def test_a_semicolon_inside_a_name_still_passes():
    from memvault.server.passthrough import confined_url

    assert confined_url("http://127.0.0.1:1/v1", b"/v1/files/a;b") == "http://127.0.0.1:1/v1/files/a;b"


# 5. A model name that is not text is a 400 that names `model`, not a 500.

@pytest.mark.parametrize("model", ["\ud800", "gpt\udfff", "a\x00b", "a\nb", "\x7f"])
def test_a_broken_model_name_is_a_400(server, upstream, model):
    import json

    before = len(upstream.requests)
    reply = httpx.post(server.url + "/v1/chat/completions", headers={**ADMIN, "Content-Type": "application/json"},
                       content=json.dumps({"model": model, "messages": HI}), timeout=120)
    assert reply.status_code == 400 and "`model`" in reply.json()["error"]["message"], reply.text
    assert not [r for r in upstream.requests[before:] if (r["json"] or {}).get("model") != "fake"]


# 6. /health tells where the vault and the LLM are only to the server's own key.

def test_health_hides_paths_from_a_scoped_key(server):
    scoped = httpx.get(server.url + "/health", headers=ALICE).json()
    assert scoped["status"] == "ok" and scoped["vault"] is None and scoped["llm_api_base"] is None
    assert str(server.vault) not in str(scoped) and server.settings.llm.api_base not in str(scoped)
    admin = httpx.get(server.url + "/health", headers=ADMIN).json()
    assert admin["vault"] == str(server.vault) and admin["llm_api_base"] == server.settings.llm.api_base
