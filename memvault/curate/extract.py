"""Fact extraction: the latest user message -> a few atomic, third-person facts worth remembering.

Custom prompts (`llm.extraction_prompt_file`) replace the default instructions:
- a prompt that contains `{message}` is a whole template: `{message}` becomes the latest user
  message and `{context}` the earlier turns, and the filled prompt is sent as the user message;
- any other prompt is sent as the system message, followed by the usual input (context + message).
The default prompt asks for at most 3 facts and its output is cut at 3; a custom prompt may ask
for more, so its output is only cut at `MAX_CUSTOM_FACTS`, a guard against a runaway answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memvault.curate import prompts
from memvault.curate.jsonish import as_list, parse_json, strip_thinking
from memvault.curate.llm import LLM
from memvault.errors import ConfigError
from memvault.vault.format.entry import TRIPLE_KEYS

MAX_CUSTOM_FACTS = 20
MAX_TRIPLE_CHARS = 200  # a subject, predicate or object longer than this is not a name
CONTEXT_TURNS = 6  # earlier turns shown, to resolve "she" / "there" in the latest message
CONTEXT_CHARS = 500  # per turn: context helps, but the facts come from the latest message
FACT_KEYS = ("fact", "text", "content", "memory", "value")
LIST_KEYS = ("facts", "memories", "memory", "items", "result", "results")
BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+(.+?)\s*$")
# What small models write instead of an empty list.
NOTHING = {"none", "n/a", "na", "nothing", "no facts", "no facts.", "none.", "[]", "null"}


@dataclass(frozen=True)
class Fact:
    """One extracted fact: its text, and its triple fields when the LLM gave a whole triple
    (vault.format.entry.TRIPLE_KEYS: category, subject, predicate, object, evidence)."""

    text: str
    triple: dict[str, str] = field(default_factory=dict)


def extract_fact_records(llm: LLM, messages: list[dict], prompt: str | None = None,
                         whole: bool = False) -> list[Fact]:
    """Facts from the latest user message in `messages` (OpenAI-style role/content dicts), or with
    `whole` from every user message (mem0's `add(messages)`: the assistant's turns are context).

    Earlier turns are shown as context only. `prompt` replaces the default instructions (see the
    module docstring). Returns stripped, de-duplicated facts; [] when there is no user message or
    the answer holds nothing usable. Raises LLMError when the LLM cannot be reached: the caller
    decides how to degrade (store the text as given).
    """
    said, context = split_source(messages, whole)
    if not said.strip():
        return []
    template = prompts.EXTRACTION_INPUT_WHOLE if whole and said_by_several(messages) else prompts.EXTRACTION_INPUT
    limit = fact_limit(prompt, whole)
    schema = prompts.bounded(prompts.EXTRACTION_SCHEMA, limit, prompts.MAX_FACT_CHARS)
    answer = llm.complete(extraction_messages(said, context, prompt, template), json_schema=schema)
    return parse_fact_records(answer)[:limit]


def fact_limit(prompt: str | None, whole: bool = False) -> int:
    return MAX_CUSTOM_FACTS if prompt or whole else prompts.MAX_DEFAULT_FACTS


def split_source(messages: list[dict], whole: bool = False) -> tuple[str, list[dict]]:
    """(the user's words facts are taken from, the turns shown as context): the latest user message
    and the turns before it, or with `whole` every user message and the assistant's turns."""
    if not (whole and said_by_several(messages)):
        return split_latest(messages)
    said = "\n".join(text_of(m) for m in messages if m.get("role") == "user")
    return said, [m for m in messages if m.get("role") == "assistant"][-CONTEXT_TURNS:]


def said_by_several(messages: list[dict]) -> bool:
    """Whether more than one user message holds text (else the whole conversation is its latest one)."""
    return sum(1 for m in messages if m.get("role") == "user" and text_of(m).strip()) > 1


def grounding_source(messages: list[dict], whole: bool = False, embedder=None, literal: bool = False):
    """What the grounding guard checks the extracted facts against (curate.grounding.Source): the
    same words and context the LLM was shown (`embedder`: what judges closeness of meaning; `literal`:
    the facts must keep to the user's words)."""
    from memvault.curate.grounding import Source

    said, context = split_source(messages, whole)
    names = [m["name"] for m in messages if isinstance(m.get("name"), str)]  # who spoke may be named
    shown = [clip(text_of(turn), CONTEXT_CHARS) for turn in context]
    # the turn the latest message answers; with `whole`, every user message answers one of the assistant's
    replied = "\n".join(shown) if whole else (shown[-1] if shown else "")
    return Source(said, "\n".join([*names, *shown]), embedder, replied=replied, literal=literal)


def load_prompt(path: str) -> str | None:
    """The custom extraction prompt in `path` (`llm.extraction_prompt_file`); None when no file is set."""
    if not path:
        return None
    try:
        text = Path(path).expanduser().read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"llm.extraction_prompt_file: cannot read {path}: {exc}") from None
    if not text.strip():
        raise ConfigError(f"llm.extraction_prompt_file: {path} is empty")
    return text


