"""Secrets never reach the vault: every text on its way to disk has each secret's value replaced by a
marker (`[redacted: github-token]`) and keeps the rest. docs/architecture.md, "Redaction".

A secret is found by what it is: a vendor's token format (secret_tokens.py), or a value in a secret's
place, after a word that names a credential in some language (secret_keywords.py). Matching runs on
the text's NFKC form with invisible format characters left out (a full-width `ｇｈｐ_` token, a
zero-width space inside one), and what is found is replaced in the text as given.

All of memvault's secret patterns live behind this module: `redact` keeps the text and removes the
value; `holds_secret` says whether a text holds one (ids, which cannot be redacted, are refused);
`looks_secret` is the write policy's guard for what a model extracted, which also drops a candidate
that merely talks about a credential. The vault's transaction (`vault/write/transaction.py`) and the JSON
state files (`vault/format/jsonlines.py`, the scratchpad) call `redact`; `configure` applies the settings
(`redaction.enabled`, `redaction.allow`).
"""

from __future__ import annotations

import re

from memvault.text.secret_finder import MARKED, Finding, find_secrets, holds_secret

MARKER = "[redacted: {kind}]"

# The write policy's guard for model-extracted candidates (dropped, never stored, as a memory): one
# that names a credential ("the user's bank PIN hint is ...") or holds a secret's value.
SECRET_WORDS = re.compile(
    r"\b(pass(?:word|wd|phrase|code)s?|pwd|pin(?: code)?|api[ _-]?keys?|secret(?: key)?s?|access[ _-]?tokens?|"
    r"auth(?:entication)?[ _-]?tokens?|bearer tokens?|private[ _-]?keys?|credentials?|seed phrase|"
    r"recovery (?:phrase|codes?)|2fa codes?|otp)\b", re.IGNORECASE)
# How deep redact_value walks: twice the deepest metadata an entry may hold (vault.format.fields'
# MAX_METADATA_DEPTH, 32; text sits below the vault, so the number is written here).
MAX_DEPTH = 64


class Redactor:
    """The secret rules in force: all of them, an allow-list (a regex a secret may match whole to be
    kept, such as a documentation example), or none (`enabled=False`)."""

    def __init__(self, enabled: bool = True, allow: str = "") -> None:
        self.enabled = enabled
        self.allow = re.compile(allow) if allow else None

    def find(self, text: str) -> list[Finding]:
        """The secrets in `text` these settings redact (secret_finder.find_secrets, less the allowed)."""
        if not self.enabled:
            return []
        return [f for f in find_secrets(text) if not self.allowed(text[f.start:f.end])]

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


# A token cut in two by a client: how much of each side is looked at together.
SPLIT_WINDOW = 120


# The start of a message that may be the rest of a token: one run of token characters, 6 or more.
FRAGMENT = re.compile(r"[A-Za-z0-9_\-+/=.~]{6,}(?=\s|$)")


def continued_secret(previous: str, text: str) -> int:
    """How many characters at the start of `text` finish a secret that `previous` (the conversation's
    previous user message) began: "my password is" then "hunter2", or a token pasted in two. The
    two are joined with a space (and a newline); a secret that starts at or crosses the join is cut
    in `text` up to where it ends. Joined with nothing only when `text` starts with a token's
    fragment that looks machine-made: "hunter22" then "I like tea" are two messages, not one word.
    A previous message stored already redacted ends in its marker: such a fragment is its rest."""
    from memvault.text.secret_tokens import looks_random

    if not _active.enabled or not previous or not text:
        return 0
    tail, head = previous[-SPLIT_WINDOW:], text[:SPLIT_WINDOW]
    fragment = FRAGMENT.match(head)
    fragment = fragment if fragment and looks_random(fragment.group(), 6) else None
    cut = 0
    for joint in (" ", "\n", *([""] if fragment else [])):
        joined = tail + joint + head
        border = len(tail) + len(joint)
        for finding in _active.find(joined):
            if finding.start <= border < finding.end:
                cut = max(cut, finding.end - border)
    if cut == 0 and fragment and MARKED.search(tail[-40:]) and tail.endswith("]"):
        cut = fragment.end()
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
