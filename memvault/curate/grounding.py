"""The grounding guard: what an LLM says becomes a memory only if the user's words support it.

Local and model-independent (docs/architecture.md, Curation: "the model is not trusted"):
- a fact's `evidence`, when given, must be found in the words it was taken from (`Source.said`):
  compared normalised (Unicode compatibility forms, accents, case, punctuation, contractions,
  whitespace), exactly or, fuzzily, with every content word and 80% of all its words there;
- a fact's content words (stop-words, the user's person words and a few neutral frame words such
  as "called" aside; compared by a light stem, so "moved" matches "move") must all come from what
  it was taken from or the context the LLM was given (`Source.said` + `Source.context`);
- a fact that equals or nearly equals one of the prompts' examples is dropped unless the source says
  it (a small model copies examples);
- a degenerate text (runaway length, a word repeated over and over, a placeholder) is dropped;
- a triple is kept only when its subject, predicate and object come from its fact's text.
Every check answers with the reason a text is refused (None when it is supported): callers turn
reasons into DROP events, so nothing is dropped silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memvault.vault.wording import (
    FREE_WORDS,
    NEGATIONS,
    content_roots,
    known,
    normalised,
    root,
    roots_of,
    unsupported_words,
    words,
)

MAX_FACT_CHARS = 500  # a fact is one sentence or two; longer is a runaway answer
MAX_REPEATS = 4  # a content word said this many times in one fact is a loop, not a fact
EVIDENCE_SHARE = 0.8  # of an evidence quote's words that must be in the source when it is not verbatim
EXAMPLE_SIMILARITY = 0.6  # content-word Jaccard at or above which a fact is the prompt's example

PLACEHOLDER = re.compile(r"<[^<>\n]{1,40}>")


@dataclass(frozen=True)
class Source:
    """What an LLM's facts were taken from: `said`, the user's own words (evidence is looked for
    here), and `context`, the other turns it was shown (content words may come from there too)."""

    said: str
    context: str = ""

    @property
    def roots(self) -> frozenset[str]:
        return roots_of(f"{self.said}\n{self.context}")


def degenerate(text: str) -> str | None:
    """Why a text is not a fact but the wreck of an answer (runaway, looping, a placeholder), or None."""
    if len(text) > MAX_FACT_CHARS:
        return f"degenerate: longer than {MAX_FACT_CHARS} characters"
    if PLACEHOLDER.search(text):
        return "copies a placeholder from the prompt's example"
    counts: dict[str, int] = {}
    for word_root in content_roots(text):
        counts[word_root] = counts.get(word_root, 0) + 1
        if counts[word_root] >= MAX_REPEATS:
            return "degenerate: a word repeated over and over"
    if not any(ch.isalnum() for ch in text):
        return "degenerate: no words"
    if "?" in text:
        return "a question, not a fact"
    return None


def evidence_problem(evidence: str, said: str) -> str | None:
    """Why an evidence quote is not the user's words, or None when it is found in `said`."""
    quote, source = normalised(evidence), normalised(said)
    if not quote:
        return None
    if f" {quote} " in f" {source} ":
        return None
    quoted = quote.split()
    source_roots = roots_of(said)
    found = [word for word in quoted if known(root(word), source_roots)]
    missing_content = [w for w in quoted if w not in FREE_WORDS and not known(root(w), source_roots)]
    if not missing_content and len(found) >= EVIDENCE_SHARE * len(quoted):
        return None
    return f"ungrounded: its evidence {clip_quote(evidence)} is not in the user's words"


def fact_problem(text: str, source: Source, evidence: str | None = None,
                 examples: tuple[str, ...] = (), negating: bool = False) -> str | None:
    """Why an extracted fact is not supported by its source, or None when it is (see the module).
    `negating`: the text may say "not" where the source does not (an update superseding a memory)."""
    reason = degenerate(text)
    if reason:
        return reason
    if evidence:
        reason = evidence_problem(evidence, source.said)
        if reason:
            return reason
    source_roots = source.roots
    reason = example_problem(text, source_roots, examples)
    if reason:
        return reason
    if not negating and set(words(text)) & NEGATIONS and not set(words(f"{source.said} {source.context}")) & NEGATIONS:
        return "ungrounded: it negates what the user said"
    missing = unsupported_words(text, source_roots)
    if missing:
        return f"ungrounded: {', '.join(dict.fromkeys(missing))} not in what the user said"
    if not content_roots(text):
        return "ungrounded: it says nothing about what the user said"
    return None


def example_problem(text: str, source_roots: frozenset[str], examples: tuple[str, ...]) -> str | None:
    """Why a fact is the prompt's example copied (equal or near, and the source does not say the
    example's own words), or None."""
    mine = set(content_roots(text))
    for example in examples:
        theirs = set(content_roots(example))
        if not theirs or not mine:
            continue
        shared = mine & theirs
        if len(shared) / len(mine | theirs) >= EXAMPLE_SIMILARITY and not all(
                known(word_root, source_roots) for word_root in shared):
            return f"copies the prompt's example {clip_quote(example)}"
    return None


def rewrite_problem(text: str, grounds: list[str], superseding: bool = False) -> str | None:
    """Why an LLM's rewrite (a reconcile ADD or UPDATE text) says more than the texts it was made
    from (`grounds`: the new fact, and the stored one it supersedes), or None. A superseding text may
    negate the old one ("The user lives in Berlin, not Paris")."""
    return fact_problem(text, Source("\n".join(grounds)), negating=superseding)


def clip_quote(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