def extraction_messages(latest: str, context: list[dict], prompt: str | None = None,
                        template: str = prompts.EXTRACTION_INPUT) -> list[dict]:
    """The chat sent to the LLM for one extraction (`template`: the input's layout)."""
    context_text = "\n".join(
        f"{turn.get('role', 'user')}: {clip(text_of(turn), CONTEXT_CHARS)}" for turn in context
    ) or "(none)"
    if prompt and "{message}" in prompt:
        return [{"role": "user", "content": prompts.fill(prompt, message=latest, context=context_text)}]
    user = prompts.fill(template, message=latest, context=context_text)
    return [{"role": "system", "content": prompt or prompts.EXTRACTION}, {"role": "user", "content": user}]


def split_latest(messages: list[dict]) -> tuple[str, list[dict]]:
    """(text of the last user message, up to CONTEXT_TURNS user/assistant turns before it)."""
    index = last_user_index(messages)
    if index is None:
        return "", []
    earlier = [m for m in messages[:index] if m.get("role") in ("user", "assistant")]
    return text_of(messages[index]), earlier[-CONTEXT_TURNS:]


def text_of(message: dict) -> str:
    """A message's text. Curation reads the messages the facade normalised (memvault.core.messages:
    the one reader of content parts and roles), whose content is a string."""
    content = message.get("content")
    return content if isinstance(content, str) else ""


def last_user_index(messages: list[dict]) -> int | None:
    """The position of the last user message (None when there is none)."""
    return next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), None)


def parse_fact_records(answer: str | None) -> list[Fact]:
    """Facts from an LLM answer of any common shape: a JSON list of strings, `{"facts": [...]}`,
    a list of objects with "fact"/"text" (and a triple: subject, predicate, object, with category
    and evidence), a bare JSON string, any of these fenced or wrapped in prose, or bullet lines.
    Anything else gives []."""
    value = parse_json(answer)
    if value is None:
        items: list[Any] = bullet_lines(strip_thinking(answer or ""))
    elif isinstance(value, str):
        items = [value]
    else:
        items = as_list(value, LIST_KEYS) or []
    triples: dict[str, dict[str, str]] = {}
    for item in items:
        text, triple = " ".join(fact_text(item).split()), fact_triple(item)
        if triple and text.casefold() not in triples:
            triples[text.casefold()] = triple
    return [Fact(text, triples.get(text.casefold(), {})) for text in clean([fact_text(item) for item in items])]


def fact_triple(item: Any) -> dict[str, str]:
    """The triple fields of one extracted fact: {} unless subject, predicate and object are all
    short strings (a triple names things; a paragraph is not one)."""
    if not isinstance(item, dict):
        return {}
    lowered = {str(k).lower(): v for k, v in item.items()}
    fields = {key: " ".join(lowered[key].split()) for key in TRIPLE_KEYS
              if isinstance(lowered.get(key), str) and lowered[key].strip()}
    whole = all(key in fields and len(fields[key]) <= MAX_TRIPLE_CHARS for key in ("subject", "predicate", "object"))
    return fields if whole else {}


def fact_text(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        lowered = {str(k).lower(): v for k, v in item.items()}
        for key in FACT_KEYS:
            if isinstance(lowered.get(key), str):
                return lowered[key]
    return ""


def bullet_lines(text: str) -> list[str]:
    return [m.group(1) for m in map(BULLET.match, text.splitlines()) if m]


def clean(facts: list[str]) -> list[str]:
    """Stripped, whitespace-collapsed, non-empty facts, each once (case-insensitively), in order."""
    seen: set[str] = set()
    out: list[str] = []
    for fact in facts:
        fact = " ".join(fact.split())
        key = fact.casefold()
        if fact and key not in NOTHING and key not in seen:
            seen.add(key)
            out.append(fact)
    return out


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
