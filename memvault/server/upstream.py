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


def client_model(requested: str | None, llm: LLMSettings) -> str:
    """The litellm model string for a request's `model`: a client chooses a model, never a provider
    or a host, so the operator's key only goes where the operator's configuration sends it.

    - no `model`, or exactly llm.model: the configured model, as configured;
    - otherwise the model runs on the configured model's provider ("openai" when there is no
      llm.model): a name already under it is kept, any other name is put under it
      ("llama3" -> "openai/llama3"; with llm.api_base set, "groq/x" -> "openai/groq/x", a model
      name at that OpenAI-compatible server);
    - without llm.api_base, a name under another litellm provider ("groq/x" when llm.model is
      "openai/gpt-4o-mini") is a 400 naming it: the client asked for another provider."""
    from memvault.errors import UsageError

    check_model_name(requested)
    model = requested or llm.model
    if not model:
        raise UsageError("no model: give `model` in the request or set llm.model / MEMVAULT_LLM_MODEL")
    if model == llm.model:
        return litellm_model(model, llm.api_base)
    provider = configured_provider(llm)
    if model.startswith(provider + "/"):
        return model
    first = model.split("/", 1)[0] if "/" in model else ""
    if first and not llm.api_base and first in known_providers():
        raise UsageError(f"model {model[:80]!r} names the provider {first!r}; this server's models are "
                         f"{provider}/... (llm.model): a request chooses a model, not a provider")
    return f"{provider}/{model}"


def check_model_name(model: str | None) -> None:
    """A model name is printable text: a control character or a lone surrogate is a 400."""
    from memvault.errors import UsageError

    if model is None:
        return
    if not model.isprintable() or any(0xD800 <= ord(c) <= 0xDFFF for c in model):
        raise UsageError("`model` has a control character or an invalid character: refused")


def configured_provider(llm: LLMSettings) -> str:
    """The litellm provider of llm.model as litellm will call it ("openai" when there is none)."""
    if not llm.model:
        return "openai"
    from memvault.curate.llm import import_litellm

    try:
        return import_litellm().get_llm_provider(litellm_model(llm.model, llm.api_base))[1]
    except Exception:  # noqa: BLE001 - litellm cannot place it: the call will fail with its own message
        return "openai"


def known_providers() -> set[str]:
    from memvault.curate.llm import import_litellm

    return {str(getattr(p, "value", p)) for p in import_litellm().provider_list}


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


# -- the pass-through: which paths reach llm.api_base, with which headers -------------------------------
# What an OpenAI-compatible server serves (the first segment of the path after /v1): all the
# pass-through relays by itself; the operator adds others with server.passthrough_paths.
OPENAI_PATHS = frozenset({"models", "completions", "embeddings", "moderations", "audio", "images", "responses",
                          "files", "uploads", "batches", "fine_tuning", "vector_stores", "rerank", "tokenize",
                          "detokenize"})
# memvault's own paths (and its documentation), and what mem0's OSS server and hosted platform serve:
# answered here whatever their method or spelling, never relayed with the operator's key.
OWN_ROOTS = frozenset({"memories", "reset", "health", "docs", "docs-assets", "openapi.json", "redoc", "ping"})
MEM0_ROOTS = frozenset({"entities", "configure", "search", "batch", "exports", "summary", "feedback", "profiles",
                        "orgs", "projects", "webhooks", "events", "users", "agents", "apps", "runs"})
MEM0_VERSIONS = ("v2", "v3")  # mem0's hosted API lives under /v2/..., /v3/... and /api/v1/...
# Headers that describe one hop of a connection, or that we set ourselves: never copied across
# (RFC 9110 §7.6.1), nor any header a `Connection:` header names.
HOP_HEADERS = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
                         "te", "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length"})


def passthrough_refusal(path: str, operator_paths: str) -> tuple[int, str] | None:
    """Why a request path may not be relayed upstream ((status, message)), or None when it may.
    `path`: the request's path after the API root (after /v1/ for a /v1/... path), dot segments
    resolved; `operator_paths`: server.passthrough_paths (comma-separated path prefixes)."""
    parts = [part for part in path.split("/") if part]
    if parts[:1] == ["v1"]:
        parts = parts[1:]
    if not parts:
        return 404, "no such path: the LLM's API is under /v1/"
    first = parts[0]
    if first == "configure":
        return 403, "memvault's configuration is the operator's: set it in the config file, not over HTTP"
    if first in OWN_ROOTS or parts[:2] == ["chat", "completions"]:
        return 404, f"no such memvault route: /{'/'.join(parts)[:80]}"
    if first in MEM0_ROOTS or first in MEM0_VERSIONS or parts[:2] == ["api", "v1"]:
        return 501, f"/{'/'.join(parts)[:80]} is a mem0 path memvault does not serve (never passed to the LLM)"
    allowed = [p.strip().strip("/") for p in operator_paths.split(",") if p.strip().strip("/")]
    joined = "/".join(parts)
    if first in OPENAI_PATHS or any(joined == p or joined.startswith(p + "/") for p in allowed):
        return None
    return 404, (f"/{joined[:80]} is not an OpenAI API path: not passed to the LLM (an operator may add it to "
                 "server.passthrough_paths)")


def relayed_headers(headers, also_drop: frozenset[str] = frozenset()) -> dict[str, str]:
    """The headers to copy across the proxy: not hop-by-hop ones, not those `Connection:` names, not
    `also_drop` (lower-case names)."""
    named = {token.strip().lower() for key, value in headers.items() if key.lower() == "connection"
             for token in value.split(",")}
    dropped = HOP_HEADERS | named | also_drop
    return {key: value for key, value in headers.items() if key.lower() not in dropped}
