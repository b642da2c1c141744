"""The grounding guard: what an LLM says becomes a memory only if the user's words support it.

Local and model-independent (docs/architecture.md, Curation: "the model is not trusted"), judged by
meaning, not by words:
- a fact's `evidence`, when given, must be found in the words it was taken from (`Source.said`):
  compared normalised (Unicode compatibility forms, accents, case, punctuation, contractions,
  whitespace), exactly or, fuzzily, with every content word and 80% of all its words there;
- its names, numbers and dates must come from the source (curate.meaning.detail_problem);
- it must not change what the source means: another person's attribute given to the user, a
  negation dropped or added, a wish, plan, question or condition stated as done, a plan as past, two
  clauses mixed (curate.meaning.meaning_problem);
- an act or state of the user's needs words in which the user speaks of themselves
  (curate.self_talk: "working on cars must be rewarding" grounds no car of theirs);
- it must be close in meaning to what the user said: `support` blends the embedder's similarity of
  the fact (in the first person) to the closest sentence of the source with the share of its content
  words the source or its context holds (a light stem, a few one-polarity synonyms); without an
  embedder (a fake, a failure) the shared words alone decide, with a stricter bar;
- a fact that equals or nearly equals one of the prompts' examples is dropped unless the source says
  it (a small model copies examples);
- a degenerate text (runaway length, a word repeated over and over, a placeholder) is dropped;
- a triple is kept only when its subject, predicate and object come from its fact's text.
Every check answers with the reason a text is refused (None when it is supported): callers turn
reasons into DROP events, so nothing is dropped silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memvault.curate.meaning import (
    BOUNDARY,
    SENTENCE,
    as_first_person,
    detail_problem,
    implied_roots,
    meaning_problem,
    names_in,
    stance_on_answered,
    told_of_teller,
)
from memvault.curate.prompts import MAX_FACT_CHARS
from memvault.curate.self_talk import selfless_problem, speaks_of_self
from memvault.curate.voice import greeting_only
from memvault.text.wording import (
    FREE_WORDS,
    PLACEHOLDER,
    content_roots,
    known,
    known_any,
    normalised,
    root,
    roots_of,
    words,
)

MAX_REPEATS = 4  # a content word said this many times in one fact is a loop, not a fact
EVIDENCE_SHARE = 0.8  # of an evidence quote's words that must be in the source when it is not verbatim
EXAMPLE_SIMILARITY = 0.6  # content-word Jaccard at or above which a fact is the prompt's example
# How close a fact must be to its source (scripts/bench_grounding.py measured them on LoCoMo's
# conversations 0-4: a capable model's facts for their own turn against the same facts for another turn).
SIMILARITY_WEIGHT = 0.5  # support = weight * embedder similarity + (1 - weight) * share of words held
MIN_SUPPORT = 0.40
MIN_WORDS_ALONE = 0.34  # the share of words held needed when no embedder can judge
# Of a fact's content words, the share that must be the user's own (not only the other turns'): below it,
# a fact is another speaker's sentence given to the user (SmolLM2 stored the assistant's "I'm swamped
# with the kids & work" for a user who spoke of a support group).
MIN_OWN_SHARE = 0.25
OWN_SIMILARITY = 0.5  # ... unless it is this close in meaning to what the user said
# A fact this much closer in meaning to the turn the user answers than to the user's words, close to it, and
# with this share of its content words that turn's and not the user's, is that turn's statement: SmolLM2 gave
# the user the other speaker's charity race, camping trip and beach photo (5 of 6 such texts in two runs);
# of 400 LoCoMo facts for their own turn none is so ("Haven't tried it before" -> "The user hasn't tried
# skiing" is closer to "Have you tried skiing?", but "tried" is the user's word too). A near copy of that turn is
# its statement whatever words the user shares with it ("I'm going to keep working hard on it and see what
# happens", given to a user who said "Let's keep going ... and work hard"), and so is one sentence of several.
REPLIED_MARGIN = 0.2
MIN_REPLIED_SIMILARITY = 0.6
MIN_REPLIED_SHARE = 0.5
REPLIED_COPY = 0.9  # this close to the answered turn, a fact is its copy, whatever words the user shares
# ... and is that turn's when it is this much closer to it than to the user's words that say nothing of the
# user: one who answers "Not sure about your algorithm, but ..." is close to "I'm trying to make this
# algorithm work, but I'm stuck" (0.81), its copy closer still (0.99); one who says "I'm a huge fan of it"
# may be said to "do like nature" as the other did (0.95 against 0.80)
COPY_MARGIN = 0.1
# Words a statement does not end on: an answer cut short ("... with their"); and a verb of liking with
# nothing liked ("The user loves"; a longer text may end on one: "a book series the user loves").
CUT_OFF = frozenset("the a an and or but nor my your their our its".split())
LIKING = frozenset("loves likes enjoys wants prefers hates adores".split())
# A clause of a fact that holds none of the user's words must be this close in meaning to them.
MIN_CLAUSE_SIMILARITY = 0.3
# The start of a tag (`<div`, `</description_12`): markup a model wrote after a fact, never a fact.
MARKUP = re.compile(r"</?[A-Za-z_][\w.:-]*")
# The end of a JSON list a model left after its fact ("... staying determined and focused. }, {": SmolLM2).
JSON_TAIL = re.compile(r"[\s,]*[{}][\s,{}\[\]\"]*$")
ADDRESSED = re.compile(r"^(?:you|your|you're|you've|you'll|yours)\b", re.IGNORECASE)  # "You got it!"
# A placeholder in brackets ("[insert name of ...]"; memvault's own "[redacted: ...]" is not one).
BRACKET_PLACEHOLDER = re.compile(r"\[(?:insert|enter|add|your|name of)\b[^\[\]]{0,80}\]", re.IGNORECASE)
# The user as the one a verb of speaking or helping is done to by the user ("The user reminded the user that
# every problem has a solution": Qwen2.5, the other speaker's place taken by the user); "themselves" is not one.
SELF_OBJECT = re.compile(r"\bthe user (?:also |just )?(?:remind|tell|told|ask|thank|encourag|congratulat|assur|convinc"
                         r"|teach|taught|invit|urg|advis)\w* the user\b(?!['’]s)", re.IGNORECASE)
MIN_SENTENCE_ROOTS = 2  # a sentence of a fact with fewer content words is judged with the whole
# A model too weak to reword (curation.literal_models) invents when it does: its facts keep to the user's own
# words. Of SmolLM2's 119 texts the other checks kept in three 200-message runs (bench_curation_quality --skip
# 57, 76, 95), 21 had two or more content words the user did not say, a quarter or more of the text's or of a
# sentence's: 15 wrong, half wrong or garbled ("was inspired by a LGBTQ center, where the user saw so many
# people who are all united and strong" from "I painted this after I visited a LGBTQ center"), 6 right; of the
# others, 3 said under two content words ("The user thinks so."), and 1 of the rest was wrong. On a fourth run
# (--skip 114) it refused 3 texts of 34, each wrong, and a clause ("..., but it also brings about a new
# perspective on life") 1 more. A capable model's facts reword (half of LoCoMo's own-turn facts would be
# refused so): they are not judged by this. Since, one new word is enough when it is a quarter of a short fact
# ("The user is trying to balance their hobbies with their work" of a user who spoke of no work).
LITERAL_NEW_SHARE = 0.25
MIN_LITERAL_ROOTS = 2  # ... and say something: "The user thinks so.", "The user will be there soon too."
# The reasons of the closeness checks, the last ones made: a fact refused with one of them passed every
# other check (names, numbers, dates, meaning, wrecks, the prompt's examples), so a second judge may
# overrule them (curate.judge).
CLOSENESS = ("ungrounded: not close in meaning", "ungrounded: too few of its words")



@dataclass(frozen=True)
class Source:
    """What an LLM's facts were taken from: `said`, the user's own words (evidence is looked for
    here), and `context`, the other turns it was shown (content words may come from there too)."""

    said: str
    context: str = ""
    # The embedder that judges closeness of meaning (memvault.models.embedders); None: words alone.
    embedder: Any = field(default=None, compare=False)
    # The turn just before the user's, which their words answer (part of `context`); None: all of `context`.
    replied: str | None = None
    # The facts come from a model that rewords by inventing (curation.literal_models): they keep to `said`.
    literal: bool = False
    vectors: dict = field(default_factory=dict, compare=False, repr=False)  # the source's, embedded once

    @property
    def roots(self) -> frozenset[str]:
        text = f"{self.said}\n{self.context}"
        return roots_of(text) | implied_roots(text)

    @property
    def answered(self) -> str:
        """What the user's words answer: the turn just before them, or all of `context` when it is not known."""
        return self.context if self.replied is None else self.replied

    def held_roots(self, fact: str) -> frozenset[str]:
        """The roots a fact's words may come from to count as close: what the user said, the turn it answers,
        and of the older turns only the names the fact takes from them ("there" -> Lisbon). Six turns'
        words hold much of what a fact for another turn says (LoCoMo: 9% of such facts kept, 5% so)."""
        named = {root(name) for name in names_in(fact)} & roots_of(self.context)
        return roots_of(self.said) | implied_roots(self.said) | named | roots_of(self.answered)

    def similarity(self, text: str, of_replied: bool = False) -> float | None:
        """The cosine of `text` (in the first person) to the closest sentence of `said` (or all of it), or with
        `of_replied` of the turn it answers; None when there is no embedder or it fails: the guard then judges
        by words alone."""
        if self.embedder is None or self.vectors.get("failed"):
            return None
        import numpy as np  # here, not at the top: `add --no-llm` loads this module and never embeds

        key = "replied units" if of_replied else "units"
        try:
            if key not in self.vectors:
                self.vectors[key] = np.asarray(self.embedder.embed(units_of(self.replied if of_replied else self.said),
                                                                   kind="passage"))
            if ("fact", text) not in self.vectors:
                self.vectors["fact", text] = np.asarray(self.embedder.embed([as_first_person(text)], kind="passage"))[0]
        except Exception:  # noqa: BLE001 - any embedder failure: the guard must never abort an add
            self.vectors["failed"] = True
            return None
        return float(np.max(self.vectors[key] @ self.vectors["fact", text]))


