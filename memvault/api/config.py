"""A mem0-like config dict -> one memvault Settings object (and an optional extraction prompt).

Accepted shapes, freely mixed:
- memvault's own sections: `{"vault": {"path": ...}, "llm": {"model": ...}, "retrieval": {"top_k": 5}}`;
- mem0's provider blocks: `{"llm": {"provider": "ollama", "config": {"model": "qwen3:4b",
  "ollama_base_url": ...}}, "embedder": {"provider": "huggingface", "config": {"model": ...}},
  "vector_store": {"config": {"path": ...}}, "reranker": {"config": {"model": ...}},
  "custom_fact_extraction_prompt": "..."}`.
Unknown keys are refused (a typo must not silently fall back to a default); the few mem0 keys that
mean nothing here (the history database: history lives in git) are ignored.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from memvault import settings as settings_module
from memvault.errors import ConfigError
from memvault.settings import Settings

SECTIONS = ("vault", "embedder", "retrieval", "llm", "server")
PROMPT_KEYS = ("custom_fact_extraction_prompt", "custom_instructions")
IGNORED_TOP = ("version", "history_db_path")
ALIASES = {
    "llm": {"openai_base_url": "api_base", "ollama_base_url": "api_base", "base_url": "api_base",
            "lmstudio_base_url": "api_base", "max_tokens": None, "top_p": None},
    "embedder": {"embedding_dims": None, "ollama_base_url": None, "openai_base_url": None},
    "vector_store": {"path": "vault.path", "collection_name": None, "embedding_model_dims": None, "on_disk": None},
    "reranker": {"model": "retrieval.reranker", "top_k": None},
}
# mem0 embedder providers -> memvault embedder spec prefixes.
EMBEDDER_PREFIX = {"huggingface": "st:", "sentence_transformers": "st:", "openai": "litellm:",
                   "ollama": "litellm:ollama/"}


def build_settings(config: dict | None, vault: str | Path | None, base: Settings | None) -> tuple[Settings, str | None]:
    """The settings for a Memory: `base` (or defaults < config file < environment) with `config` and
    `vault` applied over it; and the custom extraction prompt the config carries, if any."""
    flags, prompt = flatten(config or {})
    if vault is not None:
        flags["vault.path"] = str(vault)
    if base is None:
        return settings_module.load(None, flags), prompt
    result = copy.deepcopy(base)
    for key, value in flags.items():
        result.set(key, value, "api config")
    if not result.vault.path:
        result.vault.path = str(settings_module.default_vault_path())
    return result, prompt


def flatten(config: dict) -> tuple[dict[str, Any], str | None]:
    """{"section.name": value} and the prompt, from a config dict of either shape."""
    if not isinstance(config, dict):
        raise ConfigError(f"config must be a dict, got {type(config).__name__}")
    flags: dict[str, Any] = {}
    prompt = None
    for section, block in config.items():
        if section in PROMPT_KEYS:
            prompt = str(block) if block else None
        elif section in IGNORED_TOP:
            continue
        elif section in (*SECTIONS, "vector_store", "reranker"):
            flags.update(section_flags(section, block))
        else:
            raise ConfigError(f"unknown config key {section!r}")
    return flags, prompt


def section_flags(section: str, block: Any) -> dict[str, Any]:
    if not isinstance(block, dict):
        raise ConfigError(f"config {section!r} must be a dict")
    provider = block.get("provider")
    values = {k: v for k, v in block.items() if k not in ("provider", "config")}
    nested = block.get("config") or {}
    if not isinstance(nested, dict):
        raise ConfigError(f"config {section}.config must be a dict")
    values.update(nested)
    flags: dict[str, Any] = {}
    for name, value in values.items():
        target = ALIASES.get(section, {}).get(name, name if section in SECTIONS else "")
        if target is None:
            continue  # a mem0 knob with no memvault meaning
        if not target:
            raise ConfigError(f"unknown config key {section}.{name}")
        flags[target if "." in target else f"{section}.{target}"] = value
    model = flags.get(f"{section}.model")
    if provider and model and section == "llm" and "/" not in str(model) and provider != "litellm":
        flags["llm.model"] = f"{provider}/{model}"  # litellm's provider/model form
    if provider and model and section == "embedder":
        flags["embedder.model"] = EMBEDDER_PREFIX.get(provider, f"litellm:{provider}/") + str(model)
    return flags
