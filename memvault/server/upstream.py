"""The upstream LLM as the server sees it: litellm's model names, and the LLM that curates turns."""

from __future__ import annotations

import logging

from memvault.settings import LLMSettings

log = logging.getLogger("memvault.server")


def litellm_model(model: str, api_base: str) -> str:
    """The model string for litellm: a name litellm cannot place is an OpenAI-compatible model at
    `api_base` (what OpenAI clients of a local server send, e.g. "smollm2")."""
    from memvault.curate.llm import import_litellm

    if not api_base or model.startswith("openai/"):
        return model
    try:
        import_litellm().get_llm_provider(model)
        return model
    except Exception:  # noqa: BLE001 - litellm's "LLM Provider NOT provided"
        return f"openai/{model}"


def curator(llm: LLMSettings, api_key: str | None):
    """The LLM that curates the turns: the configured llm.model (no configured model: turns are
    stored, not curated; storing the message again as a fact would only duplicate the turn)."""
    import dataclasses

    from memvault.curate.llm import LLMClient

    if not llm.model:
        return None
    return LLMClient(dataclasses.replace(llm, model=litellm_model(llm.model, llm.api_base),
                                         api_key=llm.api_key or api_key or ""))


def warm_litellm() -> None:
    """Import litellm (seconds) ahead of the first request that needs it."""
    from memvault.curate.llm import import_litellm

    try:
        import_litellm()
    except Exception:  # noqa: BLE001 - the first request will report it
        log.exception("importing litellm failed")