def units_of(said: str) -> list[str]:
    """What a fact's closeness is judged against: the whole, each sentence, each clause of 3+ words."""
    units = [as_first_person(said)] + [as_first_person(s) for s in SENTENCE.split(said) if s.strip()]
    return units + [part for s in SENTENCE.split(said) for part in BOUNDARY.split(as_first_person(s))
                    if part and len(part.split()) >= 3]


def degenerate(text: str) -> str | None:
    """Why a text is not a fact but the wreck of an answer (runaway, looping, a placeholder), or None."""
    if len(text) > MAX_FACT_CHARS:
        return f"degenerate: longer than {MAX_FACT_CHARS} characters"
    if PLACEHOLDER.search(text) or BRACKET_PLACEHOLDER.search(text):
        return "copies a placeholder from the prompt's example"
    if greeting_only(text):
        return "a greeting, not a fact"
    if ADDRESSED.match(text.strip()):
        return "said to the other speaker, not a fact"
    markup = MARKUP.search(text) or JSON_TAIL.search(text)
    if markup:
        return f"degenerate: markup the model wrote ({markup.group(0).strip()!r})"
    counts: dict[str, int] = {}
    for word_root in content_roots(text):
        counts[word_root] = counts.get(word_root, 0) + 1
        if counts[word_root] >= MAX_REPEATS:
            return "degenerate: a word repeated over and over"
    if not any(ch.isalnum() for ch in text):
        return "degenerate: no words"
    sentences = [normalised(sentence) for sentence in SENTENCE.split(text) if sentence.strip()]
    if len(set(sentences)) < len(sentences):
        return "degenerate: a sentence repeated"  # SmolLM2: "... Such a special moment. such a special moment."
    last = sentences[-1].split() if sentences else []
    if last and (last[-1] in CUT_OFF or (len(last) <= 3 and last[-1] in LIKING)):
        return "degenerate: cut off mid-sentence"  # SmolLM2: "The user loves"
    if len(text.split()) < 2:
        return "degenerate: a single word is not a fact"
    if "?" in text:
        return "a question, not a fact"
    if SELF_OBJECT.search(text):
        return "degenerate: the user does it to the user (a listener's place taken by the user)"
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
    if not content_roots(text):
        return "ungrounded: it says nothing about what the user said"
    return (detail_problem(text, f"{source.said}\n{source.context}")
            or meaning_problem(text, source.said, superseding=negating)
            or selfless_problem(text, source.said, source.answered)
            or others_words_problem(text, source) or teller_problem(text, source)
            or support_problem(text, source) or sentence_problem(text, source) or clause_problem(text, source)
            or literal_problem(text, source))


