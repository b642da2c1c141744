"""The loop watcher (memvault.converse.degenerate) on what weak models really produce, and on honest
long texts that repeat themselves a little (tables, code, lists), which it must leave alone."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from memvault.converse.degenerate import (
    LINE_REPEATS,
    MAX_REPEATS,
    MIN_REPEATS,
    LoopWatch,
    good_part,
    repeats_needed,
    watched,
)

ROOT = Path(__file__).resolve().parent.parent
GOOD = "Your sister is called Ana."

LOOPS = {
    # the stored answer: one line 686 times
    "line": (GOOD + "\n" + "I am a helpful assistant.\n" * 686, GOOD),
    # a phrase looping inside one paragraph, no newline at all
    "phrase": (GOOD + " " + "and then we went to the market " * 200, GOOD),
    # one word for ever
    "word": ("Sure! " + "the " * 500, "Sure!"),
    # two lines taking turns
    "alternating": (GOOD + "\n" + "User: hi\nAssistant: hello there, how can I help?\n" * 100, GOOD),
    # a numbered list of the same item: the numbers change, the line does not
    "numbered": (GOOD + "\n" + "".join(f"{n}. Remember to water the plants.\n" for n in range(1, 60)), GOOD),
    # from the first word: nothing good remains
    "at once": ("I don't know. " * 300, ""),
}


@pytest.mark.parametrize("name", LOOPS)
def test_loops_are_cut_where_they_begin(name):
    text, kept = LOOPS[name]
    good, cut = good_part(text)
    assert cut is not None and good == kept
    assert cut.keep <= cut.shown < len(text) // 3  # the first round of the loop ends early in the text


@pytest.mark.parametrize("name", LOOPS)
def test_a_stream_in_any_pieces_is_cut_as_the_whole_text_is(name):
    text, kept = LOOPS[name]
    rng = random.Random(name)
    pieces, at = [], 0
    while at < len(text):
        size = rng.choice([1, 2, 3, 7, 40])
        pieces.append(text[at:at + size])
        at += size
    watch = LoopWatch()
    shown = "".join(watched(iter(pieces), watch))
    assert watch.cut is not None and text[:watch.cut.keep].rstrip() == kept
    # the reader saw what came before the loop was plain, at least its first round, and not much more
    assert text.startswith(shown) and watch.cut.shown <= len(shown) < len(text) // 3


def test_watched_closes_its_source_when_it_stops():
    closed = []

    def endless():
        try:
            while True:
                yield "again and again "
        finally:
            closed.append(True)

    watch = LoopWatch()
    assert "".join(watched(endless(), watch)).startswith("again and again")
    assert closed == [True] and watch.cut is not None


def test_runaway_length_is_cut_at_the_limit():
    text = " ".join(f"word{n}" for n in range(5_000))  # no loop at all, just too long
    good, cut = good_part(text, max_chars=10_000)
    assert cut is not None and len(good) <= 10_000 and "10,000 characters" in cut.reason


HONEST = {
    "a markdown table": "| a | b | c |\n| --- | --- | --- |\n" + "".join(f"| {n} | 0 | 0 |\n" for n in range(40)),
    "code that repeats itself": "Here:\n```python\n" + "x = 1\n" * 20 + "    return None\n" * 8 + "```\nDone.",
    "a list of zeros": "The matrix is " + "0, " * 100 + "0.",
    "a short refrain": "Row, row, row your boat, gently down the stream. Merrily, merrily, merrily, merrily, "
                       "life is but a dream.",
    "laughter": "ha ha ha ha, that is funny.",
}


@pytest.mark.parametrize("name", HONEST)
def test_honest_repetition_is_left_alone(name):
    assert good_part(HONEST[name]) == (HONEST[name], None)


@pytest.mark.parametrize("path", ["README.md", "docs/architecture.md", "docs/figures.md", "docs/troubleshooting.md",
                                  "memvault/converse/compaction.py"])
def test_long_real_texts_are_left_alone(path):
    text = (ROOT / path).read_text(encoding="utf-8")
    if path.endswith(".py"):
        text = f"```python\n{text}\n```"  # code as an answer shows it
    assert good_part(text, max_chars=len(text)) == (text, None)


PHRASE_24 = ("we walked along the river past the old mill and the bakery then turned left at the church "
             "to reach the square by noon")  # 24 words: 3 rounds make a loop (48 words / 24, raised to MIN_REPEATS)


@pytest.mark.parametrize(("unit", "needed"), [("again", MAX_REPEATS), (PHRASE_24, MIN_REPEATS)],
                         ids=["one word", "24 words"])
def test_a_repeat_is_a_loop_at_exactly_the_repeats_needed(unit, needed):
    assert repeats_needed(len(unit.split())) == needed
    below = f"{GOOD} " + " ".join([unit] * (needed - 1)) + " The end."
    assert good_part(below) == (below, None)  # one round fewer is still prose
    at = f"{GOOD} " + " ".join([unit] * needed) + " The end."
    good, cut = good_part(at)
    assert cut is not None and good == GOOD and f"{needed} times" in cut.reason


def test_a_line_is_a_loop_at_exactly_line_repeats():
    line = "Remember to water the plants.\n"
    below = GOOD + "\n" + line * (LINE_REPEATS - 1) + "Bye."
    assert good_part(below) == (below, None)
    good, cut = good_part(GOOD + "\n" + line * LINE_REPEATS + "Bye.")
    assert cut is not None and good == GOOD and cut.reason == f"the answer repeated a line {LINE_REPEATS} times"
