"""A model that loops is stopped, and memory keeps only what it said before the loop (issue 22, part 3).

The upstream is a real HTTP server on loopback that streams one good line and then one line for ever
(tests/support/upstream.py LoopingUpstream); the proxy is `python -m memvault serve`, driven by the
real `openai` client; chat is `memvault chat -m`, its real LLM client reaching the same fake."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from memvault.core import Memvault
from memvault.settings import Settings
from tests.support.cli import Cli
from tests.support.server import isolated_env, memvault_serve
from tests.support.upstream import LoopingUpstream, served

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
GOOD, LOOP = LoopingUpstream.GOOD, LoopingUpstream.LOOP
QUESTION = "What is my sister called?"


@pytest.fixture(scope="module")
def looping():
    with served(LoopingUpstream()) as fake:
        yield fake


@pytest.fixture(scope="module")
def proxy(looping, tmp_path_factory):
    base = tmp_path_factory.mktemp("looping-proxy")
    vault = base / "vault"
    with isolated_env(base / "home"), memvault_serve(vault, {"MEMVAULT_LLM_API_BASE": looping.root + "/v1"}) as url:
        yield SimpleNamespace(url=url, vault=vault)


def openai_client(url: str):
    import openai

    return openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0, timeout=120)


def stored_turns(vault: Path, conversation: str, timeout: float = 60.0) -> dict[str, list[str]]:
    """The conversation's turns as another process reads them, once both are on disk."""
    settings = Settings()
    settings.vault.path = str(vault)
    deadline = time.monotonic() + timeout
    while True:
        core = Memvault.open(settings)
        try:
            entries = [entry for _, entry in core.list(conversation=conversation).entries]
        finally:
            core.close()
        turns = {role: [e.text for e in entries if e.role == role] for role in ("user", "assistant")}
        if turns["user"] or time.monotonic() > deadline:
            return turns
        time.sleep(0.2)


def test_a_looping_stream_is_stopped_its_upstream_closed_and_only_the_good_line_stored(proxy, looping):
    stream = openai_client(proxy.url).chat.completions.create(
        model="fake", messages=[{"role": "user", "content": QUESTION}], stream=True,
        extra_body={"memory_id": "loop-stream"})
    text, finishes = "", []
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finishes.append(chunk.choices[0].finish_reason)

    assert text.startswith(GOOD) and finishes[-1] == "length"
    assert 1 <= text.count(LOOP) < 10  # stopped within a few rounds of the loop, not 20,000 lines
    assert looping.closed.wait(10) and looping.streamed < 500  # the upstream request was closed under it
    assert looping.requests[-1]["max_tokens"] == 1024  # the client gave none: llm.max_tokens
    assert stored_turns(proxy.vault, "loop-stream") == {"user": [QUESTION], "assistant": [GOOD]}


def test_a_looping_answer_not_streamed_is_cut_for_the_client_and_for_memory(proxy, looping):
    reply = openai_client(proxy.url).chat.completions.create(
        model="fake", messages=[{"role": "user", "content": QUESTION}], max_tokens=5000,
        extra_body={"memory_id": "loop-whole"})

    content = reply.choices[0].message.content
    assert content.startswith(GOOD) and content.count(LOOP) == 1  # the loop's first round, not 686
    assert reply.choices[0].finish_reason == "length"
    assert "repeated" in reply.model_extra["memory_cut"]
    assert looping.requests[-1]["max_tokens"] == 5000  # the client's own cap is kept
    assert stored_turns(proxy.vault, "loop-whole") == {"user": [QUESTION], "assistant": [GOOD]}


