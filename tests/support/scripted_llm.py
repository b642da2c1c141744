"""A deterministic stand-in for an LLM's judgement: replies looked up from a table, every call recorded.

    llm = ScriptedLLM([("likes pizza", '[{"fact": 0, "event": "NONE", "id": "0"}]')], default="[]")
    llm.complete(messages)        # the first rule whose matcher fits the prompt text answers
    llm.calls                     # [Call(messages, json_schema, method), ...]

A matcher is a substring of the prompt (all message contents joined) or a predicate on it. A reply
is a string, a callable (prompt text -> string), or an exception instance to raise (e.g. LLMError).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from memvault.errors import LLMError

Matcher = str | Callable[[str], bool]
Reply = str | Callable[[str], str] | BaseException


@dataclass
class Call:
    messages: list[dict]
    json_schema: dict | None
    method: str  # complete | stream

    @property
    def prompt(self) -> str:
        return prompt_text(self.messages)


def prompt_text(messages: list[dict]) -> str:
    return "\n".join(str(m.get("content", "")) for m in messages)


class ScriptedLLM:
    """Implements the `memvault.curate.llm.LLM` protocol from a table of (matcher, reply) rules."""

    def __init__(self, rules: list[tuple[Matcher, Reply]] | None = None, default: Reply = "") -> None:
        self.rules = list(rules or [])
        self.default = default
        self.calls: list[Call] = []

    @classmethod
    def failing(cls, message: str = "LLM openai/scripted at http://127.0.0.1:9 failed: boom") -> ScriptedLLM:
        """An LLM whose every call raises LLMError."""
        return cls(default=LLMError(message))

    @classmethod
    def always(cls, reply: Reply) -> ScriptedLLM:
        return cls(default=reply)

    def reply(self, messages: list[dict], json_schema: dict | None, method: str) -> str:
        self.calls.append(Call(messages, json_schema, method))
        text = prompt_text(messages)
        answer = next((reply for matcher, reply in self.rules if matches(matcher, text)), self.default)
        if isinstance(answer, BaseException):
            raise answer
        return answer(text) if callable(answer) else answer

    def complete(self, messages: list[dict], json_schema: dict | None = None) -> str:
        return self.reply(messages, json_schema, "complete")

    def stream(self, messages: list[dict]) -> Iterator[str]:
        yield from chunks(self.reply(messages, None, "stream"))


def matches(matcher: Matcher, text: str) -> bool:
    return matcher in text if isinstance(matcher, str) else bool(matcher(text))


def chunks(text: str, parts: int = 3) -> list[str]:
    """`text` cut into a few pieces, as a streaming model would send it."""
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]
