"""Real mem0 configs open a vault: mapped where memvault has the setting, ignored with a warning
naming the reason where it has no use for it, refused only when neither memvault nor mem0 knows the key."""

from __future__ import annotations

import warnings

import pytest

import memvault
from memvault.api.config import ConfigWarning

# mem0's own OSS server config (server/main.py), with its environment's defaults filled in.
MEM0_SERVER_CONFIG = {
    "version": "v1.1",
    "vector_store": {"provider": "pgvector", "config": {
        "host": "postgres", "port": 5432, "dbname": "postgres", "user": "postgres", "password": "postgres",
        "collection_name": "memories"}},
    "graph_store": {"provider": "neo4j", "config": {"url": "bolt://neo4j:7687", "username": "neo4j",
                                                   "password": "mem0graph"}},
    "llm": {"provider": "openai", "config": {"api_key": "sk-x", "openai_base_url": "http://127.0.0.1:9/v1",
                                             "temperature": 0.2, "model": "gpt-4o-mini"}},
    "embedder": {"provider": "openai", "config": {"api_key": "sk-x", "openai_base_url": "http://127.0.0.1:9/v1",
                                                  "model": "text-embedding-3-small"}},
    "history_db_path": "/app/history/history.db",
}


def test_mem0_s_own_server_config_opens_a_vault_with_warnings_for_what_is_ignored(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = memvault.Memory.from_config({**MEM0_SERVER_CONFIG, "vault": {"path": str(tmp_path / "vault")}})
    try:
        s = m.settings
        assert (s.llm.model, s.llm.api_key, s.llm.api_base, s.llm.temperature) == (
            "openai/gpt-4o-mini", "sk-x", "http://127.0.0.1:9/v1", 0.2)
        assert (s.embedder.model, s.embedder.api_base) == ("litellm:text-embedding-3-small", "http://127.0.0.1:9/v1")
        assert m.vault_path == tmp_path / "vault"
    finally:
        m.close()
    ignored = sorted(str(w.message).split("'")[1] for w in caught if issubclass(w.category, ConfigWarning))
    assert ignored == sorted([
        "vector_store.host", "vector_store.port", "vector_store.dbname", "vector_store.user", "vector_store.password",
        "vector_store.collection_name", "graph_store", "embedder.api_key", "history_db_path"])


def test_a_local_mem0_config_maps_its_path_reranker_and_prompts(tmp_path):
    config = {
        "vector_store": {"provider": "qdrant", "config": {"path": str(tmp_path / "store"), "on_disk": True,
                                                          "embedding_model_dims": 384}},
        "llm": {"provider": "ollama", "config": {"model": "qwen3:4b", "ollama_base_url": "http://127.0.0.1:11434",
                                                 "enable_vision": True, "max_tokens": 300}},
        "reranker": {"provider": "huggingface", "config": {"model": str(tmp_path / "cross-encoder")}},
        "custom_instructions": "Only food preferences.",
        "custom_update_memory_prompt": "Decide ADD/UPDATE.",
    }
    with pytest.warns(ConfigWarning) as caught:
        m = memvault.Memory.from_config(config)
    try:
        s = m.settings
        assert (str(m.vault_path), s.llm.model, s.llm.api_base, s.llm.max_tokens, s.retrieval.reranker) == (
            str(tmp_path / "store"), "ollama/qwen3:4b", "http://127.0.0.1:11434", 300, str(tmp_path / "cross-encoder"))
        assert m._prompt == "Only food preferences."
    finally:
        m.close()
    assert sorted(str(w.message).split("'")[1] for w in caught) == [
        "custom_update_memory_prompt", "llm.enable_vision", "vector_store.embedding_model_dims",
        "vector_store.on_disk"]


def test_async_memory_from_config_takes_the_same_configs(tmp_path):
    import asyncio

    async def open_and_close():
        m = await memvault.AsyncMemory.from_config({"vector_store": {"provider": "chroma", "config": {
            "path": str(tmp_path / "chroma"), "collection_name": "x"}}})
        m.close()
        return m.settings.vault.path

    with pytest.warns(ConfigWarning, match="collection_name"):
        assert asyncio.run(open_and_close()) == str(tmp_path / "chroma")
