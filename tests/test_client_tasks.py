"""A client's own housekeeping (Open WebUI's titles, tags, follow-ups...) goes through the proxy as
sent and is never remembered: no memory injected or retrieved, no turn stored, nothing curated.

The request bodies are Open WebUI's, recorded in tests/fixtures/openwebui/ (see its README); they go
to a real memvault server over HTTP, with curation on (llm.model set), to a recording upstream."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from memvault.core import Memvault
from memvault.server.client_tasks import client_task
from memvault.server.run import running
from tests.support.server import isolated_env, server_settings
from tests.support.upstream import Upstream, serving

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
FIXTURES = sorted((Path(__file__).parent / "fixtures" / "openwebui").glob("*.json"))
REMEMBERED = "The user's sister Ana lives in Porto and walks along the Douro every summer."
OWN_MARKER = r"Summarise this page for the sidebar:"
CONTROL = "My sister Ana lives in Porto; we walk along the Douro every summer."


@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    base = tmp_path_factory.mktemp("client-tasks")
    upstream = Upstream()
    settings = None
    with serving(upstream.app()) as root, isolated_env(base / "home"):
        settings = server_settings(base / "vault", root + "/v1", model="fake")
        settings.retrieval.score_threshold = 0.0
        settings.proxy.task_markers = [OWN_MARKER]
        core = Memvault.open(settings, create=True)
        core.add_verbatim(REMEMBERED, conversation="global")  # what every task's text would retrieve
        core.close()
        with running(settings) as url:
            yield SimpleNamespace(url=url, settings=settings, upstream=upstream)


def post(proxy, body: dict) -> dict:
    reply = httpx.post(proxy.url + "/v1/chat/completions", json=body, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.json()


def turns(settings, conversation: str) -> list[str]:
    core = Memvault.open(settings)
    try:
        return [entry.text for _, entry in core.list(conversation=conversation).entries]
    finally:
        core.close()


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda path: path.stem)
def test_open_webui_tasks_are_forwarded_as_sent_without_memory(proxy, fixture):
    body = json.loads(fixture.read_text(encoding="utf-8"))
    before = len(proxy.upstream.chat_requests())
    answer = post(proxy, body)  # no memory_id: Open WebUI sends none, the conversation is "default"
    sent = proxy.upstream.chat_requests()[before:]
    assert answer["memory_hits"] == []  # not used as a retrieval query
    assert len(sent) == 1 and sent[0]["messages"] == body["messages"]  # nothing injected, no system prompt added


def test_a_marker_of_the_operator_and_memory_task_mark_more(proxy):
    for body in ({"messages": [{"role": "user", "content": f"{OWN_MARKER} {CONTROL}"}]},
                 {"messages": [{"role": "user", "content": CONTROL}], "memory_task": True}):
        before = len(proxy.upstream.chat_requests())
        assert post(proxy, {"model": "fake", "memory_id": "marked", **body})["memory_hits"] == []
        assert proxy.upstream.chat_requests()[before]["messages"] == body["messages"]
    assert turns(proxy.settings, "marked") == []


def test_tasks_leave_no_turn_and_no_curation_while_a_conversation_is_remembered(proxy):
    answer = post(proxy, {"model": "fake", "memory_id": "control",
                          "messages": [{"role": "user", "content": CONTROL}]})
    assert REMEMBERED in [hit["text"] for hit in answer["memory_hits"]]  # the same words, as a turn: retrieved
    deadline = time.monotonic() + 120
    while sum(CONTROL in json.dumps(r) for r in proxy.upstream.chat_requests()) < 2:  # its curation came
        assert time.monotonic() < deadline, "the control turn was never curated"
        time.sleep(0.2)
    assert CONTROL in turns(proxy.settings, "control")
    assert turns(proxy.settings, "default") == []  # no task was stored
    requests = [json.dumps(r, ensure_ascii=False) for r in proxy.upstream.chat_requests()]
    for fixture in FIXTURES:  # each task reached the upstream once, as forwarded: never for curation
        text = json.loads(fixture.read_text(encoding="utf-8"))["messages"][0]["content"]
        same = sum(json.loads(f.read_text(encoding="utf-8"))["messages"][0]["content"] == text for f in FIXTURES)
        assert sum(json.dumps(text, ensure_ascii=False)[1:-1] in r for r in requests) == same


def test_what_marks_a_task():
    chat = [{"role": "user", "content": "### Task: is how my notes start, but this is me talking"}]
    assert client_task(chat, False) == "Open WebUI task"  # the known risk: such a message is not stored
    assert client_task([{"role": "user", "content": "What is my sister called?"}], False) is None
    assert client_task([{"role": "assistant", "content": "### Task: x"}], False) is None
    assert client_task([{"role": "user", "content": "hi"}], True) == "memory_task"
    assert client_task([{"role": "user", "content": "x PAGE y"}], False, ("PAGE",)).startswith("proxy.task")


def test_task_markers_come_from_a_file_or_the_environment_and_must_compile(tmp_path, monkeypatch):
    from memvault import settings as settings_module
    from memvault.errors import ConfigError

    config = tmp_path / "config.toml"
    config.write_text('[proxy]\ntask_markers = ["^Summarise this page", "^Translate:"]\n', encoding="utf-8")
    assert settings_module.load(config).proxy.task_markers == ["^Summarise this page", "^Translate:"]
    monkeypatch.setenv("MEMVAULT_PROXY_TASK_MARKERS", '["^Rewrite:"]')
    assert settings_module.load(config).proxy.task_markers == ["^Rewrite:"]
    monkeypatch.setenv("MEMVAULT_PROXY_TASK_MARKERS", "(unclosed")
    with pytest.raises(ConfigError, match=r"proxy.task_markers: '\(unclosed' is not a regular expression"):
        settings_module.load(config)
