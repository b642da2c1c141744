"""A mem0 config dict: every key reaches the setting it names, or is refused with the reason.

The values that used to vanish (`llm.max_tokens`, an embedder's base URL) are followed to the wire:
a recording OpenAI-shaped server on loopback shows what the LLM and the embedding model were sent.
"""

import hashlib
import threading

import pytest

import memvault
from memvault.api.config import ConfigWarning, build_settings
from memvault.errors import ConfigError
from tests.support.upstream import Upstream, serving

DIMS = 8


class EmbeddingServer:
    """/v1/embeddings answering a hashed bag of words per text; records each request body."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.lock = threading.Lock()

    def app(self):
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        async def embeddings(request):
            body = await request.json()
            with self.lock:
                self.requests.append(body)
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = [{"object": "embedding", "index": i, "embedding": vector(text)} for i, text in enumerate(texts)]
            return JSONResponse({"object": "list", "data": data, "model": body["model"],
                                 "usage": {"prompt_tokens": 1, "total_tokens": 1}})

        return Starlette(routes=[Route("/v1/embeddings", embeddings, methods=["POST"])])


def vector(text: str) -> list[float]:
    out = [0.0] * DIMS
    for word in text.lower().split():
        out[int(hashlib.md5(word.encode()).hexdigest(), 16) % DIMS] += 1.0
    norm = sum(x * x for x in out) ** 0.5 or 1.0
    return [x / norm for x in out]


def test_llm_max_tokens_reaches_every_curation_request(tmp_path):
    upstream = Upstream()
    with serving(upstream.app()) as root:
        config = {"llm": {"provider": "openai", "config": {"model": "gpt-4o-mini", "openai_base_url": root + "/v1",
                                                           "api_key": "sk-test", "max_tokens": 200}}}
        memory = memvault.Memory(config, vault=tmp_path / "vault")
        try:
            assert memory.settings.llm.max_tokens == 200
            memory.add("I moved to Lisbon last month", user_id="alice")
        finally:
            memory.close()
    sent = upstream.chat_requests()
    assert sent and {request["max_tokens"] for request in sent} == {200}


def test_an_embedder_base_url_is_where_texts_are_embedded(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server = EmbeddingServer()
    with serving(server.app()) as root:
        config = {"embedder": {"provider": "openai", "config": {"model": "text-embedding-3-small",
                                                                "openai_base_url": root + "/v1"}}}
        memory = memvault.Memory(config, vault=tmp_path / "vault")
        try:
            assert (memory.settings.embedder.model, memory.settings.embedder.api_base) == (
                "litellm:text-embedding-3-small", root + "/v1")
            memory.add("Alice keeps bees", user_id="alice", infer=False)
            [hit] = memory.search("who keeps bees", user_id="alice")["results"]
        finally:
            memory.close()
    assert hit["memory"] == "Alice keeps bees"
    embedded = [text for request in server.requests for text in request["input"]]
    assert "Alice keeps bees" in embedded and "who keeps bees" in embedded


def test_ollama_base_urls_map_for_the_llm_and_the_embedder(tmp_path):
    settings, _ = build_settings({
        "llm": {"provider": "ollama", "config": {"model": "qwen3:4b", "ollama_base_url": "http://127.0.0.1:11434"}},
        "embedder": {"provider": "ollama", "config": {"model": "nomic-embed-text",
                                                      "ollama_base_url": "http://127.0.0.1:11435"}},
    }, tmp_path, None)
    assert (settings.llm.model, settings.llm.api_base) == ("ollama/qwen3:4b", "http://127.0.0.1:11434")
    assert (settings.embedder.model, settings.embedder.api_base) == (
        "litellm:ollama/nomic-embed-text", "http://127.0.0.1:11435")


@pytest.mark.parametrize("config, message", [
    ({"llm": {"provider": "ollama"}}, "llm.provider 'ollama' needs a model"),
    ({"embedder": {"provider": "huggingface", "config": {"model": "x", "base_url": "http://127.0.0.1:1"}}},
     "an embedder base URL needs a server's model"),
    ({"retrieval": {"provider": "x"}}, "unknown config key 'retrieval.provider'"),
    ({"retrieval": {"top_kk": 3}}, "unknown config key 'retrieval.top_kk'"),
    ({"vectorstore": {}}, "unknown config key 'vectorstore'"),
])
def test_a_key_neither_memvault_nor_mem0_knows_is_refused(tmp_path, config, message):
    with pytest.raises(ConfigError, match=message):
        build_settings(config, tmp_path, None)
    with pytest.raises(memvault.ConfigurationError, match=message):
        memvault.Memory(config, vault=tmp_path / "z")


@pytest.mark.parametrize("config, message", [
    ({"llm": {"provider": "openai", "config": {"model": "gpt-4o-mini", "top_p": 0.1}}}, "'llm.top_p' is ignored"),
    ({"embedder": {"provider": "ollama", "config": {"model": "nomic-embed-text", "embedding_dims": 768}}},
     "'embedder.embedding_dims' is ignored: memvault takes the vector size from the embedding model"),
    ({"vector_store": {"provider": "qdrant", "config": {"collection_name": "work"}}},
     "'vector_store.collection_name' is ignored: one vault holds one collection"),
    ({"vector_store": {"config": {"embedding_model_dims": 384}}}, "'vector_store.embedding_model_dims' is ignored"),
    ({"vector_store": {"config": {"host": "localhost"}}}, "'vector_store.host' is ignored: memvault's index"),
    ({"reranker": {"provider": "cohere", "config": {"model": "rerank-english-v3.0"}}}, "memvault runs a local"),
    ({"reranker": {"config": {"model": "ms-marco", "top_k": 3}}}, "'reranker.top_k' is ignored"),
    ({"history_db_path": "/tmp/history.db"}, "history lives in the vault's git log"),
    ({"version": "v2"}, "memvault answers in mem0's v1.1 shapes"),
    ({"graph_store": {"provider": "neo4j", "config": {"url": "bolt://x"}}}, "'graph_store' is ignored"),
])
def test_a_mem0_key_memvault_has_no_use_for_is_ignored_with_the_reason(tmp_path, config, message):
    with pytest.warns(ConfigWarning, match=message):
        build_settings(config, tmp_path, None)
    with pytest.warns(ConfigWarning, match=message):
        memvault.Memory(config, vault=tmp_path / "z").close()


def test_every_key_of_a_mapped_config_arrives(tmp_path):
    settings, prompt = build_settings({
        "version": "v1.1",
        "llm": {"provider": "openai", "config": {"model": "gpt-4o-mini", "api_key": "sk-x", "temperature": 0.3,
                                                 "max_tokens": 200, "openai_base_url": "http://127.0.0.1:9/v1"}},
        "vector_store": {"provider": "qdrant", "config": {"path": str(tmp_path / "v")}},
        "reranker": {"provider": "sentence_transformer", "config": {"model": str(tmp_path / "ce")}},
        "retrieval": {"score_threshold": 0.35},
        "custom_fact_extraction_prompt": "Only food.",
    }, None, None)
    assert (settings.llm.model, settings.llm.api_key, settings.llm.temperature, settings.llm.max_tokens,
            settings.llm.api_base) == ("openai/gpt-4o-mini", "sk-x", 0.3, 200, "http://127.0.0.1:9/v1")
    assert (settings.vault.path, settings.retrieval.reranker, settings.retrieval.score_threshold, prompt) == (
        str(tmp_path / "v"), str(tmp_path / "ce"), 0.35, "Only food.")