def closeness_only(reason: str | None) -> bool:
    """Whether `fact_problem` refused a fact for closeness alone: those checks come last, so every
    other one (evidence, names, numbers, dates, meaning, wrecks, the prompt's examples) passed."""
    return bool(reason) and reason.startswith(CLOSENESS)


def others_words_problem(text: str, source: Source) -> str | None:
    """Why a fact is the other turns' words given to the user rather than the user's own, or None. The
    other turns resolve a reference ("there" -> Paris), so some words may come from them, not most; a
    question or view of the user's may take its topic from the turn it answers ("What's next for you?")."""
    if not source.context.strip():
        return None
    mine = content_roots(text)
    own = roots_of(source.said) | implied_roots(source.said)
    if source.replied and stance_on_answered(text, source.said):
        own |= roots_of(source.replied)  # "What will you make next?": what "you" made is the answered turn's
    if sum(1 for word_root in mine if known(word_root, own)) / max(1, len(mine)) >= MIN_OWN_SHARE:
        return replied_problem(text, source)
    similarity = source.similarity(text)
    if similarity is not None and similarity >= OWN_SIMILARITY:
        return replied_problem(text, source)
    return "another speaker's words: hardly any of it is in what the user said"


def replied_problem(text: str, source: Source) -> str | None:
    """Why a fact is the answered turn's statement given to the user ("That charity race sounds great!" ->
    "The user ran a charity race"), or None: it is closer in meaning to that turn than to the user's words,
    and most of its words are that turn's alone."""
    if not (source.replied or "").strip():
        return None
    mine = content_roots(text)
    said, theirs_words = roots_of(source.said) | implied_roots(source.said), roots_of(source.replied)
    only_theirs = sum(1 for word_root in mine if known(word_root, theirs_words) and not known(word_root, said))
    theirs, own = source.similarity(text, of_replied=True), source.similarity(text)
    if theirs is None or own is None or theirs < MIN_REPLIED_SIMILARITY:
        return None
    copied = theirs >= REPLIED_COPY and not speaks_of_self(source.said)
    if theirs - own <= (COPY_MARGIN if copied else REPLIED_MARGIN):
        return None
    if only_theirs / max(1, len(mine)) < MIN_REPLIED_SHARE and theirs < REPLIED_COPY:
        return None  # the user's words say most of it too, and it is no copy of the answered turn
    return f"another speaker's words: closer to the turn it answers than to the user's ({theirs:.2f} > {own:.2f})"


