"""The real local LLM server used by end-to-end tests: HTTP, streaming and JSON schemas, through openai and litellm.

These assert on plumbing only (status, non-empty text, chunk counts, valid JSON): the model is tiny.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.request
from pathlib import Path

import pytest

from tests.support.local_llm import MODEL_NAME, LocalLLMUnavailable, local_llm_fixture, local_llm_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

local_llm = local_llm_fixture()

MESSAGES = [{"role": "user", "content": "Is water wet? Answer in one short sentence."}]
# A key the model would never write unprompted: seeing it proves the server constrains decoding.
# Bounded, because an unbounded integer lets the tiny model write digits until max_tokens.
ZEBRA_SCHEMA = {
    "type": "object",
    "properties": {"zebra_count": {"type": "integer", "minimum": 0, "maximum": 99}},
    "required": ["zebra_count"],
    "additionalProperties": False,
}
ZEBRA_FORMAT = {"type": "json_schema", "json_schema": {"name": "zebras", "schema": ZEBRA_SCHEMA, "strict": True}}


def _litellm():
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price list
    import litellm

    return litellm


def _llm_children() -> list[int]:
    """Pids of this process's live children that run the local LLM server."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat[1]) == os.getpid() and stat[0] != "Z" and b"local_llm.py" in cmdline:
            found.append(int(proc.name))
    return found


def test_server_is_healthy_and_serves_the_model(local_llm):
    root = local_llm.removesuffix("/v1")
    with urllib.request.urlopen(root + "/health", timeout=10) as reply:
        assert reply.status == 200
    with urllib.request.urlopen(local_llm + "/models", timeout=10) as reply:
        ids = [m["id"] for m in json.load(reply)["data"]]
    assert MODEL_NAME in ids
    assert root.startswith("http://127.0.0.1:")


def test_openai_client_completion_and_stream(local_llm):
    from openai import OpenAI

    client = OpenAI(base_url=local_llm, api_key="none", timeout=60, max_retries=0)
    reply = client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=8)
    assert reply.choices[0].message.content.strip()
    assert 0 < reply.usage.completion_tokens <= 8

    stream = client.chat.completions.create(model=MODEL_NAME, messages=MESSAGES, max_tokens=8, stream=True)
    pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert len(pieces) > 1
    # Sampling is greedy by default, so streaming and not streaming say the same thing.
    assert "".join(pieces) == reply.choices[0].message.content


def test_json_schema_response_format_constrains_the_output(local_llm):
    from openai import OpenAI

    client = OpenAI(base_url=local_llm, api_key="none", timeout=60, max_retries=0)
    # The grammar allows whitespace after the closing brace and the model may pad with it until
    # max_tokens (finish_reason "length"): the content is still complete JSON, so only parse it.
    reply = client.chat.completions.create(
        model=MODEL_NAME, messages=MESSAGES, max_tokens=48, response_format=ZEBRA_FORMAT
    )
    value = json.loads(reply.choices[0].message.content)
    assert set(value) == {"zebra_count"} and isinstance(value["zebra_count"], int)


@pytest.mark.timeout(240)  # the first `import litellm` alone takes 20 s of CPU on a busy machine
def test_litellm_completion_stream_and_json_schema(local_llm):
    litellm = _litellm()
    common = {"model": f"openai/{MODEL_NAME}", "api_base": local_llm, "api_key": "none", "timeout": 60}

    reply = litellm.completion(messages=MESSAGES, max_tokens=8, **common)
    assert reply.choices[0].message.content.strip()

    chunks = list(litellm.completion(messages=MESSAGES, max_tokens=8, stream=True, **common))
    pieces = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(pieces) > 1
    assert "".join(pieces) == reply.choices[0].message.content

    shaped = litellm.completion(messages=MESSAGES, max_tokens=48, response_format=ZEBRA_FORMAT, **common)
    assert isinstance(json.loads(shaped.choices[0].message.content)["zebra_count"], int)


@pytest.mark.timeout(240)
def test_litellm_acompletion_and_async_stream(local_llm):
    litellm = _litellm()
    common = {"model": f"openai/{MODEL_NAME}", "api_base": local_llm, "api_key": "none", "timeout": 60}

    async def ask():
        reply = await litellm.acompletion(messages=MESSAGES, max_tokens=8, **common)
        stream = await litellm.acompletion(messages=MESSAGES, max_tokens=8, stream=True, **common)
        pieces = [c.choices[0].delta.content async for c in stream if c.choices and c.choices[0].delta.content]
        return reply, pieces

    reply, pieces = asyncio.run(ask())
    assert reply.choices[0].message.content.strip()
    assert len(pieces) > 1


def test_a_broken_model_fails_with_the_servers_log_and_leaves_no_process(tmp_path):
    before = set(_llm_children())
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(LocalLLMUnavailable, match="did not start|exited"):
        with local_llm_server(model=broken, timeout=60):
            pass
    assert set(_llm_children()) - before == set()


def test_leaving_the_block_stops_the_server():
    before = set(_llm_children())  # the shared session server may be running: leave it alone
    with local_llm_server(n_ctx=256) as base_url:
        assert set(_llm_children()) - before
        with urllib.request.urlopen(base_url.removesuffix("/v1") + "/health", timeout=10) as reply:
            assert reply.status == 200
    assert set(_llm_children()) - before == set()
    with pytest.raises(OSError):
        urllib.request.urlopen(base_url.removesuffix("/v1") + "/health", timeout=5)
