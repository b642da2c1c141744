"""Re-summarising after an erase (docs/architecture.md, "Erasure"): a conversation summary or a session
summary that quoted an erased text is written again by the LLM from what remains (the conversation's
remaining facts; the session's remaining user turns), never from the erased text, through the same
prompts as the rolling summary (curate/summary.py) and the session summary (curate/policy.py).

The model is not trusted: an answer that quotes an erased text, is empty, or is the wreck of an
answer (runaway length, a word looping, a placeholder, mostly words its input does not hold) is
refused with the reason, and the caller keeps the summary with the quoting sentences removed."""

from __future__ import annotations

from memvault.curate.grounding import PLACEHOLDER
from memvault.curate.jsonish import strip_thinking
from memvault.curate.llm import LLM
from memvault.curate.policy import SESSION_PROMPT, transcript
from memvault.curate.summary import clean_summary, summary_messages
from memvault.errors import LLMError
from memvault.vault.scrub import Scrubber
from memvault.vault.wording import content_roots, known, roots_of

MAX_GROWTH = 3  # a summary more than three times as long as what it summarises (plus a sentence) ran away
SLACK_CHARS = 300
MIN_SUPPORTED = 0.6  # of a summary's content words, the share that must come from its input
LOOP = 6  # a content word said this many times is a loop, not a summary


def conversation_summary(llm: LLM, facts: list[str], conversation: str, erased: Scrubber) -> tuple[str | None, str]:
    """(the new summary, "") or (None, why the model's answer was refused)."""
    return answer_of(llm, summary_messages(None, facts, conversation), "\n".join(facts), erased, clean_summary)


def session_summary(llm: LLM, user_turns: list[str], erased: Scrubber) -> tuple[str | None, str]:
    """(the new session summary, "") or (None, why refused)."""
    messages = [{"role": "system", "content": SESSION_PROMPT}, {"role": "user", "content": transcript(user_turns)}]
    return answer_of(llm, messages, "\n".join(user_turns), erased, lambda answer: strip_thinking(answer or "").strip())


def answer_of(llm: LLM, messages: list[dict], source: str, erased: Scrubber, clean) -> tuple[str | None, str]:
    if not source.strip():
        return None, "nothing remains to summarise"
    try:
        text = clean(llm.complete(messages))
    except LLMError as exc:
        return None, f"the LLM failed ({exc})"
    reason = refusal(text, source, erased)
    return (None, reason) if reason else (text, "")


def refusal(text: str, source: str, erased: Scrubber) -> str | None:
    """Why a re-written summary is refused, or None when it may replace the old one."""
    if not text.strip() or not any(ch.isalnum() for ch in text):
        return "an empty answer"
    if erased.matches(text):
        return "it quotes an erased text"
    if len(text) > MAX_GROWTH * len(source) + SLACK_CHARS:
        return "a runaway answer"
    if PLACEHOLDER.search(text):
        return "it copies a placeholder from the prompt"
    roots = content_roots(text)
    counts: dict[str, int] = {}
    for word_root in roots:
        counts[word_root] = counts.get(word_root, 0) + 1
        if counts[word_root] >= LOOP:
            return "a word repeated over and over"
    held = roots_of(source)
    supported = sum(1 for word_root in roots if known(word_root, held))
    if roots and supported < MIN_SUPPORTED * len(roots):
        return "most of its words are not in what it summarises"
    return None
