"""The OpenAI-compatible proxy end to end: the real `openai` client -> a real uvicorn memvault server ->
a recording relay -> the real local model server (SmolLM2). The model is tiny: these tests assert on
plumbing (what the upstream received, what was committed, chunking, statuses), never on wisdom."""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from memvault.core import Memvault
from memvault.server.run import running
from memvault.settings import Settings
from tests.support.local_llm import MODEL_NAME
from tests.support.server import isolated_env, server_settings
from tests.support.upstream import INSTANT_TEXT, Upstream, serving

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

FACT = "Alice's cat is called Biscuit and sleeps on the piano."
QUESTION = "What is the name of Alice's cat?"


def proxy_settings(vault: Path, api_base: str, model: str = "") -> Settings:
    return server_settings(vault, api_base, model, llm_key="upstream-key")


def openai_client(base_url: str, api_key: str = "client-key", timeout: float = 600):
    import openai

    return openai.OpenAI(base_url=base_url + "/v1", api_key=api_key, max_retries=0, timeout=timeout)


def commit_subjects(vault: Path) -> list[str]:
    return subprocess.run(["git", "-C", str(vault), "log", "--format=%s"], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def committed_soon(vault: Path, subject: str, timeout: float = 60.0) -> bool:
    """The answer comes before the turns' commit, which follows in the background."""
    deadline = time.monotonic() + timeout
    while subject not in commit_subjects(vault):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def stored_turns(settings: Settings, conversation: str) -> dict[str, list[str]]:
    """The turns in the vault's files, read by another Memvault (as another process would)."""
    core = Memvault.open(settings)
    try:
        listing = core.list(conversation=conversation)
        return {role: [e.text for _, e in listing.entries if e.role == role] for role in ("user", "assistant")}
    finally:
        core.close()


def last_user_content(request_json: dict) -> str:
    return next(m["content"] for m in reversed(request_json["messages"]) if m["role"] == "user")


@pytest.fixture(scope="module")
def recorder(local_llm):
    upstream = Upstream(forward_to=local_llm)
    with serving(upstream.app()) as root:
        upstream.root = root
        yield upstream


@pytest.fixture(scope="module")
def proxy(recorder, tmp_path_factory):
    base = tmp_path_factory.mktemp("proxy")
    settings = proxy_settings(base / "vault", recorder.root + "/v1")
    with isolated_env(base / "home"), running(settings) as url:
        yield SimpleNamespace(url=url, settings=settings, vault=Path(settings.vault.path))


@pytest.fixture
def failing(recorder):
    """The relay answers with an error of the given status until the test ends."""

    def fail(status: int, message: str) -> None:
        recorder.fail = (status, message)

    yield fail
    recorder.fail = None


def test_memories_injected_hits_returned_and_turns_committed(proxy, recorder):
    # A memory written by another process: the server must find it (journal / watcher).
    other = Memvault.open(proxy.settings)
    other.add_verbatim(FACT, conversation="pets")
    other.close()
    before = len(recorder.chat_requests())

    raw = openai_client(proxy.url).chat.completions.with_raw_response.create(
        model=MODEL_NAME, messages=[{"role": "user", "content": QUESTION}], max_tokens=12,
        extra_body={"memory_id": "pets", "memory_score_threshold": 0.0, "memory_top_k": 3})

    timing = dict(part.split(";dur=") for part in raw.headers["server-timing"].split(", "))
    assert set(timing) == {"retrieve", "llm", "store"} and all(float(v) >= 0 for v in timing.values())
    reply = raw.parse()
    answer = reply.choices[0].message.content
    assert answer and answer.strip()
    hits = reply.model_extra["memory_hits"]
    assert FACT in [h["text"] for h in hits]
    assert set(hits[0]) >= {"role", "text", "created_at", "score"}
    sent = recorder.chat_requests()[before]
    assert "Long-term memory" in last_user_content(sent) and FACT in last_user_content(sent)
    assert not {"memory_id", "memory_top_k", "memory_score_threshold"} & set(sent)
    assert sent["max_tokens"] == 12 and sent["model"] == MODEL_NAME  # the client's options go through
    # Without a server key, the client's bearer token is the LLM's key.
    assert recorder.requests[-1]["headers"]["authorization"] == "Bearer client-key"
    turns = stored_turns(proxy.settings, "pets")  # on disk when the answer comes
    assert committed_soon(proxy.vault, "memvault chat: turn in pets")
    assert turns == {"user": [QUESTION], "assistant": [answer.strip()]}


def test_stream_is_relayed_chunk_by_chunk_and_persisted_at_the_end(proxy, recorder):
    before = len(recorder.chat_requests())
    stream = openai_client(proxy.url).chat.completions.create(
        model=MODEL_NAME, messages=[{"role": "user", "content": "Count from one to ten."}], max_tokens=24,
        stream=True, extra_body={"memory_id": "counting"})
    pieces, arrivals = [], []
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
            arrivals.append(time.monotonic())

    assert len(pieces) > 1
    # Relayed as generated, not buffered: the first words reached the client before the model had finished.
    assert arrivals[0] < recorder.relay_ends[-1]
    assert recorder.chat_requests()[before]["stream"] is True
    assert stored_turns(proxy.settings, "counting")["assistant"] == ["".join(pieces).strip()]
    assert committed_soon(proxy.vault, "memvault chat: turn in counting")


@pytest.mark.parametrize(("status", "stream", "error_name"), [
    (429, False, "RateLimitError"), (401, True, "AuthenticationError"), (400, False, "BadRequestError")])
def test_upstream_errors_come_back_openai_style_with_the_upstream_status(proxy, failing, status, stream,
                                                                           error_name):
    import openai

    failing(status, f"upstream says no ({status})")
    with pytest.raises(openai.APIStatusError) as caught:
        openai_client(proxy.url).chat.completions.create(
            model=MODEL_NAME, messages=[{"role": "user", "content": "hello"}], stream=stream,
            extra_body={"memory_id": "errors"})
    assert type(caught.value).__name__ == error_name
    assert caught.value.status_code == status
    error = caught.value.body  # the openai client hands over the "error" object of the body
    assert f"upstream says no ({status})" in error["message"] and "\n" not in error["message"]
    assert {"message", "type", "code"} <= set(error)
    assert "memvault chat: turn in errors" not in commit_subjects(proxy.vault)  # nothing answered, nothing stored


def test_health_reports_vault_models_and_index(proxy):
    other = Memvault.open(proxy.settings)
    other.add_verbatim("A fact for the health check.", conversation="health")
    other.close()
    reply = httpx.get(proxy.url + "/health", timeout=60)
    assert reply.status_code == 200
    data = reply.json()
    from memvault import __version__

    assert data["version"] == __version__
    assert Path(data["vault"]) == proxy.vault.resolve()
    assert "minilm" in data["embedder"].lower()
    assert data["llm_api_base"] == proxy.settings.llm.api_base
    assert data["index_size"] >= 1 and data["watching"] is True


def test_models_and_other_v1_paths_pass_through(proxy, recorder):
    models = openai_client(proxy.url).models.list()
    assert MODEL_NAME in [m.id for m in models.data]
    seen = recorder.requests[-1]
    assert seen["method"] == "GET" and seen["path"] == "/v1/models"
    assert seen["headers"]["authorization"] == "Bearer client-key"


def test_invalid_chat_request_is_422_in_one_line(proxy):
    reply = httpx.post(proxy.url + "/v1/chat/completions", json={"model": MODEL_NAME, "messages": [],
                                                                 "memory_top_k": -1}, timeout=60)
    assert reply.status_code == 422
    message = reply.json()["error"]["message"]
    assert "messages" in message and "memory_top_k" in message and "\n" not in message


def test_bad_memory_id_is_400(proxy):
    # any printable memory_id works (tests/test_agentcli_proxy.py); a control character does not
    reply = httpx.post(proxy.url + "/v1/chat/completions", timeout=60, json={
        "model": MODEL_NAME, "messages": [{"role": "user", "content": "hi"}], "memory_id": "tab\there"})
    assert reply.status_code == 400
    assert reply.json()["error"]["type"] == "invalid_request_error"


def test_no_upstream_address_is_a_clear_502(tmp_path):
    settings = proxy_settings(tmp_path / "vault", api_base="")
    with running(settings) as url:
        reply = httpx.get(url + "/v1/models", timeout=60)
    assert reply.status_code == 502
    assert "llm.api_base" in reply.json()["error"]["message"]


def holding_curation(app, held: threading.Event, release: threading.Event):
    """The upstream `app`, except that a request which is not a chat answer (no "Current message:",
    so a curation call) sets `held` and waits for `release` before it is answered."""

    async def wrapped(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        received, body = [], b""
        while not received or received[-1].get("more_body"):
            received.append(await receive())
            body += received[-1].get("body", b"")
        if b"Current message:" not in body:
            held.set()
            await asyncio.to_thread(release.wait, 120)
        replay = iter(received)

        async def receive_again():
            return next(replay, None) or await receive()

        await app(scope, receive_again, send)

    return wrapped


def test_curation_runs_in_the_background_after_the_answer(tmp_path):
    # An instant fake LLM curates: its "ok" is no fact list, so curation stores nothing clever, but its
    # requests prove curation ran, after the answer and through the configured model. Curation's LLM
    # call is held until the answer is in: an answer that waited for curation never comes.
    upstream = Upstream()
    held, release = threading.Event(), threading.Event()
    with serving(holding_curation(upstream.app(), held, release)) as root:
        settings = proxy_settings(tmp_path / "vault", root + "/v1", model="openai/fake")
        with running(settings) as url:
            try:
                reply = openai_client(url, timeout=30).chat.completions.create(
                    model="fake", messages=[{"role": "user", "content": "I moved to Lisbon last spring."}],
                    extra_body={"memory_id": "moves"})
                assert reply.choices[0].message.content == INSTANT_TEXT
                assert held.wait(60), "curation never asked the LLM"
                assert len(upstream.chat_requests()) == 1  # only the answer went through: curation is held
            finally:
                release.set()
        # Leaving `running` waited for the curation worker: the curated add is committed.
    assert "Current message: I moved to Lisbon last spring." in str(upstream.chat_requests()[0]["messages"])
    curation_calls = upstream.chat_requests()[1:]
    assert curation_calls and all(c["model"] == "fake" for c in curation_calls)
    assert "I moved to Lisbon last spring." in str(curation_calls[0]["messages"])
    assert upstream.requests[-1]["headers"]["authorization"] == "Bearer upstream-key"  # llm.api_key
    assert "memvault chat: turn in moves" in commit_subjects(tmp_path / "vault")
