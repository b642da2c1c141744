"""The one door to an LLM: litellm behind two methods, with retries and one-line typed errors.

Everything else in memvault talks to the `LLM` protocol, so a scripted double can stand in for it
in tests. litellm is imported inside the calls: it takes seconds to import.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any, Protocol

from memvault.errors import LLMError
from memvault.extras import require
from memvault.settings import LOCAL_LLM, LLMSettings

HOW_TO_CONFIGURE = "set llm.model / MEMVAULT_LLM_MODEL, see `memvault config`"
# Failures worth another try: the provider is busy or the network blinked. Anything else (bad key,
# unknown model, bad request) would fail the same way again.
RETRYABLE = ("RateLimitError", "Timeout", "APIConnectionError", "ServiceUnavailableError", "InternalServerError")
MAX_DELAY = 8.0
LITELLM_PREFIX = re.compile(r"^litellm\.(\w+):\s*(?:\1:\s*)?(?:\w+Exception\s*-\s*)?")


class LLM(Protocol):
    """What curation needs from a chat model. `LLMClient` is the real one; tests use a scripted one."""

    def complete(self, messages: list[dict], json_schema: dict | None = None) -> str: ...

    def stream(self, messages: list[dict]) -> Iterator[str]: ...


def upstream_api_key(model: str, api_base: str, key: str | None) -> str:
    """The API key to send with a request to `model`: `key` when there is one; else, for an
    OpenAI-compatible server at `api_base` (a local llama.cpp, vLLM, LM Studio...) and no
    OPENAI_API_KEY in the environment, the placeholder "none": such servers want no key, but the
    OpenAI SDK refuses to send a request without one ("Missing credentials"). Every path to an LLM
    (curation, chat, doctor, the proxy) goes through here, so all of them reach the same servers."""
    if key:
        return key
    if api_base and model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
        return "none"
    return ""


def import_litellm():
    # Without this litellm fetches its price list from GitHub at import: slow, and no network here.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    require("llm")  # a core install has no litellm: name the extra that brings it
    import litellm

    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" banners on stderr
    # litellm tokenises every answer to price it; memvault uses neither count nor price, and in the
    # proxy that tokenising ran on the event loop, the largest part of a request's own cost.
    litellm.disable_token_counter = True
    return litellm


class LLMClient:
    """A chat model reached through litellm, as configured in `LLMSettings`.

    Retries rate limits, timeouts, connection and server errors with exponential backoff and jitter
    (`retrying`, at most `settings.max_retries` retries); any other failure, or the last retryable
    one, becomes an `LLMError` with one line of message.
    """

    def __init__(self, settings: LLMSettings, retry_base_delay: float = 0.5) -> None:
        self.settings = settings
        self.retry_base_delay = retry_base_delay

    @property
    def address(self) -> str:
        if self.settings.local_model:
            return f"memvault's own server for {self.settings.local_model}"
        return self.settings.api_base or "the provider's default address"

    def complete(self, messages: list[dict], json_schema: dict | None = None) -> str:
        """The model's whole answer. `json_schema` is passed as a response format where the provider
        takes one; the answer is still text, to be parsed leniently. At most `max_tokens` long."""
        kwargs = self.request(messages, json_schema) | {"max_tokens": self.settings.max_tokens}
        litellm = import_litellm()
        try:
            for attempt in self.retrying(litellm):
                with attempt:
                    response = self.call(litellm, kwargs)
        except Exception as exc:  # the boundary to a third-party library
            raise self.error(exc) from None
        return message_text(response)

    def stream(self, messages: list[dict]) -> Iterator[str]:
        """The answer as text deltas, at most `max_tokens` long. A failure before the first delta is
        retried; after it, it is raised (the caller has already shown part of the answer). Closing
        the generator closes the upstream response (memvault.converse.degenerate stops a loop so)."""
        kwargs = self.request(messages, None) | {"stream": True, "max_tokens": self.settings.max_tokens}
        litellm = import_litellm()
        try:
            for attempt in self.retrying(litellm):
                with attempt:
                    response, deltas, first = self.opened(litellm, kwargs)
        except Exception as exc:
            raise self.error(exc) from None
        try:
            if first is not None:
                yield first
                yield from deltas
        except Exception as exc:  # after the first delta: not retried
            raise self.error(exc) from None
        finally:
            close(response)

    def opened(self, litellm, kwargs: dict) -> tuple[Any, Iterator[str], str | None]:
        """A streamed answer: the response, its text deltas, and the first of them (None for an empty
        answer), read here so that a failure before it is tried again."""
        response = self.call(litellm, kwargs)
        deltas = (text for chunk in response if (text := delta_text(chunk)))
        try:
            return response, deltas, next(deltas, None)
        except BaseException:
            close(response)
            raise

    def retrying(self, litellm):
        """The tries of one call (tenacity): a retryable failure (RETRYABLE) is tried again after a
        random wait of up to `retry_base_delay` * 2^n seconds (at most MAX_DELAY: many clients don't
        retry in lockstep), at most `max_retries` times; the last failure is raised as it is."""
        from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_random_exponential

        # memvault's own server is never retried: it answers one request at a time, so a retry after a
        # timeout would only queue behind the answer it gave up on.
        retries = 0 if self.settings.local_model else self.settings.max_retries
        retryable = tuple(getattr(litellm, name) for name in RETRYABLE)
        return Retrying(retry=retry_if_exception_type(retryable), stop=stop_after_attempt(retries + 1),
                        wait=wait_random_exponential(self.retry_base_delay, MAX_DELAY), reraise=True)

    @staticmethod
    def call(litellm, kwargs: dict):
        """One call to litellm; a JSON schema the server refuses is dropped (for the tries after it too)."""
        try:
            return litellm.completion(**kwargs)
        except litellm.BadRequestError:
            if "response_format" not in kwargs:
                raise
        # Some servers refuse JSON schemas outright; the answer is parsed leniently anyway.
        del kwargs["response_format"]
        return litellm.completion(**kwargs)

    def request(self, messages: list[dict], json_schema: dict | None) -> dict[str, Any]:
        """litellm.completion keyword arguments for this model."""
        s = self.settings
        if s.local_model:
            s = served_locally(s)
        if not s.model:
            raise LLMError(f"no LLM configured: {HOW_TO_CONFIGURE}")
        kwargs: dict[str, Any] = {
            "model": s.model,
            "messages": messages,
            "temperature": s.temperature,
            "timeout": s.timeout,
            # We retry ourselves; the OpenAI SDK would otherwise retry twice more behind our back.
            "max_retries": 0,
            # Providers that take no response_format (or temperature) get the call without it.
            "drop_params": True,
        }
        if s.api_base:
            kwargs["api_base"] = s.api_base
        key = upstream_api_key(s.model, s.api_base, s.api_key)
        if key:
            kwargs["api_key"] = key
        if json_schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "memvault", "schema": json_schema, "strict": False},
            }
        return kwargs

    def error(self, exc: Exception) -> LLMError:
        """One line: which model, where, what went wrong, and the setting that changes it."""
        reason = " ".join(str(exc).split()) or type(exc).__name__
        # "litellm.RateLimitError: RateLimitError: OpenAIException - slow down" -> "RateLimitError: slow down"
        reason = LITELLM_PREFIX.sub(r"\1: ", reason, count=1)
        if len(reason) > 200:
            reason = reason[:197] + "..."
        where = f"LLM {self.settings.model} at {self.address}"
        if "Timeout" in type(exc).__name__:
            return LLMError(f"{where} did not answer within llm.timeout ({self.settings.timeout:g} s): a slow model "
                            f"or a busy machine; raise llm.timeout (`memvault config set llm.timeout 300`)")
        return LLMError(f"{where} failed: {reason} ({self.hint()})")

    def hint(self) -> str:
        if self.settings.local_model:
            return "check llm.local_model, see `memvault config show`"
        return "check llm.model, llm.api_base and the provider's key, see `memvault config show`"


def served_locally(settings: LLMSettings) -> LLMSettings:
    """The settings of a call to the model memvault serves itself (started on first use)."""
    import dataclasses

    from memvault.curate.local_llm import options_for, server_for

    api_base = server_for(options_for(settings)).api_base
    return dataclasses.replace(settings, model=LOCAL_LLM, api_base=api_base, api_key="none")


def message_text(response: Any) -> str:
    """The text of a non-streaming chat completion ('' when the model said nothing)."""
    try:
        return response.choices[0].message.content or ""
    except (AttributeError, IndexError, TypeError):
        raise LLMError(f"LLM answered in an unexpected shape: {str(response)[:120]}") from None


def close(response: Any) -> None:
    getattr(response, "close", lambda: None)()


def delta_text(chunk: Any) -> str:
    """The text in one streamed chunk ('' for role-only or final chunks)."""
    try:
        return chunk.choices[0].delta.content or ""
    except (AttributeError, IndexError, TypeError):
        return ""
