"""Which fields of a chat request the proxy may forward: all but those that route or key the request.

OpenAI-compatible servers take fields of their own (llama.cpp's `cache_prompt`, `top_k`, `min_p`,
`repeat_penalty`; vLLM's `guided_json`, `chat_template_kwargs`; Open WebUI's custom parameters), and
litellm forwards any field it does not know to the upstream's body as sent. What litellm does know
is its own: where the request goes (`api_base`, `base_url`, `custom_llm_provider`, `model_list`,
fallbacks), which key or credentials it carries (`api_key`, `aws_secret_access_key`, `vertex_credentials`,
`extra_headers`), and what runs around it (callbacks, loggers, mocks, caching, retries, costs). A client
must never set those: the operator's key would go where the client says. So a field is refused when

- it is one of litellm's own parameters (`litellm.completion`'s signature and `all_litellm_params`
  of the installed litellm, read once), OpenAI's chat parameters and `thinking` aside;
- or it is named below (`ROUTING_FIELDS`: what litellm reads from provider-specific keyword
  arguments without listing them, such as `aws_region_name` or `vertex_project`);
- or it starts with a provider's or a logger's prefix (`aws_`, `vertex_`, `langfuse_`...), or ends like
  a credential or an address (`_key`, `_token`, `_secret`, `_url`, `_headers`...);
- or it starts with `memory_` and is not one of the proxy's memory fields (a typo, not the LLM's).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Iterable

# The body parameters of OpenAI's chat.completions.create (openai 2.x), and Anthropic's `thinking`
# (a model parameter litellm translates): forwarded even where litellm's signature names them.
MODEL_PARAMETERS = frozenset({
    "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs", "max_completion_tokens",
    "max_tokens", "modalities", "moderation", "n", "parallel_tool_calls", "prediction",
    "presence_penalty", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention", "reasoning_effort",
    "response_format", "safety_identifier", "seed", "service_tier", "stop", "store", "stream_options", "temperature",
    "thinking", "tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity", "web_search_options"})
# Routing, keys and callbacks that litellm takes without listing them in all_litellm_params (read from
# provider configs: bedrock, vertex, watsonx, azure, sagemaker...), or that the server sets itself.
ROUTING_FIELDS = frozenset({
    "api_base", "base_url", "api_key", "api_version", "custom_llm_provider", "deployment_id", "extra_headers",
    "headers", "organization", "organization_id", "project", "project_id", "space_id", "region_name",
    "aws_region_name", "vertex_project", "vertex_location", "vertex_credentials", "azure_ad_token",
    "model_list", "fallbacks", "callbacks", "success_callback", "failure_callback", "input_callback",
    "service_callback", "logger_fn", "metadata", "litellm_metadata", "mock_response", "mock_tool_calls",
    "timeout", "stream_timeout", "max_retries", "num_retries", "client", "shared_session", "proxy", "proxies",
    "http_client", "ssl_verify", "url", "endpoint", "host", "token", "extra_query",
    "extra_body"})  # a second level of extra_body: litellm would merge it unchecked
PREFIXES = ("litellm_", "aws_", "azure_", "vertex_", "watsonx_", "bedrock_", "sagemaker_", "gcs_", "s3_",
            "anthropic_", "openai_", "langfuse_", "langsmith_", "arize_", "datadog_", "dd_", "posthog_",
            "newrelic_", "humanloop_", "wandb_", "weave_", "signoz_", "token_exchange_", "github_copilot_")
SUFFIXES = ("_key", "_keys", "_token", "_secret", "_password", "_credential", "_credentials", "_url", "_uri",
            "_endpoint", "_host", "_headers", "_header", "_callback", "_callbacks", "_proxy")
MEMORY_PREFIX = "memory_"


@functools.cache
def litellm_own() -> frozenset[str]:
    """The parameters the installed litellm consumes itself (never forwarded to the upstream's body),
    lower-cased: a field is compared without its case."""
    from memvault.curate.llm import import_litellm

    litellm = import_litellm()
    from litellm.types.utils import all_litellm_params

    named = set(inspect.signature(litellm.completion).parameters) - {"kwargs", "model", "messages", "stream"}
    return frozenset(name.lower() for name in (named | set(all_litellm_params)) - MODEL_PARAMETERS)


def refused_fields(names: Iterable[str]) -> list[str]:
    """The fields among `names` that a client may not send to the upstream, sorted."""
    own = litellm_own() | ROUTING_FIELDS
    return sorted(name for name in names if name not in MODEL_PARAMETERS and refused(name.lower(), own))


def refused(name: str, own: frozenset[str]) -> bool:
    return name in own or name.startswith(PREFIXES) or name.endswith(SUFFIXES) or name.startswith(MEMORY_PREFIX)
