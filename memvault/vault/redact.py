"""Secrets never reach the vault: every text on its way to disk has each secret's value replaced by a
marker (`[redacted: github-token]`) and keeps the rest. docs/architecture.md, "Redaction".

A secret is found by what it is: a vendor's token format (secret_tokens.py), or a value in a secret's
place, after a word that names a credential in some language (secret_keywords.py). Matching runs on
the text's NFKC form with invisible format characters left out (a full-width `ｇｈｐ_` token, a
zero-width space inside one), and what is found is replaced in the text as given.

All of memvault's secret patterns live behind this module: `redact` keeps the text and removes the
value; `holds_secret` says whether a text holds one (ids, which cannot be redacted, are refused);
`looks_secret` is the write policy's guard for what a model extracted, which also drops a candidate
that merely talks about a credential. The vault's transaction (`vault/transaction.py`) and the JSON
state files (`vault/jsonlines.py`, the scratchpad) call `redact`; `configure` applies the settings
(`redaction.enabled`, `redaction.allow`).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass

from memvault.vault.fields import MAX_METADATA_DEPTH
from memvault.vault.secret_keywords import find_keyword_values
from memvault.vault.secret_tokens import find_tokens

MARKER = "[redacted: {kind}]"
MARKED = re.compile(r"\[redacted: [a-z0-9-]+\]")

# The write policy's guard for model-extracted candidates (dropped, never stored, as a memory): one
# that names a credential ("the user's bank PIN hint is ...") or holds a secret's value.
SECRET_WORDS = re.compile(
    r"\b(pass(?:word|wd|phrase|code)s?|pwd|pin(?: code)?|api[ _-]?keys?|secret(?: key)?s?|access[ _-]?tokens?|"
    r"auth(?:entication)?[ _-]?tokens?|bearer tokens?|private[ _-]?keys?|credentials?|seed phrase|"
    r"recovery (?:phrase|codes?)|2fa codes?|otp)\b", re.IGNORECASE)
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
# How deep redact_value walks: twice the deepest metadata an entry may hold.
MAX_DEPTH = 2 * MAX_METADATA_DEPTH


class Redactor:
    """The secret rules in force: all of them, an allow-list (a regex a secret may match whole to be
    kept, such as a documentation example), or none (`enabled=False`)."""

    def __init__(self, enabled: bool = True, allow: str = "") -> None:
        self.enabled = enabled
        self.allow = re.compile(allow) if allow else None
        self.last: tuple[str, list[Finding]] = ("", [])  # a long text's findings, for the next look at it

    def find(self, text: str) -> list[Finding]:
        """The secrets in `text`, left to right, none overlapping (a token's shape wins over a keyword's
        value; then the first found)."""
        if not self.enabled or not text:
            return []
        if len(text) >= LONG_TEXT and text == self.last[0]:  # the guard, the transaction and the commit
            return list(self.last[1])                        # subject each look at a 20 MB add
        view = View(text)
        lowered = lower_same_length(view.view)
        found: list[Finding] = []
        for kind, start, end in find_tokens(view.view, lowered) + find_keyword_values(view.view, lowered):
            start, end = view.span(start, end)
            if end <= start or self.allowed(text[start:end]) or MARKED.fullmatch(text[start:end]):
                continue
            if any(start < f.end and f.start < end for f in found):
                continue
            found.append(Finding(kind, start, end))
        found.sort(key=lambda f: f.start)
        if len(text) >= LONG_TEXT:
            self.last = (text, list(found))
        return found

    def allowed(self, secret: str) -> bool:
        return self.allow is not None and self.allow.fullmatch(secret) is not None

    def redact(self, text: str) -> str:
        """`text` with each secret replaced by its marker."""
        findings = self.find(text)
        for finding in reversed(findings):
            text = text[:finding.start] + MARKER.format(kind=finding.kind) + text[finding.end:]
        return text

    def redact_value(self, value, depth: int = 0):
        """Every string inside a JSON-like value redacted (dict keys too): the state files' records.
        Past MAX_DEPTH levels the value is left as it is: nothing that deep is written (metadata is
        refused past 32 levels, with its own message), and recursing further would overflow the stack."""
        if isinstance(value, str):
            return self.redact(value)
        if depth > MAX_DEPTH:
            return value
        if isinstance(value, dict):
            return {self.redact_value(k): self.redact_value(v, depth + 1) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.redact_value(item, depth + 1) for item in value]
        return value


_EVERY_RULE = Redactor()  # the guards': the settings turn redaction off, never the guards
_active = _EVERY_RULE


def configure(enabled: bool = True, allow: str = "") -> None:
    """Apply the settings (`redaction.*`) for this process; memvault calls it when a vault is opened.
    An allow pattern that is not a regular expression is a ConfigError."""
    global _active
    from memvault.errors import ConfigError

    try:
        _active = Redactor(enabled, allow)
    except re.error as exc:
        raise ConfigError(f"redaction.allow is not a regular expression: {exc}") from None


def active() -> Redactor:
    return _active


def redact(text: str) -> str:
    """`text` as memvault may keep it: each secret's value replaced by `[redacted: <kind>]`."""
    return _active.redact(text)


