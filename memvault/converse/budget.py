"""The token budget of injected memory: what memory adds to a prompt must leave the model room for the
conversation and its answer. One looping answer stored whole (686 repeated lines) made an 8,124-token
prompt of "What is my sister called?" and overflowed a model with an 8,192-token context.

- The model's context: prompt.context_tokens, else litellm's model info for the model, else 8,192.
- The budget: prompt.memory_share of what is left after the messages themselves and the answer's
  room (the request's max_tokens, else llm.max_tokens). The messages themselves are compacted
  (memvault.converse.compaction) once they pass MESSAGES_SHARE of that room (`within_context`).
- Each memory or rule is first cleared of a degenerate tail (memvault.converse.degenerate) and
  clipped to prompt.item_tokens (a summary to twice that; core files keep core.max_chars); then the
  sections take the budget in order of trust: rules, core files, the memories (most relevant first),
  the rolling summary, the latest session. What does not fit is left out (the prompt's order is still prompt.py's).

Tokens are estimated, not counted: a tokenizer per model costs seconds to load and memvault does not
know the upstream's. CHARS_PER_TOKEN 3 over-counts English for BPE tokenizers (about 4 characters a
token), so an estimate that fits fits the real count too.
"""

from __future__ import annotations

import dataclasses
import functools
import logging

from memvault.converse.degenerate import good_part
from memvault.settings import FLOORS

log = logging.getLogger("memvault")

DEFAULT_CONTEXT = 8_192
CHARS_PER_TOKEN = 3
MARGIN_TOKENS = 64  # the chat template's own tokens (roles, separators), the headers of prompt.py
CLIPPED = " …"
MESSAGES_SHARE = 0.75  # of the context's room, what the messages may fill before they are compacted


def estimate_tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def messages_tokens(messages: list[dict]) -> int:
    from memvault.core.messages import message_text

    return sum(estimate_tokens(message_text(m)) + 4 for m in messages)


@functools.cache
def model_context(model: str) -> int | None:
    """litellm's context size (input tokens) for `model`, or None when litellm does not know it."""
    from memvault.curate.llm import import_litellm

    try:
        info = import_litellm().get_model_info(model)
    except Exception:  # noqa: BLE001 - an unknown model (a local server's): the default applies
        return None
    size = info.get("max_input_tokens") or info.get("max_tokens")
    return int(size) if size else None


def context_tokens(settings, model: str | None) -> int:
    """The model's context: the setting, else what litellm knows of `model`, else DEFAULT_CONTEXT."""
    if settings.prompt.context_tokens:
        return settings.prompt.context_tokens
    known = model_context(model) if model else None
    return known or DEFAULT_CONTEXT


def memory_budget(settings, messages: list[dict], model: str | None = None, answer_tokens: int | None = None) -> int:
    """Tokens memory may add to `messages` for `model` (0 when the messages fill the context already)."""
    room = (context_tokens(settings, model) - (answer_tokens or settings.llm.max_tokens)
            - messages_tokens(messages) - MARGIN_TOKENS)
    return max(0, int(room * settings.prompt.memory_share))


def within_context(settings, model: str | None = None, answer_tokens: int | None = None):
    """compaction settings whose character limit also leaves the model room: the messages may fill
    MESSAGES_SHARE of what the answer leaves of the context (an Open WebUI history of 29.5k characters
    overflowed an 8,192-token model), never less than compaction.max_chars' floor of 4,000."""
    room = context_tokens(settings, model) - (answer_tokens or settings.llm.max_tokens) - MARGIN_TOKENS
    fits = max(FLOORS["compaction.max_chars"], int(room * CHARS_PER_TOKEN * MESSAGES_SHARE))
    return dataclasses.replace(settings.compaction, max_chars=min(settings.compaction.max_chars, fits))


def clip(text: str, tokens: int) -> str:
    """`text` without a degenerate tail, at most `tokens` (estimated) long, cut at a word."""
    limit = tokens * CHARS_PER_TOKEN
    text, _ = good_part(text[:4 * limit])  # a loop shows within a few rounds: no need to read 686 of them
    if len(text) <= limit:
        return text
    head = text[:limit - len(CLIPPED)]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip() + CLIPPED


def fit(context, budget: int, item_tokens: int):
    """The MemoryContext `context` within `budget` tokens, as a new MemoryContext: each item cleaned
    and clipped (a memory or rule to `item_tokens`, a summary to twice that; a core file is a
    person's text, capped by core.max_chars already), then taken in order of trust while the budget lasts."""
    left = budget

    def take(text: str | None, tokens: int | None = item_tokens, extra: int = 2) -> str | None:
        nonlocal left
        if not (text or "").strip():
            return None
        text = clip(text, tokens) if tokens else text
        cost = estimate_tokens(text) + extra
        if not text or cost > left:
            return None
        left -= cost
        return text

    rules = [kept for kept in (take(rule) for rule in context.rules) if kept]
    core = [(name, kept) for name, text in context.core if (kept := take(text, None, extra=4 + len(name) // 3))]
    memories = []
    for hit in context.memories:
        kept = take(hit.text, extra=6)
        if kept:
            memories.append(dataclasses.replace(hit, text=kept) if kept != hit.text else hit)
    summary = take(context.summary, 2 * item_tokens)
    latest_session = take(context.latest_session, 2 * item_tokens)
    left_out = (len(context.rules) - len(rules) + len(context.core) - len(core) + len(context.memories)
                - len(memories) + (summary is None and bool((context.summary or "").strip()))
                + (latest_session is None and bool((context.latest_session or "").strip())))
    if left_out:
        log.info("prompt budget of %d tokens: %d memory item(s) left out", budget, left_out)
    return dataclasses.replace(context, rules=rules, core=core, memories=memories, summary=summary,
                               latest_session=latest_session)
