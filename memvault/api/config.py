"""A mem0-like config dict -> one memvault Settings object (and an optional extraction prompt).

Accepted shapes, freely mixed:
- memvault's own sections: `{"vault": {"path": ...}, "llm": {"model": ...}, "retrieval": {"top_k": 5}}`;
- mem0's provider blocks: `{"llm": {"provider": "ollama", "config": {"model": "qwen3:4b",
  "ollama_base_url": ..., "max_tokens": 200}}, "embedder": {"provider": "ollama", "config": {"model":
  ..., "ollama_base_url": ...}}, "vector_store": {"config": {"path": ...}}, "reranker": {"config":
  {"model": ...}}, "custom_fact_extraction_prompt": "..."}`.
A mem0 user's existing config opens a vault: every key is mapped onto a setting, or, when it is a
mem0 knob memvault has no use for (a vector store's host or collection, `history_db_path`,
`graph_store`, `enable_vision`...), ignored with a warning (ConfigWarning, also logged) that says why.
Only what is neither memvault's nor mem0's (a typo in a section name, an unknown key in memvault's
own sections) is refused: it must never fall silently back to a default.
"""

from __future__ import annotations

import copy
import logging
import warnings
from pathlib import Path
from typing import Any

from memvault import settings as settings_module
from memvault.errors import ConfigError
from memvault.settings import Settings

SECTIONS = ("vault", "embedder", "retrieval", "llm", "server")
PROVIDER_BLOCKS = ("llm", "embedder", "vector_store", "reranker", "graph_store")
PROMPT_KEYS = ("custom_fact_extraction_prompt", "custom_instructions")
# The response shapes memvault returns are mem0's v1.1 ones (2.x kept them).
API_VERSIONS = ("v1.0", "v1.1")
# mem0's graph memory switches: the graph is derived in memvault's own index, so any graph_store
# (neo4j, memgraph, kuzu...) just turns it on; enable_graph may turn it off.
GRAPH_KEYS = ("enable_graph", "graph_store")
BASE_URLS = {name: "api_base" for name in ("openai_base_url", "ollama_base_url", "lmstudio_base_url", "vllm_base_url",
                                           "deepseek_base_url", "xai_base_url", "anthropic_base_url",
                                           "minimax_base_url", "openrouter_base_url", "base_url")}
# mem0 provider names that litellm spells otherwise (the others, openai, ollama, groq, anthropic,
# gemini, deepseek, xai..., are litellm's own prefixes).
LITELLM_PROVIDERS = {"together": "together_ai", "aws_bedrock": "bedrock", "azure_openai": "azure",
                     "azure_openai_structured": "azure", "openai_structured": "openai", "lmstudio": "lm_studio",
                     "vllm": "hosted_vllm", "vertexai": "vertex_ai"}
# mem0 names -> memvault settings ("name" within the block's own section, or "section.name").
ALIASES = {
    "llm": BASE_URLS,
    "embedder": BASE_URLS,
    "vector_store": {"path": "vault.path"},
    "reranker": {"model": "retrieval.reranker"},
}
# mem0 keys memvault has no use for, and why they are ignored (a warning names the reason).
SAME_DIMS = "memvault takes the vector size from the embedding model"
STORE = "memvault's index is a SQLite file inside the vault (vector_store.config.path)"
IGNORED = {
    "history_db_path": "history lives in the vault's git log",
    "custom_update_memory_prompt": "memvault's reconciliation prompt numbers memories its own way",
    "llm.top_p": "memvault does not set top_p: use llm.temperature",
    "llm.top_k": "memvault does not set top_k for the LLM",
    "llm.enable_vision": "memvault stores text: image parts of messages are not read",
    "llm.vision_details": "memvault stores text: image parts of messages are not read",
    "embedder.embedding_dims": SAME_DIMS,
    "embedder.api_key": "memvault's litellm embedder reads the provider's environment variable (OPENAI_API_KEY...)",
    "vector_store.provider": STORE,
    "vector_store.embedding_model_dims": SAME_DIMS,
    "vector_store.collection_name": "one vault holds one collection: give each collection its own vault "
                                    "(vector_store.config.path)",
    "vector_store.on_disk": "the index is always on disk, in the vault",
    "reranker.top_k": "the reranker orders every candidate: set the number of results with top_k",
}
# mem0 embedder providers -> memvault embedder spec prefixes.
EMBEDDER_PREFIX = {"huggingface": "st:", "sentence_transformers": "st:", "openai": "litellm:",
                   "ollama": "litellm:ollama/"}
# mem0 reranker providers that are a local cross-encoder, which is what memvault runs.
LOCAL_RERANKERS = ("sentence_transformer", "huggingface")
logger = logging.getLogger("memvault.api")


class ConfigWarning(UserWarning):
    """A mem0 config key memvault ignores, with the reason."""


def ignore(key: str, reason: str | None = None) -> None:
    message = f"config key {key!r} is ignored: {reason or IGNORED.get(key) or 'memvault does not use it'}"
    logger.warning(message)
    warnings.warn(message, ConfigWarning, stacklevel=4)


