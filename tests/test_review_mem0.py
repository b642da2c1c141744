"""Hostile review of the mem0 API: a mem0 2.x user switching in one line (`from memvault import Memory`)
calls it as mem0's own signatures allow, and configs for mem0's providers reach the right model."""

from __future__ import annotations

import asyncio
import inspect

import pytest

import memvault


def test_update_takes_mem0_2x_positional_order(tmp_path):
    """mem0 2.2: update(memory_id, text=None, metadata=None, expiration_date=_UNSET, data=None)."""
    from mem0.memory.main import Memory as Mem0Memory

    ours = list(inspect.signature(memvault.Memory.update).parameters)[:6]
    theirs = list(inspect.signature(Mem0Memory.update).parameters)
    assert ours == theirs

    with memvault.Memory(vault=tmp_path / "vault") as m:
        memory_id = m.add("I like tea", user_id="alice", infer=False)["results"][0]["id"]
        m.update(memory_id, "I like green tea", {"topic": "drinks"}, "2999-01-01")
        item = m.get(memory_id)
    assert (item["memory"], item["metadata"], item["expiration_date"]) == (
        "I like green tea", {"topic": "drinks"}, "2999-01-01")


def test_async_memory_from_config_is_a_plain_classmethod_as_in_mem0(tmp_path):
    """mem0's AsyncMemory.from_config is synchronous: `m = AsyncMemory.from_config(c)` then
    `await m.add(...)`. It returned a coroutine here, so the first `m.add` was an AttributeError."""
    config = {"vector_store": {"config": {"path": str(tmp_path / "vault")}}}

    async def as_mem0_code_does():
        m = memvault.AsyncMemory.from_config(config)
        try:
            added = await m.add("I like tea", user_id="alice", infer=False)
            return (await m.get(added["results"][0]["id"]))["memory"]
        finally:
            m.close()

    async def awaited():  # memvault's earlier form keeps working
        m = await memvault.AsyncMemory.from_config(config)
        m.close()
        return m.settings.vault.path

    assert asyncio.run(as_mem0_code_does()) == "I like tea"
    assert asyncio.run(awaited()) == str(tmp_path / "vault")


@pytest.mark.parametrize(("block", "model", "base"), [
    ({"provider": "lmstudio", "config": {"model": "qwen3-4b", "lmstudio_base_url": "http://127.0.0.1:9/v1"}},
     "lm_studio/qwen3-4b", "http://127.0.0.1:9/v1"),
    ({"provider": "vllm", "config": {"model": "Qwen/Qwen3-4B", "vllm_base_url": "http://127.0.0.1:9/v1"}},
     "hosted_vllm/Qwen/Qwen3-4B", "http://127.0.0.1:9/v1"),
    ({"provider": "vllm", "config": {"model": "qwen3", "vllm_base_url": "http://127.0.0.1:9/v1"}},
     "hosted_vllm/qwen3", "http://127.0.0.1:9/v1"),
    ({"provider": "together", "config": {"model": "mistralai/Mixtral-8x7B-Instruct-v0.1"}},
     "together_ai/mistralai/Mixtral-8x7B-Instruct-v0.1", ""),
    ({"provider": "openai", "config": {"model": "meta-llama/llama-3.1-8b-instruct",
                                       "openrouter_base_url": "https://openrouter.ai/api/v1"}},
     "openai/meta-llama/llama-3.1-8b-instruct", "https://openrouter.ai/api/v1"),
    ({"provider": "ollama", "config": {"model": "ollama/qwen3:4b"}}, "ollama/qwen3:4b", ""),
    ({"provider": "together", "config": {"model": "mixtral"}}, "together_ai/mixtral", ""),
    ({"provider": "aws_bedrock", "config": {"model": "claude-3"}}, "bedrock/claude-3", ""),
    ({"provider": "azure_openai", "config": {"model": "gpt-4o"}}, "azure/gpt-4o", ""),
    ({"provider": "openai_structured", "config": {"model": "gpt-4o"}}, "openai/gpt-4o", ""),
    ({"provider": "deepseek", "config": {"model": "deepseek-chat", "deepseek_base_url": "http://127.0.0.1:9"}},
     "deepseek/deepseek-chat", "http://127.0.0.1:9"),
    ({"provider": "xai", "config": {"model": "grok-3", "xai_base_url": "http://127.0.0.1:9/v1"}},
     "xai/grok-3", "http://127.0.0.1:9/v1"),
])
def test_mem0_llm_providers_become_the_model_litellm_knows(tmp_path, block, model, base):
    """mem0's provider names are not all litellm's ('lmstudio' is 'lm_studio', 'together' is
    'together_ai'...); a mem0 base URL key is the LLM's address. 'lmstudio/x' opened a vault whose
    every curated add failed ("LLM Provider NOT provided") and stored the text as given."""
    with memvault.Memory.from_config({"llm": block, "vector_store": {"config": {"path": str(tmp_path / "v")}}}) as m:
        assert (m.settings.llm.model, m.settings.llm.api_base) == (model, base)


def test_mem0_embedder_providers_become_the_model_litellm_knows(tmp_path):
    config = {"embedder": {"provider": "lmstudio", "config": {"model": "nomic-embed-text",
                                                              "lmstudio_base_url": "http://127.0.0.1:9/v1"}},
              "vector_store": {"config": {"path": str(tmp_path / "v")}}}
    with memvault.Memory.from_config(config) as m:
        assert m.settings.embedder.model == "litellm:lm_studio/nomic-embed-text"


def test_the_hosted_client_s_platform_calls_are_answered_not_passed_to_the_llm(tmp_path):
    """MemoryClient.batch_update / feedback... call paths memvault does not serve: the /v1/*
    pass-through sent them, memory texts and the client's key, on to llm.api_base."""
    import httpx
    from mem0 import MemoryClient

    from memvault.server.run import running
    from tests.support.server import server_settings
    from tests.support.upstream import Upstream, serving

    upstream = Upstream()
    with serving(upstream.app()) as root:
        settings = server_settings(tmp_path / "vault", api_base=root + "/v1")
        with running(settings) as url, httpx.Client(timeout=60) as http:
            client = MemoryClient(api_key="sk-client", host=url, client=http)
            memory_id = client.add("Alice grows tomatoes", user_id="alice", infer=False)["results"][0]["id"]
            calls = [lambda: client.batch_update([{"memory_id": memory_id, "text": "secret text"}]),
                     lambda: client.feedback(memory_id, "POSITIVE")]
            for call in calls:
                with pytest.raises(Exception):  # noqa: B017, PT011 - mem0's client raises its own error types
                    call()
            # users() is served from memvault's scopes (mem0_routes: entities), never passed on either.
            assert [(u["type"], u["name"]) for u in client.users()["results"]] == [("user", "alice")]
            answer = http.post(url + "/v1/summary/", json={"filters": {"user_id": "alice"}})
    assert upstream.requests == []
    assert answer.status_code == 501 and "mem0 Platform feature" in answer.json()["detail"]