def teller_problem(text: str, source: Source) -> str | None:
    """Why a fact gives the user an act the turn they answer tells of its own speaker, by a verb the user's
    words never use (curate.meaning.told_of_teller), when those words say nothing of the user, or None."""
    if not (source.replied or "").strip() or speaks_of_self(source.said):
        return None  # a user who speaks of themselves may share the act ("Yeah, plenty of times" of camping)
    told = told_of_teller(text, source.said, source.replied)
    return f"another speaker's: the turn it answers says it of its speaker, {clip_quote(told)}" if told else None


def sentence_problem(text: str, source: Source) -> str | None:
    """Why one sentence of a fact of several is not supported, though the whole is (a model that adds
    "I'm sorry for your loss." to a fact it copied), or None."""
    sentences = [part for part in SENTENCE.split(text) if len(content_roots(part)) >= MIN_SENTENCE_ROOTS]
    if len(sentences) < 2:
        return None
    for sentence in sentences:
        reason = support_problem(sentence, source) or replied_problem(sentence, source)
        if reason:
            return f"{reason}, in {clip_quote(sentence)}"
    return None


def clause_problem(text: str, source: Source) -> str | None:
    """Why one clause of a fact is invented though the whole is close to what the user said ("The user is
    a petite lady, and the user has a lot of love for turtles!" from "I love your turtles so much!"): none of
    its content words is the user's or the answered turn's, and it is not close in meaning to them."""
    held = source.held_roots(text)
    for part in clauses_saying(text):
        if known_any(content_roots(part), held):
            continue
        similarity = source.similarity(part)
        if similarity is None or similarity < MIN_CLAUSE_SIMILARITY:
            return f"{CLOSENESS[0]} to what the user said, in {clip_quote(part)}"
    return None


