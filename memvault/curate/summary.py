"""The rolling summary of one conversation: previous summary + new facts -> new summary.

When the LLM fails or says nothing, nothing is lost: the previous summary is kept word for word and
the new facts it does not yet contain are appended as bullet lines ("- fact"), so a later successful
update folds them in.
"""

from __future__ import annotations

import re

from memvault.curate import prompts
from memvault.curate.jsonish import FENCE, strip_thinking
from memvault.curate.llm import LLM
from memvault.errors import LLMError

# Labels models put before the answer although asked not to.
LABEL = re.compile(r"^\s*(?:#+\s*)?(?:new |updated |rolling )?summary\s*:?\s*\n?", re.IGNORECASE)


def update_summary(llm: LLM | None, previous: str | None, new_facts: list[str], conversation: str) -> str:
    """The new summary of `conversation` (its name, shown to the LLM for context). Without new facts
    the previous summary is returned unasked. Never raises LLMError (see the module docstring)."""
    if not any(f.strip() for f in new_facts) or llm is None:
        return fallback(previous, new_facts)
    try:
        answer = llm.complete(summary_messages(previous, new_facts, conversation))
    except LLMError:
        answer = ""
    return clean_summary(answer) or fallback(previous, new_facts)


def summary_messages(previous: str | None, new_facts: list[str], conversation: str) -> list[dict]:
    user = prompts.fill(
        prompts.SUMMARY_INPUT,
        conversation=conversation,
        previous=(previous or "").strip() or "(none yet)",
        facts=prompts.bullets([f.strip() for f in new_facts if f.strip()]),
    )
    return [{"role": "system", "content": prompts.SUMMARY}, {"role": "user", "content": user}]


def clean_summary(answer: str | None) -> str:
    """The summary text without reasoning blocks, code fences or a leading "Summary:" label."""
    text = strip_thinking(answer or "")
    fenced = FENCE.search(text)
    if fenced and not text[: fenced.start()].strip() and not text[fenced.end():].strip():
        text = fenced.group(2)
    return LABEL.sub("", text, count=1).strip()


def fallback(previous: str | None, new_facts: list[str]) -> str:
    """The previous summary unchanged, then each new fact it lacks as a bullet line."""
    missing: list[str] = []
    for fact in (f.strip() for f in new_facts):
        if fact and fact not in (previous or "") and fact not in missing:
            missing.append(fact)
    if not missing:
        return previous or ""
    return "\n".join(filter(None, [(previous or "").rstrip(), prompts.bullets(missing)]))
