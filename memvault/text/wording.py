"""How memvault compares the words of two texts: normalised, lightly stemmed, with the words that
make no claim (stop-words, the user's person words, frame words such as "called") set aside.

The one home of this for the grounding guard (memvault.curate.grounding: is a fact in the user's
words?) and for triples (is a triple drawn from its fact's text? the graph, doctor and curation ask).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

WORD = re.compile(r"[^\W_]+", re.UNICODE)
# "I'd fixed it", "she'd been there": a 'd before a past participle is "had" (a "would" would be a wish).
PAST_PERFECT = (r"['’]d(?= (?:been|done|gone|seen|had|made|taken|given|got|gotten|known|thought|told|found|left"
                r"|lost|met|heard|written|forgotten|bought|brought|caught|taught|kept|slept|spent|sent|built|felt"
                r"|eaten|fallen|driven|ridden|flown|grown|shown|drawn|begun|broken|chosen|spoken|stolen|worn"
                r"|thrown|woken|torn|swum|sung|drunk"
                r"|already|\w{2,}[^e\W]ed)\b)")
CONTRACTIONS = tuple((re.compile(pattern), spelled) for pattern, spelled in (
    (r"n['’]t\b", " not"), (r"['’]m\b", " am"), (r"['’]re\b", " are"), (r"['’]ve\b", " have"),
    (r"['’]ll\b", " will"), (PAST_PERFECT, " had"), (r"['’]d\b", " would"), (r"['’]s\b", " s")))
PREFIX_MATCH = 5  # two words sharing a prefix this long (and 3/4 of the shorter) are one word
MAX_NAME_WORDS = 8  # a triple's subject, predicate or object longer than this is a sentence, not a name

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
due including various because while often usually sometimes recently always especially together
o os as um uma uns umas de do da dos das em no na nos nas ao aos à e é ou que com para por pelo pela se não
el la los las un una unos unas del al y en es con para por su sus lo le les que
le la les un une des du de et en est à au aux dans pour par sur avec que qui ne pas
der die das den dem des ein eine einen einem einer und ist in im zu mit von für auf an dass nicht
""".split())
# Negations make no claim of their own in a comparison of words; whether a fact keeps, drops or adds
# one is curate.meaning's judgement.
NEGATIONS = frozenset("not no never nor none nothing neither without longer anymore nao nunca jamais nicht kein"
                      .split())
FREE_WORDS = PERSON_WORDS | FRAME_WORDS | STOP_WORDS | NEGATIONS
# Words a paraphrase swaps for one another without changing the claim: each root maps to its group's
# first. Kept small and of one polarity each: "likes" is supported by "love", never by "hate".
SYNONYMS = ("like love enjoy adore fond favourite favorite fan prefer",
            "dislike hate detest loathe", "live reside", "move relocate", "mother mom mum", "father dad",
            "job work employ", "child kid", "wife spouse husband partner")
# Relations a triple may name that its fact says in other words ("The user's bicycle ..." OWNS).
PREDICATE_WORDS = frozenset("own owns owned possess possesses relation related to".split())
USER_NAMES = frozenset({"user", "the user", "i", "me", "the user's", "user's", "users", "myself"})
# A prompt's `<placeholder>` a small model copies instead of filling it in ("The user <who>", `object: <user>`).
PLACEHOLDER = re.compile(r"<[^<>\n]{1,40}>")
DOUBLING = frozenset({"ing", "ings", "ingly", "ed", "edly"})  # endings that double a short verb's last consonant
DOUBLED = frozenset("bdgmnprt")  # the consonants English doubles so ("stop" -> "stopped"); not l, s, z, f ("fall")
SUFFIXES = ("ingly", "ings", "ing", "ied", "ies", "edly", "ed", "es", "s", "ly")
# Irregular pasts and participles to their verb, so that "ran" is "run" and "wrote" "write" when a fact and
# what the user said are compared. Left out: forms that are words of their own too ("left", "saw", "found",
# "felt", "fell", "lay"), "read" (the same form), and the auxiliaries ("had", "was", "were", "said").
IRREGULAR_VERB = {form: verb for verb, forms in (
    ("run", "ran"), ("write", "wrote written"), ("drive", "drove driven"), ("eat", "ate eaten"),
    ("take", "took taken"), ("give", "gave given"), ("go", "went gone"), ("come", "came"), ("buy", "bought"),
    ("bring", "brought"), ("teach", "taught"), ("catch", "caught"), ("think", "thought"), ("sell", "sold"),
    ("tell", "told"), ("win", "won"), ("swim", "swam swum"), ("sing", "sang sung"), ("begin", "began begun"),
    ("choose", "chose chosen"), ("ride", "rode ridden"), ("fly", "flew flown"), ("grow", "grew grown"),
    ("know", "knew known"), ("throw", "threw thrown"), ("wear", "wore worn"), ("break", "broke broken"),
    ("speak", "spoke spoken"), ("steal", "stole stolen"), ("drink", "drank drunk"),
    ("forget", "forgot forgotten"), ("get", "got gotten"), ("make", "made"), ("do", "did done"), ("meet", "met"),
    ("pay", "paid"), ("spend", "spent"), ("send", "sent"), ("build", "built"), ("keep", "kept"),
    ("sleep", "slept"), ("hold", "held"), ("hear", "heard"), ("sit", "sat"), ("stand", "stood"),
    ("understand", "understood"), ("wake", "woke woken"), ("become", "became"), ("fight", "fought"),
    ("hide", "hid hidden"), ("lead", "led"), ("lose", "lost"), ("mean", "meant"), ("shoot", "shot"),
) for form in forms.split()}


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
    """A light stem: "moved", "moves", "moving" -> "mov"; "hives" -> "hiv"; "Ana" -> "ana"; "stopping" -> "stop";
    "ran" -> "run", "wrote" -> "writ" (IRREGULAR_VERB)."""
    word = IRREGULAR_VERB.get(word, word)
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            if suffix == "s" and word.endswith("ss"):
                break  # "miss", "class": no plural ("misses" loses its "es")
            word = word[: -len(suffix)] + ("y" if suffix in ("ies", "ied") else "")
            if suffix in DOUBLING and len(word) > 3 and word[-1] == word[-2] and word[-1] in DOUBLED:
                word = word[:-1]  # the consonant an ending doubled ("stopped", "planning"), not "added", "falling"
            if suffix in ("es", "ed") and word.endswith("e"):
                return word  # "agrees", "agreed": the verb's own "e" went with the ending, as "agree" -> "agre"
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


