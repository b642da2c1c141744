"""Lexical normalisation: the same function shapes text when it is indexed and when it is searched.

SQLite's unicode61 tokenizer keeps a run of CJK ideographs as one token, so "東京" would never match
a query for "京都"; and it strips accents only from some scripts. Normalising in Python first, the
same way on both sides, gives one predictable behaviour for every script.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime

# Bumped whenever normalise(), the tokenizer or the turn context changes: the index rebuilds its
# FTS table on a mismatch.
LEXICAL_VERSION = "3"
# porter stems English words ("hiking" finds "hike"); it leaves words of other scripts alone.
# Measured on LoCoMo (BM25 alone, recall@10): 0.683 without it, 0.714 with it.
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"

# A conversation turn is often meaningless alone ("Yes! It was so fulfilling.") and a question names
# what the exchange was about, not the words of the one turn that answers it. So each turn is indexed
# with the text of up to CONTEXT_TURNS turns before and after it in its conversation (by time), in a
# second column that BM25 weighs at CONTEXT_WEIGHT of the turn's own words. Facts and summaries stand
# alone (no context). Measured on LoCoMo, BM25 alone, recall@10: no context 0.605; 1 turn each side at
# weight 0.3: 0.692; 2 turns: 0.714 (0.2: 0.707, 0.5: 0.716); 3 turns: 0.710. The lexical side only:
# a vector of the turn plus context would have to be re-embedded whenever a neighbour arrives.
TURN_ROLES = ("user", "assistant")
CONTEXT_TURNS = 2
CONTEXT_WEIGHT = 0.3
MAX_QUERY_TOKENS = 64

# Questions name a time the words of the answer do not: "What dish did Nate make on 9 November,
# 2022?", "... in April 2022?". So every entry is also indexed with the date it was written, as words
# ("9 november 2022"), in a third column weighed at DATE_WEIGHT of its own words. The date comes from
# the entry's `created_at` (in UTC: entries carry no zone of their own), so it derives from the file.
# LoCoMo, default pipeline recall@10, weight chosen on conversations 0-4 (0.15: 0.756, 0.3: 0.758,
# 0.6: 0.760, 1.0: 0.762; no date: 0.747), reported on the held-out 5-9: 0.714 without, 0.729 with.
DATE_WEIGHT = 1.0

# Ideographs, kana and Hangul syllables: one token per character, since these scripts do not
# separate words with spaces.
_CJK = re.compile(
    "([\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3040-\u30ff\u3100-\u312f\u31a0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9d\U00020000-\U0003134f])"
)
_ASCII_NON_WORD = re.compile(r"[^a-z0-9]+")
# Accents are dropped only from European scripts ("café" -> "cafe", "ё" -> "е"); in Indic scripts
# or kana the combining marks are part of the letter and must stay.
_STRIP_MARKS_BELOW = "\u0530"

# A short English stop list (as in the LoCoMo BM25 reference): these words match nearly every
# entry, so they add cost and noise to an OR query without adding meaning.
STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves s t d ll m re ve""".split()
)


def normalise(text: str) -> str:
    """Text as the lexical index sees it: casefolded, accents stripped, punctuation gone,
    each CJK/kana/Hangul character a word of its own, words separated by single spaces."""
    if text.isascii():
        return " ".join(_ASCII_NON_WORD.sub(" ", text.lower()).split())
    kept: list[str] = []
    strip_marks = False
    for char in unicodedata.normalize("NFKD", text.casefold()):
        if unicodedata.combining(char):
            if not strip_marks:
                kept.append(char)
            continue
        strip_marks = char < _STRIP_MARKS_BELOW
        category = unicodedata.category(char)
        kept.append(char if category[0] in "LNM" else " ")
    # NFC puts back what NFKD split apart and we kept: Hangul syllables, voiced kana.
    joined = unicodedata.normalize("NFC", "".join(kept))
    return " ".join(_CJK.sub(r" \1 ", joined).split())


def date_words(epoch: float) -> str:
    """The calendar date of an entry as indexed words: "9 november 2022" (English month names, UTC)."""
    moment = datetime.fromtimestamp(float(epoch), UTC)
    return f"{moment.day} {_MONTHS[moment.month - 1]} {moment.year}"


_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")


def query_terms(text: str, drop_stop_words: bool = True) -> list[str]:
    """The distinct words of a query, in order; stop words dropped unless nothing else is left."""
    words = list(dict.fromkeys(normalise(text).split()))
    if drop_stop_words:
        meaningful = [w for w in words if w not in STOP_WORDS]
        words = meaningful or words
    return words[:MAX_QUERY_TOKENS]


def fts_query(text: str, drop_stop_words: bool = True) -> str | None:
    """A safe FTS5 MATCH expression for free text: every word quoted, OR-joined; None if empty.

    Quoting each word means nothing a user types (quotes, `*`, `NEAR(`, `OR`, column filters)
    is ever read as FTS5 syntax.
    """
    return fts_expression(query_terms(text, drop_stop_words))


def fts_expression(words: list[str]) -> str | None:
    """These words OR-joined, each quoted (see `fts_query`); None for no words."""
    if not words:
        return None
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in words)
