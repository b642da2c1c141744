"""Where the secrets of a text are: the one finder behind redaction and the id checks (docs/architecture.md,
"Redaction"). Matching runs on the text's NFKC form with invisible format characters left out (a
full-width `ｇｈｐ_` token, a zero-width space inside one); what is found is given in the text's own
positions. Token shapes: secret_tokens.py; values in a secret's place: secret_keywords.py."""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass

from memvault.text.secret_keywords import find_keyword_values
from memvault.text.secret_tokens import find_tokens

MARKED = re.compile(r"\[redacted: [a-z0-9-]+\]")
# Characters NFKC keeps but a secret never holds: a zero-width space pasted into a token hides it.
INVISIBLE = re.compile("[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
NON_ASCII = re.compile(r"[^\x00-\x7f]+")


@dataclass(frozen=True)
class Finding:
    kind: str
    start: int
    end: int


class View:
    """A text as it is matched (NFKC, no invisible characters) and the way back to the text's own
    positions. Most texts are their own view; a changed one keeps a list of segments."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts: list[int] = []  # a segment's start in the view
        self.origins: list[int] = []  # ... and in the text
        self.same: list[bool] = []  # an unchanged run (True) or one changed character (False)
        if text.isascii() or (unicodedata.is_normalized("NFKC", text) and not INVISIBLE.search(text)):
            self.view = text
            return
        pieces, done, length = [], 0, 0
        for run in NON_ASCII.finditer(text):
            if run.start() > done:
                self.add(length, done, True)
                pieces.append(text[done:run.start()])
                length += run.start() - done
            for offset, char in enumerate(run.group()):
                form = "" if INVISIBLE.match(char) else unicodedata.normalize("NFKC", char)
                if form == char:
                    if not self.same or not self.same[-1] or self.next_origin(length) != run.start() + offset:
                        self.add(length, run.start() + offset, True)
                elif form:
                    self.add(length, run.start() + offset, False)
                pieces.append(form)
                length += len(form)
            done = run.end()
        if done < len(text):
            self.add(length, done, True)
            pieces.append(text[done:])
        self.view = "".join(pieces)

    def add(self, start: int, origin: int, same: bool) -> None:
        self.starts.append(start)
        self.origins.append(origin)
        self.same.append(same)

    def next_origin(self, length: int) -> int:
        return self.origins[-1] + length - self.starts[-1]

    def origin(self, pos: int) -> int:
        """The text's position of the view's character at `pos`."""
        if not self.starts:
            return pos
        i = max(0, bisect.bisect_right(self.starts, pos) - 1)
        return self.origins[i] + (pos - self.starts[i] if self.same[i] else 0)

    def span(self, start: int, end: int) -> tuple[int, int]:
        return self.origin(start), self.origin(end - 1) + 1


def lower_same_length(view: str) -> str:
    lowered = view.lower()
    if len(lowered) == len(view):
        return lowered
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in view)  # "İ" lowers to two characters


LONG_TEXT = 100_000  # a text this long has its findings kept for the next look (one text at a time)
LONG_TEXT = 100_000  # a text this long has its findings kept for the next look (one text at a time)
_last: tuple[str, list[Finding]] = ("", [])


def find_secrets(text: str) -> list[Finding]:
    """The secrets in `text`, left to right, none overlapping (a token's shape wins over a keyword's
    value; then the first found). A long text's findings are kept for the next look at the same text:
    the guard, the transaction and the commit subject each look at a 20 MB add."""
    global _last
    if not text:
        return []
    if len(text) >= LONG_TEXT and text == _last[0]:
        return list(_last[1])
    view = View(text)
    lowered = lower_same_length(view.view)
    found: list[Finding] = []
    for kind, start, end in find_tokens(view.view, lowered) + find_keyword_values(view.view, lowered):
        start, end = view.span(start, end)
        if end <= start or MARKED.fullmatch(text[start:end]):
            continue
        if any(start < f.end and f.start < end for f in found):
            continue
        found.append(Finding(kind, start, end))
    found.sort(key=lambda f: f.start)
    if len(text) >= LONG_TEXT:
        _last = (text, list(found))
    return found


def holds_secret(text: str) -> bool:
    """Whether `text` holds a secret's value (a token, a key, "my password is ..."), not just names
    one: a person's own "I keep my secrets in a notebook" is a memory like any other."""
    return bool(find_secrets(text))