def test_chat_stops_a_looping_answer_and_remembers_only_what_came_before(looping, tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    env = {"MEMVAULT_LLM_MODEL": "openai/fake", "MEMVAULT_LLM_API_BASE": looping.root + "/v1",
           "MEMVAULT_LLM_MAX_RETRIES": "0"}
    started = time.monotonic()
    result = cli.ok("chat", "-m", QUESTION, "--conversation", "loop-chat", env=env)

    assert time.monotonic() - started < 60  # not 20,000 lines at 2 ms each
    assert result.stdout.startswith(GOOD) and result.stdout.count(LOOP) < 10
    assert "answer stopped" in result.stderr
    streamed = next(r for r in looping.requests if r.get("stream"))
    assert streamed["max_tokens"] == 1024
    assert looping.closed.wait(10) and looping.streamed < 500
    assert stored_turns(tmp_path / "vault", "loop-chat", timeout=0) == {"user": [QUESTION], "assistant": [GOOD]}


def test_the_real_local_model_looping_is_stopped_and_its_loop_never_stored(local_llm, tmp_path):
    """SmolLM2-135M at temperature 0 loops on this question (a sentence again and again, checked
    first without memvault); through the proxy the loop is stopped and memory keeps the text before it."""
    import json
    import re
    import urllib.request
    from collections import Counter

    from memvault.converse.degenerate import good_part
    from memvault.server.run import running
    from tests.support.local_llm import MODEL_NAME
    from tests.support.server import server_settings

    ask = [{"role": "user", "content": "Tell me about Porto."}]
    direct = urllib.request.Request(local_llm + "/chat/completions", json.dumps(
        {"model": MODEL_NAME, "messages": ask, "max_tokens": 300, "temperature": 0}).encode(),
        {"Content-Type": "application/json"})
    with urllib.request.urlopen(direct, timeout=300) as reply:
        plain = json.loads(reply.read())["choices"][0]["message"]["content"]
    sentences = Counter(sentence.strip() for sentence in re.split(r"(?<=[.!?])\s", plain) if sentence.strip())
    if max(sentences.values()) < 3:  # judged here without memvault's watcher, which is under test
        pytest.skip("this build of the model did not loop on the question")

    settings = server_settings(tmp_path / "vault", local_llm)
    with isolated_env(tmp_path / "home"), running(settings) as url:
        stream = openai_client(url).chat.completions.create(
            model=MODEL_NAME, messages=ask, stream=True, max_tokens=300, temperature=0,
            extra_body={"memory_id": "porto", "memory_top_k": 0})
        chunks = [chunk for chunk in stream if chunk.choices]
        shown = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
        stored = stored_turns(tmp_path / "vault", "porto")["assistant"]

    assert chunks[-1].choices[0].finish_reason == "length" and len(shown) < len(plain)
    assert len(stored) == 1 and shown.startswith(stored[0]) and good_part(stored[0]) == (stored[0], None)


def test_the_real_local_model_s_extraction_stops_at_the_facts_it_may_give():
    """SmolLM2 asked for the facts of a greeting, on a fresh server (nothing of the prompt cached yet),
    writes object after object until max_tokens: 6 of them in 300 tokens without the bound (and 2
    once the prompt is cached: the cache's numerics differ). The bounded schema's grammar, which the
    server enforces, stops it at MAX_DEFAULT_FACTS objects."""
    import dataclasses

    from memvault.curate import prompts
    from memvault.curate.extract import extract_fact_records
    from memvault.curate.llm import LLMClient
    from tests.support.local_llm import MODEL_NAME, local_llm_server

    answers = []
    with local_llm_server() as url:
        llm = LLMClient(dataclasses.replace(Settings().llm, model=f"openai/{MODEL_NAME}", api_base=url,
                                            api_key="none", max_tokens=300, temperature=0.0))
        recording = SimpleNamespace(complete=lambda messages, json_schema=None: answers.append(
            llm.complete(messages, json_schema)) or answers[-1])
        extract_fact_records(recording, [{"role": "user", "content": "Hey Mel! Good to see you! How have you been?"}])
    assert 1 <= answers[0].count('"text"') <= prompts.MAX_DEFAULT_FACTS, answers[0]
