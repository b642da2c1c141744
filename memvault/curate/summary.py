"""The rolling summary of one conversation: previous summary + new facts -> new summary.

When the LLM fails or says nothing, nothing is lost: the previous summary is kept word for word and
the new facts it does not yet contain are appended as bullet lines ("- fact"), so a later successful
update folds them in. The model is not trusted: an answer that is the wreck of one (`summary_problem`:
empty, runaway, a loop, a placeholder, a question, or mostly words that are not in the previous
summary and the facts, such as "The user's summary is incomplete.") is refused the same way, and
the refusal is a note.
"""

from __future__ import annotations

import re

from memvault.curate import prompts
from memvault.curate.jsonish import FENCE, strip_thinking
from memvault.curate.llm import LLM
from memvault.errors import LLMError

# Labels models put before the answer although asked not to.
LABEL = re.compile(r"^\s*(?:#+\s*)?(?:new |updated |rolling )?summary\s*:?\s*\n?", re.IGNORECASE)


MAX_GROWTH = 3  # a summary more than three times as long as what it summarises (plus a sentence) ran away
SLACK_CHARS = 300
MIN_SUPPORTED = 0.5  # of a summary's content words, at least half must come from its input (a paraphrase changes some)
LOOP = 6  # a content word said this many times is a loop, not a summary
# A summary about itself or about nothing ("The user's summary is incomplete."): the wreck of an answer.
ABOUT_ITSELF = re.compile(r"\b(?:summary|summari[sz]e|incomplete|no (?:new )?(?:facts|information|details)|not "
                          r"(?:provided|available|enough)|n/a|nothing to)\b", re.IGNORECASE)


def update_summary(llm: LLM | None, previous: str | None, new_facts: list[str], conversation: str,
                   notes: list[str] | None = None) -> str:
    """The new summary of `conversation` (its name, shown to the LLM for context). Without new facts
    the previous summary is returned unasked. Never raises LLMError (see the module docstring); a
    refused answer is said in `notes`."""
    if not any(f.strip() for f in new_facts) or llm is None:
        return fallback(previous, new_facts)
    try:
        answer = clean_summary(llm.complete(summary_messages(previous, new_facts, conversation)))
        problem = summary_problem(answer, "\n".join([previous or "", *new_facts]))
    except LLMError as exc:
        answer, problem = "", f"the LLM failed: {exc}"
    if problem is None:
        return answer
    if notes is not None:
        notes.append(f"the summary the LLM wrote was refused ({problem}): the new facts were added to the "
                     "previous summary as lines")
    return fallback(previous, new_facts)


def summary_problem(text: str, source: str) -> str | None:
    """Why `text` is not a summary of `source` (the previous summary and the new facts; the facts or
    turns an erase left), or None. Each sentence must not be degenerate as a fact would be
    (curate.grounding.degenerate: a placeholder, a word looping, a question, a runaway sentence);
    the whole must not run away nor loop, and most of its content words must come from `source`."""
    from memvault.curate.grounding import PLACEHOLDER, degenerate
    from memvault.text.wording import content_roots, known, roots_of

    if not text.strip() or not any(ch.isalnum() for ch in text):
        return "an empty answer"
    if len(text) > MAX_GROWTH * len(source) + SLACK_CHARS:
        return "a runaway answer"
    if PLACEHOLDER.search(text):
        return "it copies a placeholder from the prompt"
    if ABOUT_ITSELF.search(text) and not ABOUT_ITSELF.search(source):
        return "it speaks of the summary, not of what the user said"
    said: set[str] = set()
    for sentence in SENTENCE_END.split(text):
        sentence = sentence.strip(" -*\t")
        if not any(ch.isalnum() for ch in sentence):
            continue
        problem = degenerate(sentence)
        if problem:
            return problem
        if sentence.casefold() in said:
            return "a sentence said twice: a loop"
        said.add(sentence.casefold())
    roots = content_roots(text)
    counts: dict[str, int] = {}
    for word_root in roots:
        counts[word_root] = counts.get(word_root, 0) + 1
        if counts[word_root] >= LOOP:
            return "a word repeated over and over"
    held = roots_of(source)
    supported = sum(1 for word_root in roots if known(word_root, held))
    if not roots or supported < MIN_SUPPORTED * len(roots):
        return ("most of its words are" if supported else "its words are") + " not in what it summarises"
    return None


SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


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