def build_settings(config: dict | None, vault: str | Path | None, base: Settings | None) -> tuple[Settings, str | None]:
    """The settings for a Memory: `base` (or defaults < config file < environment) with `config` and
    `vault` applied over it; and the custom extraction prompt the config carries, if any."""
    flags, prompt = flatten(config or {})
    if vault is not None:
        flags["vault.path"] = str(vault)
    if base is None:
        result = settings_module.load(None, flags)
    else:
        result = copy.deepcopy(base)
        for key, value in flags.items():
            result.set(key, value, "api config")
        if not result.vault.path:
            result.vault.path = str(settings_module.default_vault_path())
    if result.embedder.api_base and not result.embedder.model.startswith("litellm:"):
        raise ConfigError(f"an embedder base URL needs a server's model (provider openai or ollama, or "
                          f"litellm:<model>), not {result.embedder.model!r}")
    return result, prompt


def flatten(config: dict) -> tuple[dict[str, Any], str | None]:
    """{"section.name": value} and the prompt, from a config dict of either shape."""
    if not isinstance(config, dict):
        raise ConfigError(f"config must be a dict, got {type(config).__name__}")
    flags: dict[str, Any] = {}
    prompt = None
    for section, block in config.items():
        if section in PROMPT_KEYS:
            prompt = str(block) if block else prompt
        elif section in GRAPH_KEYS:
            flags["graph.enabled"] = graph_flag(section, block)
            if section == "graph_store" and block:
                ignore("graph_store", "memvault derives its graph from the facts' triples in its own index "
                       "(no graph database is reached); the graph is on")
        elif section == "version":
            if block not in API_VERSIONS:
                ignore("version", f"memvault answers in mem0's v1.1 shapes (as mem0 2.x does), not {block!r}")
        elif section in IGNORED:
            if block:
                ignore(section)
        elif section in (*SECTIONS, *PROVIDER_BLOCKS):
            if block is not None:
                flags.update(section_flags(section, block))
        else:
            raise ConfigError(f"unknown config key {section!r}")
    return flags, prompt


def section_flags(section: str, block: Any) -> dict[str, Any]:
    if not isinstance(block, dict):
        raise ConfigError(f"config {section!r} must be a dict")
    if "provider" in block and section not in PROVIDER_BLOCKS:
        raise ConfigError(f"unknown config key {section + '.provider'!r}")
    provider = block.get("provider")
    values = {k: v for k, v in block.items() if k not in ("provider", "config")}
    nested = block.get("config") or {}
    if not isinstance(nested, dict):
        raise ConfigError(f"config {section}.config must be a dict")
    values.update(nested)
    # mem0's shape ({"provider", "config"}, or a block memvault has no section for): its keys are
    # mem0's, so one memvault does not use is ignored with a warning; in memvault's own shape a key
    # that is no setting is a typo, refused.
    mem0_block = "provider" in block or "config" in block or section not in SECTIONS
    known = setting_names(section)
    flags: dict[str, Any] = {}
    for name, value in values.items():
        key = f"{section}.{name}"
        target = ALIASES.get(section, {}).get(name) or (name if name in known else None)
        if target is None or key in IGNORED:
            if not mem0_block and key not in IGNORED:
                raise ConfigError(f"unknown config key {key!r}")
            if value not in (None, "", False, {}, []):
                ignore(key, IGNORED.get(key) or (STORE if section == "vector_store" else None))
            continue
        flags[target if "." in target else f"{section}.{target}"] = value
    if provider:
        flags.update(provider_flags(section, str(provider), flags))
    return flags


def provider_flags(section: str, provider: str, flags: dict[str, Any]) -> dict[str, Any]:
    """What a mem0 `provider` means here: a prefix of the model name, or nothing to change (the
    vector store is memvault's own index; a local cross-encoder is what memvault runs)."""
    model = flags.get(f"{section}.model")
    if section in ("llm", "embedder") and not model:
        raise ConfigError(f"config {section}.provider {provider!r} needs a model ({section}.config.model)")
    prefix = LITELLM_PROVIDERS.get(provider, provider)
    if section == "llm":
        # A model may hold a '/' of its own (together's 'meta-llama/Llama-3-70b'): only the provider's
        # prefix, already written, is not added again.
        written = provider == "litellm" or str(model).startswith(f"{prefix}/")
        return {} if written else {"llm.model": f"{prefix}/{model}"}
    if section == "embedder":
        return {"embedder.model": EMBEDDER_PREFIX.get(provider, f"litellm:{prefix}/") + str(model)}
    if section == "reranker" and provider not in LOCAL_RERANKERS:
        local = ", ".join(LOCAL_RERANKERS)
        ignore(f"reranker.provider {provider!r}", f"memvault runs a local cross-encoder ({local}) from a folder "
               "or a hub name; without one, search uses its own relevance")
        return {"retrieval.reranker": ""}
    return {}


def setting_names(section: str) -> set[str]:
    """The settings of one of memvault's sections (none for mem0-only blocks)."""
    import dataclasses

    if section not in SECTIONS:
        return set()
    return {f.name for f in dataclasses.fields(getattr(Settings(), section))}


def graph_flag(key: str, value: Any) -> bool:
    if key == "enable_graph":
        if not isinstance(value, bool):
            raise ConfigError(f"config enable_graph must be true or false, got {value!r}")
        return value
    if value is not None and not isinstance(value, dict):
        raise ConfigError("config graph_store must be a dict (memvault keeps the graph in its own index)")
    return value is not None