def redact_value(value):
    return _active.redact_value(value)


def looks_secret(text: str) -> bool:
    """Whether a candidate memory talks about or holds a secret (the write policy drops what a model
    extracted when it does: "the user's bank PIN hint is their cat's name" is not kept either)."""
    return bool(SECRET_WORDS.search(text) or holds_secret(text))


def holds_secret(text: str) -> bool:
    """Whether `text` holds a secret's value (a token, a key, "my password is ..."), not just names
    one: a person's own "I keep my secrets in a notebook" is a memory like any other."""
    return bool(_EVERY_RULE.find(text))


# A token cut in two by a client: how much of each side is looked at together.
SPLIT_WINDOW = 120


def continued_secret(previous: str, text: str) -> int:
    """How many characters at the start of `text` finish a secret that `previous` (the conversation's
    previous user message) began: a token pasted in two messages, "my password is" then "hunter2".
    The two are joined as they were sent, and with a space; a secret that crosses the join is cut
    in `text` up to where it ends. A previous message stored already redacted ends in its marker:
    the token characters that follow it at the start of `text` are the rest of that secret."""
    if not _active.enabled or not previous or not text:
        return 0
    tail, head = previous[-SPLIT_WINDOW:], text[:SPLIT_WINDOW]
    cut = 0
    for joint in ("", " ", "\n"):
        joined = tail + joint + head
        border = len(tail) + len(joint)
        for finding in _active.find(joined):
            if finding.start <= border < finding.end:
                cut = max(cut, finding.end - border)
    if cut == 0 and MARKED.search(tail.rstrip()[-40:]) and tail.rstrip().endswith("]"):
        rest = re.match(r"[A-Za-z0-9_\-+/=.~]{6,}", head)
        if rest and tail == tail.rstrip():
            cut = rest.end()
    return cut


def redact_turn(previous: str | None, text: str) -> str:
    """`text` redacted, with the part that finishes a secret begun in `previous` marked too."""
    cut = continued_secret(previous or "", text)
    if cut:
        text = MARKER.format(kind="split-secret") + text[cut:]
    return redact(text)


REDACTED_FIELDS = ("text", "category", "subject", "object", "evidence")


def redact_entry(entry):
    """An Entry as the vault may keep it: its text, triple and metadata redacted (the same entry when
    nothing was found, so an exact import stays byte for byte)."""
    changes = {}
    for name in REDACTED_FIELDS:
        value = getattr(entry, name)
        if isinstance(value, str) and (clean := redact(value)) != value:
            changes[name] = clean
    if entry.metadata and (metadata := redact_value(entry.metadata)) != entry.metadata:
        changes["metadata"] = metadata
    return entry.replace(**changes) if changes else entry
