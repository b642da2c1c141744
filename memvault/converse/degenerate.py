"""A watcher for degenerate answers: a small model can loop (one line 686 times, a phrase forever)
until its context is full. Fed an answer as it streams, `LoopWatch` says when to stop and where the
good part ends, so what is stored never carries the loop.

Three signs, each cheap per delta:
- a run of words repeating with a period of 1 to MAX_PERIOD words ("I am here. I am here. ..."),
  long enough that prose does not do it (fewer repeats are needed for longer periods);
- one line (digits ignored, so a numbered list of the same line counts) coming back LINE_REPEATS times;
- runaway length: more characters than `max_chars` (limits.max_text_chars: no message may be longer).

The cut is where the loop began: the text before it is what the model said before it degenerated
(empty when it looped from the start, and then nothing is stored).
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

MAX_PERIOD = 64  # words in the longest repeating unit watched
LOOP_WORDS = 48  # a loop is found once its repeats span this many words ...
MIN_REPEATS = 3  # ... and the unit came back at least this often ...
MAX_REPEATS = 8  # ... or once any unit came back this often, however short
LINE_REPEATS = 6  # the same line (of at least LINE_MIN_WORDS words) this often anywhere in the answer
LINE_MIN_WORDS = 3
CODE_FACTOR = 4  # inside a ``` block code repeats itself honestly: loops must be this much longer
WORD = re.compile(r"\S+")
LETTER = re.compile(r"[^\W\d_]")
DIGITS = re.compile(r"\d+")
FENCE = "```"


@dataclass(frozen=True)
class Cut:
    """Where an answer degenerated: `keep` characters are good (the text before the loop), `shown`
    characters end the first copy of the repeating unit (what a reader needs to see what it said)."""

    keep: int
    shown: int
    reason: str


def repeats_needed(period: int, factor: int = 1) -> int:
    return factor * min(MAX_REPEATS, max(MIN_REPEATS, -(-LOOP_WORDS // period)))


def normal_word(word: str) -> str | None:
    """The word as compared (case and edge punctuation ignored); None for a token without a letter
    (numbers, table rules such as `| --- |`): a table of zeros is not a loop."""
    if not LETTER.search(word):
        return None
    return word.strip(".,;:!?\"'()[]*_`").lower()


def normal_line(line: str) -> str:
    return " ".join(DIGITS.sub("#", line).lower().split()).strip("-*#. ")


class LoopWatch:
    """Feed an answer's deltas in order; `feed` returns a `Cut` once the answer has degenerated
    (then stop reading it), else None. `check(text)` does the same for a whole answer. Linear in
    the answer's length: only the unfinished word and line are kept as text."""

    def __init__(self, max_chars: int = 100_000) -> None:
        self.max_chars = max_chars
        self.length = 0  # characters fed
        self.word_tail = ""  # text after the last whole word (from offset `length - len(word_tail)`)
        self.line_tail = ""  # the unfinished line
        self.starts: list[int] = []  # the character offset of each word seen whole (whitespace after it)
        self.recent: dict[str, deque[int]] = {}  # normalised word -> its indexes among the last MAX_PERIOD words
        self.runs = [0] * (MAX_PERIOD + 1)  # runs[p]: words in a row equal to the word p before them ...
        self.extended = [-2] * (MAX_PERIOD + 1)  # ... as of the word at this index (older: the run broke)
        self.lines: Counter[str] = Counter()
        self.first_line: dict[str, tuple[int, int]] = {}  # normal line -> (start, end) of its first copy
        self.in_code = False  # inside a ``` block (as of the last whole line)
        self.cut: Cut | None = None

    def feed(self, delta: str) -> Cut | None:
        if self.cut is not None or not delta:
            return self.cut
        self.length += len(delta)
        self.cut = self._scan_words(delta) or self._scan_lines(delta) or self._too_long()
        return self.cut

    def check(self, text: str) -> Cut | None:
        """A whole answer (not streamed): its Cut, or None when it is sound."""
        for line in text.splitlines(keepends=True):  # line by line, as a stream would come: code blocks known
            if self.feed(line):
                return self.cut
        return self.finish()

    def finish(self) -> Cut | None:
        """The answer has ended: its last word and line count too (nothing else would end them)."""
        if self.cut is None:
            self.length += 1  # as if a newline came, which the answer's length does not include
            self.cut = self._scan_words("\n") or self._scan_lines("\n")
            self.length -= 1
        return self.cut

    def _scan_words(self, delta: str) -> Cut | None:
        offset = self.length - len(delta) - len(self.word_tail)
        text = self.word_tail + delta
        last = 0
        for match in WORD.finditer(text):
            if match.end() == len(text):  # maybe unfinished: the next delta may continue it
                break
            last = match.end()
            word = normal_word(match.group())
            cut = self._word(word, offset + match.start()) if word else None
            if cut:
                return cut
        self.word_tail = text[last:]
        return None

    def _word(self, word: str, start: int) -> Cut | None:
        """Count the word into the runs of every period at which it repeats an earlier word. Only the
        periods where it does are touched (a run not extended at the last word counts as broken), so
        a word costs its repeats among the last MAX_PERIOD words, not MAX_PERIOD steps."""
        i = len(self.starts)
        self.starts.append(start)
        runs, extended = self.runs, self.extended
        factor = CODE_FACTOR if self.in_code else 1
        recent = self.recent.setdefault(word, deque())
        while recent and recent[0] < i - MAX_PERIOD:
            recent.popleft()
        for earlier in recent:
            period = i - earlier
            runs[period] = runs[period] + 1 if extended[period] == i - 1 else 1
            extended[period] = i
            if runs[period] >= period * (repeats_needed(period, factor) - 1):
                first = i - runs[period] - period + 1  # the loop's first word
                repeats = (runs[period] + period) // period
                return Cut(self.starts[first], self.starts[first + period],
                           f"the answer repeated a {period}-word phrase {repeats} times")
        recent.append(i)
        return None

    def _scan_lines(self, delta: str) -> Cut | None:
        offset = self.length - len(delta) - len(self.line_tail)
        text = self.line_tail + delta
        start = 0
        while (newline := text.find("\n", start)) >= 0:
            raw, begin, start = text[start:newline], offset + start, newline + 1
            if raw.lstrip().startswith(FENCE):
                self.in_code = not self.in_code
            line = normal_line(raw)
            if self.in_code or sum(1 for w in line.split() if LETTER.search(w)) < LINE_MIN_WORDS:
                continue
            self.lines[line] += 1
            self.first_line.setdefault(line, (begin, offset + newline))
            if self.lines[line] >= LINE_REPEATS:
                first, first_end = self.first_line[line]
                return Cut(first, first_end, f"the answer repeated a line {self.lines[line]} times")
        self.line_tail = text[start:]
        return None

    def _too_long(self) -> Cut | None:
        if self.length <= self.max_chars:
            return None
        return Cut(self.max_chars, self.max_chars, f"the answer ran past {self.max_chars:,} characters")


def good_part(text: str, max_chars: int = 100_000) -> tuple[str, Cut | None]:
    """A whole answer without its degenerate tail: (the text to keep, the Cut or None)."""
    cut = LoopWatch(max_chars).check(text)
    return (text if cut is None else text[:cut.keep].rstrip()), cut


def watched(deltas: Iterable[str], watch: LoopWatch) -> Iterator[str]:
    """The deltas until the answer degenerates (the last one up to the end of the loop's first round),
    then the source is closed: a generator over an LLM stream closes its HTTP response."""
    for delta in deltas:
        cut = watch.feed(delta)
        if cut is None:
            yield delta
            continue
        start = watch.length - len(delta)
        if cut.shown > start:
            yield delta[:cut.shown - start]
        close = getattr(deltas, "close", None)
        if close is not None:
            close()
        return
