"""Scrubbing a text of its quotes of an erased one (docs/architecture.md, "Erasure"): the sentences
that quote it go, the rest of the text stays; in front matter, the whole line (its YAML would break
otherwise). Used on summaries, the journal, core files and commit messages, in the present and in
every commit (`vault/forget/history_filter.py`), and to guard a re-written summary (`core/erasing.py`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

SENTENCE_END = ".!?"
EMPTY_LINE = re.compile(r"^\s*(?:[-*+]|\d+[.)])?\s*$")


class Scrubber:
    """Takes the sentences quoting any of `texts` (literal) or matching any of `patterns` (regular
    expressions) out of a text; in front matter, the whole line."""

    def __init__(self, texts: Iterable[str], patterns: Iterable[str] = ()) -> None:
        parts = [re.escape(t) for t in sorted(set(texts), key=len, reverse=True) if t]
        parts += [f"(?:{p})" for p in patterns if p]
        self.regex = re.compile("|".join(parts)) if parts else None

    def matches(self, text: str) -> bool:
        return self.regex is not None and self.regex.search(text) is not None

    def scrub_bytes(self, data: bytes) -> bytes:
        if self.regex is None:
            return data
        text = data.decode("utf-8", "surrogateescape")
        clean = self.scrub(text)
        return data if clean == text else clean.encode("utf-8", "surrogateescape")

    def scrub(self, text: str) -> str:
        if not self.matches(text):
            return text
        # A quote spanning lines (a multi-paragraph turn) goes first, whole.
        text = self.regex.sub(lambda m: "" if "\n" in m.group() else m.group(), text)
        lines = text.split("\n")
        end = front_matter_end(lines)
        kept = []
        for number, line in enumerate(lines):
            if not self.matches(line):
                kept.append(line)
            elif number >= end:
                line = self.scrub_line(line)
                if not EMPTY_LINE.match(line):
                    kept.append(line)
            # a front matter line that quotes it goes whole (its YAML would be broken otherwise)
        return "\n".join(kept)

    def scrub_line(self, line: str) -> str:
        for _ in range(1000):  # each turn removes at least one match
            found = self.regex.search(line)
            if found is None:
                break
            start, end = found.span()
            if any(mark in found.group() for mark in SENTENCE_END):  # a quote of whole sentences: itself
                while end < len(line) and line[end] in " \t":
                    end += 1
            else:  # words inside a sentence: the sentence
                start, end = sentence_span(line, start, end)
            line = line[:start] + line[end:]
        return line.rstrip()


def front_matter_end(lines: list[str]) -> int:
    """The index of the first body line (0 when there is no front matter)."""
    if not lines or lines[0].strip() != "---":
        return 0
    for number in range(1, len(lines)):
        if lines[number].strip() == "---":
            return number + 1
    return 0


def sentence_span(line: str, start: int, end: int) -> tuple[int, int]:
    """The sentence of `line` around [start, end): from after the previous sentence's end (". ") to
    its own end mark and the spaces after it."""
    while start > 0 and not (line[start - 1] in " \t" and start >= 2 and line[start - 2] in SENTENCE_END):
        start -= 1
    while end < len(line) and not (line[end] in SENTENCE_END and (end + 1 == len(line) or line[end + 1] in " \t")):
        end += 1
    end = min(end + 1, len(line))
    while end < len(line) and line[end] in " \t":
        end += 1
    return start, end