def known_any(word_roots: Iterable[str], source_roots: frozenset[str]) -> bool:
    """Whether any of the roots is among the source's (`known`)."""
    return any(known(word_root, source_roots) for word_root in word_roots)


def _common_prefix(left: str, right: str) -> str:
    size = 0
    for a, b in zip(left, right, strict=False):
        if a != b:
            break
        size += 1
    return left[:size]


def unsupported_words(text: str, source_roots: frozenset[str]) -> list[str]:
    """The content words of `text` the source does not hold (as written in `text`)."""
    return [word for word in words(text) if word not in FREE_WORDS and not known(root(word), source_roots)]


def triple_problem(text: str, triple: dict[str, str]) -> str | None:
    """Why a triple does not describe its fact's text, or None: its subject and object must be
    named in the text (the user by any of their names) and its predicate's words be the text's."""
    parts = [str(triple.get(key) or "").strip() for key in ("subject", "predicate", "object")]
    if not all(parts):
        return None  # not a triple (a category or evidence alone)
    if any(PLACEHOLDER.search(part) for part in parts):
        return "triple: it copies a placeholder from the prompt's example"
    if who(parts[0]) == who(parts[2]) or max(len(words(part)) for part in parts) > MAX_NAME_WORDS:
        return "triple: its subject, predicate and object are not three short names"
    text_roots = roots_of(text)
    says_user = bool(set(words(text)) & PERSON_WORDS)
    for key in ("subject", "object"):
        name = str(triple.get(key) or "")
        if who(name) == "user":
            if not says_user:
                return f"triple: its {key} {name!r} (the user) is not in the fact"
            continue
        if not content_roots(name) or unsupported_words(name, text_roots):
            return f"triple: its {key} {name!r} is not in the fact"
    predicate = " ".join(str(triple.get("predicate") or "").replace("_", " ").split())
    if set(words(predicate)) & PERSON_WORDS:  # "I speak": a piece of a sentence, not a relation
        return f"triple: its predicate {predicate.upper().replace(' ', '_')!r} is not a relation"
    if [word for word in unsupported_words(predicate, text_roots) if word not in PREDICATE_WORDS]:
        return f"triple: its predicate {predicate.upper().replace(' ', '_')!r} is not what the fact says"
    return None


USER_ALIASES = frozenset(normalised(alias) for alias in USER_NAMES)


def who(name: str) -> str:
    """A triple's subject or object as compared: "user" for any of the user's names, else normalised."""
    name = normalised(name)
    return "user" if name in USER_ALIASES else name


def consistent_triple(text: str, triple: dict[str, str]) -> dict[str, str]:
    """The triple fields to store with `text`: as given when consistent, else only the fields that
    are not the triple (category, evidence): the text is kept, the wrong triple is not."""
    if not triple or triple_problem(text, triple) is None:
        return dict(triple)
    return {key: value for key, value in triple.items() if key in ("category", "evidence")}


