"""The rolling summary of one conversation: previous summary + new facts -> new summary.

When the LLM fails or says nothing, nothing is lost: the previous summary is kept word for word and
the new facts it does not yet contain are appended as bullet lines ("- fact"), so a later successful
update folds them in. The model is not trusted: an answer that is the wreck of one (`summary_problem`:
empty, runaway, a loop, a placeholder, a question, the prompt's own instructions, a text about the
summary itself such as "The user's summary is incomplete.") or that says what its input does not (a
name, number or date not in it, another person's act given to the user, a negation dropped or added,
a sentence far in meaning from the previous summary and the facts) is refused the same way, and the
refusal is a note. Meaning, not words: "The user talks about travel and family" summarises "The user
flew to Tokyo" and "The user's sister lives in Porto".
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
# How close in meaning (MiniLM cosine, both sides in the first person) a sentence must be to its input, or
# to a window of WINDOW lines of it, when it does not take most of its words from it. Chosen on 13 sentences
# (abstractive summaries of five facts 0.42-0.65; unrelated ones, the prompt's text, "I am a helpful
# assistant" 0.02-0.26); tests/test_summary_guard.py holds others.
MIN_SIMILARITY = 0.35
WINDOW = 5
PROMPT_SHARE = 0.6  # of a sentence's content words taken from the prompt's instructions: it copies them
LOOP = 6  # a content word said this many times is a loop, not a summary
# A summary about itself or about nothing ("The user's summary is incomplete."): the wreck of an answer.
ABOUT_ITSELF = re.compile(r"\b(?:summary|summari[sz]e|incomplete|no (?:new )?(?:facts|information|details)|not "
                          r"(?:provided|available|enough)|n/a|nothing to)\b", re.IGNORECASE)


def update_summary(llm: LLM | None, previous: str | None, new_facts: list[str], conversation: str,
                   notes: list[str] | None = None, embedder=None, literal: bool = False) -> str:
    """The new summary of `conversation` (its name, shown to the LLM for context). Without new facts
    the previous summary is returned unasked. Never raises LLMError (see the module docstring); a
    refused answer is said in `notes`. `literal`: the model's words must be its input's (summary_problem)."""
    if not any(f.strip() for f in new_facts) or llm is None:
        return fallback(previous, new_facts)
    try:
        answer = clean_summary(llm.complete(summary_messages(previous, new_facts, conversation)))
        problem = summary_problem(answer, "\n".join([previous or "", *new_facts]), embedder, literal)
    except LLMError as exc:
        answer, problem = "", f"the LLM failed: {exc}"
    if problem is None:
        return answer
    if notes is not None:
        notes.append(f"the summary the LLM wrote was refused ({problem}): the new facts were added to the "
                     "previous summary as lines")
    return fallback(previous, new_facts)


def summary_problem(text: str, source: str, embedder=None, literal: bool = False) -> str | None:
    """Why `text` is not a summary of `source` (the previous summary and the new facts; a session's user
    turns; the facts or turns an erase left), or None. It must not be a wreck (empty, runaway, a
    placeholder, a loop, a text about the summary, the prompt's instructions; each sentence not
    degenerate as a fact would be: curate.grounding.degenerate), and each sentence must say what `source`
    says: its names, numbers and dates from it, nobody else's act given to the user, no negation dropped
    or added (curate.meaning), and close in meaning to it (`embedder`, memvault.models.embedders) or, with
    no embedder or most of its words its input's, most of its content words from it. With `literal` (a model
    that rewords by inventing, curation.literal_models) its words must be its input's, as that model's facts'
    (curate.grounding.literal_problem)."""
    from memvault.curate.grounding import PLACEHOLDER, Source, degenerate, literal_problem
    from memvault.text.wording import content_roots

    if not text.strip() or not any(ch.isalnum() for ch in text):
        return "an empty answer"
    if len(text) > MAX_GROWTH * len(source) + SLACK_CHARS:
        return "a runaway answer"
    if PLACEHOLDER.search(text):
        return "it copies a placeholder from the prompt"
    if ABOUT_ITSELF.search(text) and not ABOUT_ITSELF.search(source):
        return "it speaks of the summary, not of what the user said"
    counts: dict[str, int] = {}
    for word_root in content_roots(text):
        counts[word_root] = counts.get(word_root, 0) + 1
        if counts[word_root] >= LOOP:
            return "a word repeated over and over"
    said: set[str] = set()
    sentences = []
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
        sentences.append(sentence)
    return next(filter(None, (sentence_problem(s, source) for s in sentences)), None) \
        or added_phrase(sentences, source, embedder) or closeness_problem(text, sentences, source, embedder) \
        or literal_problem(text, Source(source, literal=literal))


def sentence_problem(sentence: str, source: str) -> str | None:
    """Why one sentence of a summary says what its input does not (names, numbers, dates; another
    person's act; a negation; the prompt's instructions), or None."""
    from memvault.curate.meaning import detail_problem, meaning_problem
    from memvault.text.wording import content_roots, known, roots_of

    mine = content_roots(sentence)
    instructions = roots_of(prompts.SUMMARY)
    if mine and sum(1 for r in mine if known(r, instructions)) >= PROMPT_SHARE * len(mine) \
            and share_held(sentence, source) < MIN_SUPPORTED:
        return "it copies the prompt's instructions"
    return detail_problem(sentence, source) or meaning_problem(sentence, source, folding=True)


def added_phrase(sentences: list[str], source: str, embedder) -> str | None:
    """Why a sentence carries a phrase of its own, set off by commas or a colon, that holds none of its
    input's words and is far from it in meaning: an embellishment ("In a moment of pure bliss, the user
    went hiking"), which the rest of the sentence, close to the input, would carry through; or None."""
    from memvault.text.wording import content_roots

    added = [phrase.strip() for sentence in sentences for phrase in PHRASE.split(sentence)
             if phrase.strip() != sentence and len(content_roots(phrase)) >= MIN_PHRASE_ROOTS
             and share_held(phrase, source) == 0]
    similarities = similarity(added, source, embedder) if added and embedder is not None else None
    for i, phrase in enumerate(added):
        if similarities is None or similarities[i] < MIN_SIMILARITY:
            return f"adds what it does not summarise: {phrase[:60]!r}"
    return None


