"""The grounding guard: what an LLM says becomes a memory only if the user's words support it.

Local and model-independent (docs/architecture.md, Curation; DESIGN s11 "the model is not trusted"):
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
import unicodedata
from dataclasses import dataclass

MAX_FACT_CHARS = 500  # a fact is one sentence or two; longer is a runaway answer
MAX_REPEATS = 4  # a content word said this many times in one fact is a loop, not a fact
EVIDENCE_SHARE = 0.8  # of an evidence quote's words that must be in the source when it is not verbatim
EXAMPLE_SIMILARITY = 0.6  # content-word Jaccard at or above which a fact is the prompt's example
PREFIX_MATCH = 5  # two words sharing a prefix this long (and 3/4 of the shorter) are one word

WORD = re.compile(r"[^\W_]+", re.UNICODE)
PLACEHOLDER = re.compile(r"<[^<>\n]{1,40}>")
CONTRACTIONS = ((re.compile(r"n['’]t\b"), " not"), (re.compile(r"['’]m\b"), " am"), (re.compile(r"['’]re\b"), " are"),
                (re.compile(r"['’]ve\b"), " have"), (re.compile(r"['’]ll\b"), " will"), (re.compile(r"['’]d\b"), " would"),
                (re.compile(r"['’]s\b"), " s"))

# The user, however a fact or a message names them: a fact about the user may always say so.
PERSON_WORDS = frozenset("""
user users user's person i me my mine myself we us our ours you your yours yourself they them their theirs
he him his she her hers himself herself themselves
utilizador utilizadora usuário usuária usuario usuaria utilisateur utilisatrice nutzer nutzerin benutzer benutzerin
utente eu meu minha yo mi je moi mon ma mes ich mein meine
""".split())
# Words a third-person paraphrase adds without adding a claim ("The user's sister is called Ana").
FRAME_WORDS = frozenset("""
is are was were be been being am has have had having does do did called named name names known also currently
said says say told tells mentioned mentions stated states
now still there here who whom whose which that this these those it its one ones
""".split())
STOP_WORDS = frozenset("""
a an the and or but nor so yet if then than as of at by for from in into on onto to with within without about
above after against along among around before behind below beneath beside between beyond during except inside
near off out outside over past since through throughout till toward towards under until up upon via per
not no yes very just too quite rather really some any each every all both either neither many much more most
few less least other another such own same s t can could will would shall should may might must ought
what when where why how whatever whoever whenever wherever
o os as um uma uns umas de do da dos das em no na nos nas ao aos à e é ou que com para por pelo pela se não
el la los las un una unos unas del al y en es con para por su sus lo le les que
le la les un une des du de et en est à au aux dans pour par sur avec que qui ne pas
der die das den dem des ein eine einen einem einer und ist in im zu mit von für auf an dass nicht
""".split())
# A fact may say "not" only where the user said some negation (else "I like pizza" could come back
# as "The user does not like pizza").
NEGATIONS = frozenset("not no never nor none nothing neither without longer anymore nao nunca jamais nicht kein".split())
FREE_WORDS = PERSON_WORDS | FRAME_WORDS | STOP_WORDS | NEGATIONS
# Words a paraphrase swaps for one another without changing the claim: each root maps to its group's
# first. Kept small and of one polarity each: "likes" is supported by "love", never by "hate".
SYNONYMS = ("like love enjoy adore fond favourite favorite fan prefer",
            "dislike hate detest loathe", "live reside", "move relocate", "mother mom mum", "father dad",
            "job work employ", "child kid", "wife spouse husband partner")
# Relations a triple may name that its fact says in other words ("The user's bicycle ..." OWNS).
PREDICATE_WORDS = frozenset("own owns owned possess possesses relation related to".split())
USER_NAMES = frozenset({"user", "the user", "i", "me", "the user's", "user's", "users", "myself"})
SUFFIXES = ("ingly", "ings", "ing", "ied", "ies", "edly", "ed", "es", "s", "ly")


@dataclass(frozen=True)
class Source:
    """What an LLM's facts were taken from: `said`, the user's own words (evidence is looked for
    here), and `context`, the other turns it was shown (content words may come from there too)."""

    said: str
    context: str = ""

    @property
    def roots(self) -> frozenset[str]:
        return roots_of(f"{self.said}\n{self.context}")


def normalised(text: str) -> str:
    """`text` as the guard compares it: compatibility forms folded, accents removed, case folded,
    contractions spelled out, punctuation as spaces, one space between words."""
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    for pattern, spelled in CONTRACTIONS:
        text = pattern.sub(spelled, text)
    return " ".join(WORD.findall(text))


def words(text: str) -> list[str]:
    return normalised(text).split()


def stem(word: str) -> str:
    """A light stem: "moved", "moves", "moving" -> "mov"; "hives" -> "hiv"; "Ana" -> "ana"."""
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


SYNONYM_ROOT = {stem(word): stem(group.split()[0]) for group in SYNONYMS for word in group.split()}


def root(word: str) -> str:
    """The word's stem, or its synonym group's ("loves" -> "lik")."""
    stemmed = stem(word)
    return SYNONYM_ROOT.get(stemmed, stemmed)


def roots_of(text: str) -> frozenset[str]:
    return frozenset(root(word) for word in words(text))


def content_roots(text: str) -> list[str]:
    """The roots of the words that make a claim (stop, person and frame words aside), in order."""
    return [root(word) for word in words(text) if word not in FREE_WORDS]


def known(word_root: str, source_roots: frozenset[str]) -> bool:
    """Whether a root is among the source's, exactly or as the same word with another ending
    ("allergic" / "allergy": a shared prefix of 5+ letters and 3/4 of the shorter word)."""
    if word_root in source_roots:
        return True
    for other in source_roots:
        shared = len(_common_prefix(word_root, other))
        if shared >= PREFIX_MATCH and shared >= 0.75 * min(len(word_root), len(other)):
            return True
    return False


def _common_prefix(left: str, right: str) -> str:
    size = 0
    for a, b in zip(left, right):
        if a != b:
            break
        size += 1
    return left[:size]


def unsupported_words(text: str, source_roots: frozenset[str]) -> list[str]:
    """The content words of `text` the source does not hold (as written in `text`)."""
    return [word for word in words(text) if word not in FREE_WORDS and not known(root(word), source_roots)]


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
                 examples: tuple[str, ...] = ()) -> str | None:
    """Why an extracted fact is not supported by its source, or None when it is (see the module)."""
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
    if set(words(text)) & NEGATIONS and not set(words(f"{source.said} {source.context}")) & NEGATIONS:
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


def rewrite_problem(text: str, grounds: list[str]) -> str | None:
    """Why an LLM's rewrite (a reconcile ADD or UPDATE text, a promoted candidate) says more than
    the texts it was made from (`grounds`: the new fact, the stored one), or None."""
    return fact_problem(text, Source("\n".join(grounds)))


def triple_problem(text: str, triple: dict[str, str]) -> str | None:
    """Why a triple does not describe its fact's text, or None: its subject and object must be
    named in the text (the user by any of their names) and its predicate's words be the text's."""
    if not triple:
        return None
    text_roots = roots_of(text)
    says_user = bool(set(words(text)) & PERSON_WORDS)
    for key in ("subject", "object"):
        name = str(triple.get(key) or "")
        if normalised(name) in {normalised(alias) for alias in USER_NAMES}:
            if not says_user:
                return f"triple: its {key} {name!r} (the user) is not in the fact"
            continue
        if not content_roots(name) or unsupported_words(name, text_roots):
            return f"triple: its {key} {name!r} is not in the fact"
    predicate = " ".join(str(triple.get("predicate") or "").replace("_", " ").split())
    if [word for word in unsupported_words(predicate, text_roots) if word not in PREDICATE_WORDS]:
        return f"triple: its predicate {predicate.upper().replace(' ', '_')!r} is not what the fact says"
    return None


def consistent_triple(text: str, triple: dict[str, str]) -> dict[str, str]:
    """The triple fields to store with `text`: as given when consistent, else only the fields that
    are not the triple (category, evidence): the text is kept, the wrong triple is not."""
    if not triple or triple_problem(text, triple) is None:
        return dict(triple)
    return {key: value for key, value in triple.items() if key in ("category", "evidence")}


def clip_quote(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