def clauses_saying(text: str, least: int = MIN_SENTENCE_ROOTS) -> list[str]:
    """The clauses of a text's sentences that say something: `least` content words or more."""
    return [part for sentence in SENTENCE.split(text) for part in BOUNDARY.split(sentence)
            if part and len(content_roots(part)) >= least]


def literal_problem(text: str, source: Source) -> str | None:
    """Why a fact of a model that must keep to the user's words (`Source.literal`) does not, or None."""
    if not source.literal:
        return None
    mine = content_roots(text)
    if len(mine) < MIN_LITERAL_ROOTS:
        return f"ungrounded: too short to say what the user said ({LITERAL_RULE})"
    own = roots_of(source.said) | implied_roots(source.said) | {root(name) for name in names_in(text)}
    # the whole, and each sentence or clause of several that says something ("This is what inspired the user
    # to write this story." after a sentence the user said; "..., but it also brings about a new perspective");
    # a piece none of whose words the user said is invented however short ("Serene and calming. The user is
    # so grateful for it." from "So serene and calming.")
    pieces = clauses_saying(text, least=1)
    for part in [text, *pieces] if len(pieces) > 1 else [text]:
        new = {root(word): word for word in words(part) if word not in FREE_WORDS and not known(root(word), own)}
        saying = len(set(content_roots(part)))
        said_nothing = part is not text and len(new) == saying
        share = len(new) / max(1, saying)
        if new and (said_nothing or share >= LITERAL_NEW_SHARE):
            return f"ungrounded: {', '.join(new.values())} not in what the user said ({LITERAL_RULE})"
    return None


LITERAL_RULE = "this model's facts keep to the user's words: curation.literal_models"


def support_problem(text: str, source: Source) -> str | None:
    """Why a fact is not close enough in meaning to what the user said (see the module), or None."""
    mine = content_roots(text)
    held = sum(1 for word_root in mine if known(word_root, source.held_roots(text))) / max(1, len(mine))
    similarity = source.similarity(text)
    if similarity is None:
        if held >= MIN_WORDS_ALONE:
            return None
        return f"ungrounded: too few of its words are in what the user said ({held:.2f} < {MIN_WORDS_ALONE})"
    support = SIMILARITY_WEIGHT * similarity + (1 - SIMILARITY_WEIGHT) * held
    if support >= MIN_SUPPORT:
        return None
    return f"ungrounded: not close in meaning to what the user said (support {support:.2f} < {MIN_SUPPORT})"


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


def rewrite_problem(text: str, grounds: list[str], superseding: bool = False, embedder: Any = None) -> str | None:
    """Why an LLM's rewrite (a reconcile ADD or UPDATE text) says more than the texts it was made
    from (`grounds`: the new fact, and the stored one it supersedes), or None. A superseding text may
    negate the old one ("The user lives in Berlin, not Paris")."""
    return fact_problem(text, Source("\n".join(grounds), embedder=embedder), negating=superseding)


def clip_quote(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