def closeness_problem(text: str, sentences: list[str], source: str, embedder) -> str | None:
    """Why the summary is not close to what it summarises: with an embedder, a sentence far in meaning
    from the input (and not made of its words); without one (a fake, a failure), most of the whole
    text's content words not the input's."""
    if embedder is not None:
        far = [s for s in sentences if share_held(s, source) < MIN_SUPPORTED]
        similarities = similarity(far, source, embedder) if far else []
        if similarities is not None:
            for sentence, value in zip(far, similarities, strict=True):
                if value < MIN_SIMILARITY:
                    return f"not close in meaning to what it summarises: {sentence[:60]!r} ({value:.2f})"
            return None
    supported = share_held(text, source)
    if supported < MIN_SUPPORTED:
        return ("most of its words are" if supported else "its words are") + " not in what it summarises"
    return None


def share_held(text: str, source: str) -> float:
    """The share of `text`'s content words that `source` holds (or a faithful paraphrase of it may use)."""
    from memvault.curate.meaning import implied_roots
    from memvault.text.wording import content_roots, known, roots_of

    roots = content_roots(text)
    held = roots_of(source) | implied_roots(source)
    return sum(1 for r in roots if known(r, held)) / len(roots) if roots else 0.0


def similarity(sentences: list[str], source: str, embedder) -> list[float] | None:
    """Each sentence's cosine to the input, or to the closest window of its lines, both in the first
    person; None when the embedder fails (the words then decide)."""
    import numpy as np

    from memvault.curate.meaning import as_first_person

    lines = [line for line in source.splitlines() if line.strip()]
    units = [" ".join(lines)] + [" ".join(lines[i: i + WINDOW]) for i in range(0, max(0, len(lines) - WINDOW) + 1, 3)
                                 if len(lines) > WINDOW]
    try:
        theirs = np.asarray(embedder.embed([as_first_person(u) for u in units], kind="passage"))
        mine = np.asarray(embedder.embed([as_first_person(s) for s in sentences], kind="passage"))
    except Exception:  # noqa: BLE001 - any embedder failure: the words judge, a summary is never lost
        return None
    return [float(v) for v in (mine @ theirs.T).max(axis=1)]


SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
PHRASE = re.compile(r"\s*[,;:()]\s*|\s+[-–—]\s+")  # a sentence's phrases, as commas, colons and dashes set them off
MIN_PHRASE_ROOTS = 3  # a phrase with fewer content words ("Overall", "on Saturday") adds nothing to judge


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
