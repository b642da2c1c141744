"""Pull a JSON value out of what an LLM actually writes: fences, prose, <think> blocks, sloppy syntax.

Small local models rarely return clean JSON even when asked (and even with a response schema), so
every curation step reads its answer through `parse_json` and never trusts the raw text.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

# qwen3 and other reasoning models wrap their thinking in <think>...</think> before the answer.
THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n?(.*?)```", re.DOTALL)
TRAILING_COMMA = re.compile(r",(\s*[\]}])")
# JSON's literals outside strings, to let ast.literal_eval read single-quoted (Python-ish) output.
JSON_LITERALS = {"true": "True", "false": "False", "null": "None"}


def strip_thinking(text: str) -> str:
    """The text without reasoning blocks. A lone `</think>` (opening tag in the prompt) ends the thinking."""
    text = THINK_BLOCK.sub("", text)
    lowered = text.lower()
    if "</think>" in lowered:
        text = text[lowered.rindex("</think>") + len("</think>"):]
    elif lowered.lstrip().startswith("<think>"):
        return ""  # thinking cut off before any answer
    return text.strip()


def parse_json(text: str | None) -> Any | None:
    """The first usable JSON value in `text`, or None when there is none.

    Tries, in order: the whole text; each fenced block (```json ... ```); then the first `[` or `{`
    from which a balanced value can be read, repairing trailing commas and single quotes.
    A bare JSON string counts only when it is the whole answer (prose is not a string value).
    """
    if not text:
        return None
    text = strip_thinking(text)
    if not text:
        return None
    value = loads_lenient(text)
    if value is not None:
        return value
    for match in FENCE.finditer(text):
        value = loads_lenient(match.group(2).strip())
        if value is not None:
            return value
    for start, char in enumerate(text):
        if char in "[{":
            end = balanced_end(text, start)
            if end is not None:
                value = loads_lenient(text[start:end])
                if isinstance(value, (list, dict)):
                    return value
    return None


def loads_lenient(candidate: str) -> Any | None:
    """json.loads, then with trailing commas removed, then as a Python literal (single quotes)."""
    if not candidate:
        return None
    for attempt in (candidate, TRAILING_COMMA.sub(r"\1", candidate)):
        try:
            return json.loads(attempt)
        except (json.JSONDecodeError, RecursionError):
            pass
    if candidate[0] not in "[{'\"":
        return None
    try:
        value = ast.literal_eval(python_literals(candidate))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, (list, dict, str, int, float, bool)) else None


def python_literals(candidate: str) -> str:
    """Map true/false/null to Python outside string literals, so literal_eval can read JSON-ish text."""
    out: list[str] = []
    i, quote = 0, ""
    while i < len(candidate):
        char = candidate[i]
        if quote:
            out.append(char)
            if char == "\\" and i + 1 < len(candidate):
                out.append(candidate[i + 1])
                i += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
            out.append(char)
        else:
            word = re.match(r"[A-Za-z_]+", candidate[i:])
            if word:
                out.append(JSON_LITERALS.get(word.group(0), word.group(0)))
                i += len(word.group(0))
                continue
            out.append(char)
        i += 1
    return "".join(out)


def balanced_end(text: str, start: int) -> int | None:
    """Index just past the bracket that closes the one at `start`, honouring quoted strings."""
    closing = {"[": "]", "{": "}"}
    stack: list[str] = []
    quote = ""
    i = start
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            # An apostrophe inside prose-like content ("user's") is not a quote in JSON-ish output
            # unless it opens a value; treat single quotes as quotes only right after [ { , :
            if char == '"' or prev_significant(text, i) in "[{,:":
                quote = char
        elif char in closing:
            stack.append(closing[char])
        elif char in "]}":
            if not stack or stack.pop() != char:
                return None
            if not stack:
                return i + 1
        i += 1
    return None


def prev_significant(text: str, index: int) -> str:
    """The last non-blank character before `index` ('' at the start)."""
    j = index - 1
    while j >= 0 and text[j].isspace():
        j -= 1
    return text[j] if j >= 0 else ""


def as_list(value: Any, keys: tuple[str, ...]) -> list | None:
    """A list from an LLM's answer: the list itself, or the list under one of `keys` in a dict
    (`{"facts": [...]}`), or a dict's only list value; a lone dict becomes a one-item list. None otherwise.
    """
    if isinstance(value, list):
        return value
    if not isinstance(value, dict):
        return None
    lowered = {str(k).lower(): v for k, v in value.items()}
    for key in keys:
        if isinstance(lowered.get(key), list):
            return lowered[key]
    lists = [v for v in value.values() if isinstance(v, list)]
    if len(lists) == 1:
        return lists[0]
    return [value]
