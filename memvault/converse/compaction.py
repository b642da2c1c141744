"""Context compaction: a long message list keeps its recent messages and folds the rest into one.

Over `compaction.max_messages` messages or `compaction.max_chars` characters, every message but the
last `compaction.keep` (and the client's own leading system messages) becomes one system message that
starts `[compacted]`: a summary the LLM writes at temperature 0 in at most 400 tokens, or, when there
is no LLM or it fails, short snippets of each message. An earlier `[compacted]` message is folded in
like any other, so a long chat compacts again and again without growing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import threading
from dataclasses import dataclass

from cachetools import LRUCache

from memvault.core.messages import message_text
from memvault.curate.extract import last_user_index
from memvault.settings import CompactionSettings

log = logging.getLogger("memvault")

MARK = "[compacted]"
MAX_TOKENS = 400
TEMPERATURE = 0.0
SNIPPET_CHARS = 160
SNIPPET_LINES = 24  # the first and last of the folded messages, when there are more
MAX_MESSAGE_CHARS = 4_000  # of one message shown to the summariser
PROMPT = (
    "You compact the earlier part of a conversation so the assistant can continue it. Write a short summary "
    "(at most 250 words) of what matters for the rest of the conversation: who the user is, what they asked "
    "for, facts and decisions, open questions, anything the assistant promised. Plain sentences, no preamble.")
CACHE_SIZE = 64  # summaries of message spans seen lately: a proxy's client resends its whole history


@dataclass(frozen=True)
class Compaction:
    """What compacting did: the messages to send, and how many were folded (0: nothing)."""

    messages: list[dict]
    folded: int = 0


def needs_compaction(messages: list[dict], settings: CompactionSettings) -> bool:
    return (len(messages) > settings.max_messages
            or sum(len(message_text(m)) for m in messages) > settings.max_chars)


def split(messages: list[dict], keep: int) -> tuple[list[dict], list[dict], list[dict]]:
    """(the client's leading system messages, the messages to fold, the recent ones kept). The kept
    part never starts with a tool result (its call would be folded away) and always holds the last
    user message (memory is injected there)."""
    lead = 0
    while lead < len(messages) and messages[lead].get("role") == "system" and not is_compacted(messages[lead]):
        lead += 1
    start = max(lead, len(messages) - keep)
    last_user = last_user_index(messages)
    if last_user is not None and last_user >= lead:
        start = min(start, last_user)
    while start > lead and messages[start].get("role") == "tool":
        start -= 1
    return messages[:lead], messages[lead:start], messages[start:]


def is_compacted(message: dict) -> bool:
    return message.get("role") == "system" and message_text(message).startswith(MARK)


def compact(messages: list[dict], settings: CompactionSettings, llm=None) -> Compaction:
    """The messages as they should go to the model (unchanged when short enough)."""
    if not needs_compaction(messages, settings):
        return Compaction(list(messages))
    lead, folded, kept = split(messages, settings.keep)
    if not folded:
        return Compaction(list(messages))
    summary = summarise(folded, llm)
    text = summary if summary else snippets(folded)
    return Compaction([*lead, {"role": "system", "content": f"{MARK} {text}"}, *kept], len(folded))


def transcript(messages: list[dict]) -> str:
    lines = []
    for message in messages:
        text = message_text(message)
        if is_compacted(message):
            text = "(summary of what came before) " + text[len(MARK):].strip()
        if len(text) > MAX_MESSAGE_CHARS:
            text = text[:MAX_MESSAGE_CHARS] + " …"
        lines.append(f"{message.get('role') or 'message'}: {text}")
    return "\n\n".join(lines)


_cache: LRUCache[str, str] = LRUCache(CACHE_SIZE)
_cache_lock = threading.Lock()  # LRUCache is not thread-safe: even a read reorders it


def summarise(messages: list[dict], llm) -> str | None:
    """The LLM's summary of `messages` (temperature 0, at most MAX_TOKENS), or None when there is no
    LLM or it fails (the failure is logged; the caller falls back to snippets)."""
    if llm is None:
        return None
    llm = bounded(llm)
    request = [{"role": "system", "content": PROMPT}, {"role": "user", "content": transcript(messages)}]
    key = cache_key(llm, request)
    with _cache_lock:
        cached = _cache.get(key)
    if cached is not None:
        return cached
    try:
        answer = " ".join(str(llm.complete(request) or "").split())
    except Exception as exc:  # noqa: BLE001 - any failure of the LLM: snippets instead, never a lost turn
        log.warning("compaction: the LLM failed (%s), using snippets of the earlier messages", exc)
        return None
    if not answer:
        return None
    if key is not None:
        with _cache_lock:
            _cache[key] = answer
    return answer


def cache_key(llm, request: list[dict]) -> str | None:
    """The same span sent to the same configured model gets the same summary (temperature 0): the
    key of both. None (no caching) for an LLM that is not a configured one (a test's double)."""
    from memvault.curate.llm import LLMClient

    if not isinstance(llm, LLMClient):
        return None
    identity = [llm.settings.model, llm.settings.api_base, request]
    return hashlib.sha256(json.dumps(identity, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


def bounded(llm):
    """The configured LLM at temperature 0 and at most MAX_TOKENS tokens (a scripted double as it is)."""
    from memvault.curate.llm import LLMClient

    if isinstance(llm, LLMClient):
        return LLMClient(dataclasses.replace(llm.settings, temperature=TEMPERATURE, max_tokens=MAX_TOKENS))
    return llm


def snippets(messages: list[dict]) -> str:
    """The fallback: the start of each folded message, one line each (the first and the last ones
    when there are many), so the model still sees what the conversation was about."""
    lines = []
    for message in messages:
        text = " ".join(message_text(message).split())
        if is_compacted(message):
            text = text[len(MARK):].strip()
        if len(text) > SNIPPET_CHARS:
            text = text[:SNIPPET_CHARS - 1] + "…"
        lines.append(f"- {message.get('role') or 'message'}: {text}")
    if len(lines) > SNIPPET_LINES:
        half = SNIPPET_LINES // 2
        lines = [*lines[:half], f"- … ({len(lines) - 2 * half} more messages)", *lines[-half:]]
    return (f"Earlier in this conversation ({len(messages)} messages, shown as snippets):\n" + "\n".join(lines))
