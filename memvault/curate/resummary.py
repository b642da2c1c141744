"""Re-summarising after an erase (docs/architecture.md, "Erasure"): a conversation summary or a session
summary that quoted an erased text is written again by the LLM from what remains (the conversation's
remaining facts; the session's remaining user turns), never from the erased text, through the same
prompts as the rolling summary (curate/summary.py) and the session summary (curate/policy.py).

The model is not trusted: an answer that quotes an erased text, is empty, or is the wreck of an
answer (runaway length, a word looping, a placeholder, mostly words its input does not hold) is
refused with the reason, and the caller keeps the summary with the quoting sentences removed."""

from __future__ import annotations

from memvault.curate.jsonish import strip_thinking
from memvault.curate.llm import LLM
from memvault.curate.policy import SESSION_PROMPT, transcript
from memvault.curate.summary import clean_summary, summary_messages, summary_problem
from memvault.errors import LLMError
from memvault.vault.forget.scrub import Scrubber


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
    """Why a re-written summary is refused, or None when it may replace the old one: it quotes an
    erased text, or it is no summary of `source` (curate.summary.summary_problem)."""
    if text.strip() and erased.matches(text):
        return "it quotes an erased text"
    return summary_problem(text, source)
