"""Shell completion without typer or click, for the requests a TAB makes most: a command name, an
option name, the first argument of a command, or the value of its option given last.

The protocol is typer's (completions/*: `_MEMVAULT_COMPLETE=complete_<shell>`, bash's COMP_WORDS and
COMP_CWORD, zsh's and fish's _TYPER_COMPLETE_ARGS) and so is the output, item for item (typer's
_completion_classes); commands and parameters come from memvault/cli/prebuilt.py, memory ids and
conversation names from the very functions typer calls (cli/completion.py). Any request this module
is not sure to answer as typer would (options before the word, `--`, `--opt=value`, a parameter
with a completion of its own) gets None, and typer answers it.
"""

import os
import re
import sys
from types import SimpleNamespace

from memvault.cli import prebuilt

Item = tuple[str, str | None]  # (value, help), as click's CompletionItem


def serve(instruction: str) -> int | None:
    """Answer `_MEMVAULT_COMPLETE=instruction`; the exit status, or None to leave it to typer."""
    shell = {"complete_bash": "bash", "complete_zsh": "zsh", "complete_fish": "fish"}.get(instruction)
    if shell is None:
        return None
    try:
        args, incomplete = bash_words() if shell == "bash" else typer_words()
    except ValueError:  # COMP_CWORD not a number: typer's own error, not ours
        return None
    items = candidates(args, incomplete)
    if items is None:
        return None
    if shell == "bash":
        out = "\n".join(value for value, _ in items)
    elif shell == "zsh":
        items = [(zsh_escape(value), zsh_escape(text) if text else None) for value, text in items]
        shown = "\n".join(f'"{value}":"{text}"' if text else f'"{value}"' for value, text in items)
        out = f"_arguments '*: :(({shown}))'" if items else "_files"
    else:
        items = [(value, re.sub(r"\s", " ", text) if text else None) for value, text in items]
        out = "\n".join(value + (f"\t{text}" if text else "") for value, text in items)
    if shell != "bash" and not all(plain(text) for _, text in items if text):
        return None  # typer renders zsh's and fish's help with rich: leave anything rich might change to it
    if shell == "fish":
        action = os.environ.get("_TYPER_COMPLETE_FISH_ACTION", "")
        if action == "is-args":
            return 0 if items else 1  # typer exits so, printing nothing
        out = out if action == "get-args" else ""
    sys.stdout.write(out + "\n")  # as typer's click.echo
    sys.stdout.flush()
    return 0


def bash_words() -> tuple[list[str], str]:
    words = split_arg_string(os.environ.get("COMP_WORDS", ""))
    cword = int(os.environ.get("COMP_CWORD", "0"))
    return words[1:cword], words[cword] if cword < len(words) else ""


def typer_words() -> tuple[list[str], str]:
    line = os.environ.get("_TYPER_COMPLETE_ARGS", "")
    args = split_arg_string(line)[1:]
    if args and not line.endswith(" "):
        return args[:-1], args[-1]
    return args, ""


def split_arg_string(string: str) -> list[str]:
    """click.shell_completion.split_arg_string: shell words, an unfinished last one kept as it is."""
    import shlex

    lex = shlex.shlex(string, posix=True)
    lex.whitespace_split = True
    lex.commenters = ""
    out = []
    try:
        for token in lex:
            out.append(token)
    except ValueError:
        out.append(lex.token)
    return out


def candidates(args: list[str], incomplete: str) -> list[Item] | None:
    """What typer offers for `incomplete` after the words `args`, or None when not sure."""
    if "--" in args or "=" in incomplete:
        return None
    path: tuple[str, ...] = ()
    rest = list(args)
    while path in prebuilt.COMMANDS:  # a group: the next word names one of its commands
        listed = prebuilt.COMMANDS[path]
        if not rest:
            if incomplete and not incomplete[0].isalnum():  # click would offer the group's options too
                return None
            return [(name, text) for name, text in listed if name.startswith(incomplete)]
        if rest[0] not in dict(listed):
            return None
        path, rest = (*path, rest[0]), rest[1:]
    params = prebuilt.PARAMS.get(path)
    if params is None:
        return None
    options = [row for row in params if row[0] == "option"]
    if incomplete.startswith("-"):
        if rest:  # an option given already is not offered again: click's rule, left to click
            return None
        return [(name, text) for _, names, text, _, _, hidden, _ in options if not hidden
                for name in names if name.startswith(incomplete)]
    if rest:
        given = [row for row in options if rest == [rest[0]] and rest[0] in row[1] and row[3]]
        return values(given[0][6], incomplete) if given else None
    arguments = [row for row in params if row[0] == "argument"]
    return values(arguments[0][2], incomplete) if arguments else []


def values(completer: str | None, incomplete: str) -> list[Item] | None:
    """A parameter's completions: one of cli/completion.py's functions, called as typer calls it."""
    if completer is None:
        return None
    if not completer:
        return []
    from memvault.cli import completion

    found = getattr(completion, completer)(SimpleNamespace(params={}), incomplete)
    items = [found_item if isinstance(found_item, tuple) else (found_item, None) for found_item in found]
    return [(value, text) for value, text in items if value.startswith(incomplete)]  # typer's filter


def plain(text: str) -> bool:
    """Whether typer's rich rendering of a help text (zsh, fish) leaves it as it is: printable ASCII with
    nothing rich reads as markup or emoji, shorter than any width the terminal may give it."""
    return (text.isascii() and text.isprintable() and "[" not in text and not re.search(r":\S*:", text)
            and len(text) + 1 < narrowest() and "TERMINAL_WIDTH" not in os.environ)


def narrowest() -> int:
    """The narrowest width rich may wrap help at: its default, COLUMNS, or any standard stream's terminal."""
    widths = [80]
    if os.environ.get("COLUMNS", "").isdigit():
        widths.append(int(os.environ["COLUMNS"]))
    for descriptor in (0, 1, 2):
        try:
            widths.append(os.get_terminal_size(descriptor).columns or 80)
        except (ValueError, OSError):
            pass
    return min(widths)


def zsh_escape(text: str) -> str:
    return text.replace('"', '""').replace("'", "''").replace("$", "\\$").replace("`", "\\`").replace(":", r"\\:")
