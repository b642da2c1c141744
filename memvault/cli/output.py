"""All CLI output goes through here: JSON for programs, rich tables for people, errors on stderr."""

import json
import re
import sys
from datetime import datetime, timezone
from typing import Any, NamedTuple

_console = None
_err_console = None
# What stored text must not send to a terminal: control characters (ESC starts the escape sequences
# that recolour, move the cursor, retitle the window or write the clipboard; CR overwrites a line)
# and the bidirectional overrides and isolates that make text read in another order than it runs.
# Tab and newline stay. JSON output and the files keep the text as it is.
UNSAFE_FOR_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# `say` shortens longer lines: `add` used to echo a 1 MB memory whole.
MAX_SAID = 500


def for_terminal(text: str) -> str:
    """`text` with every control and bidi character shown as its escape (ESC as \\x1b, RLO as \\u202e)."""
    return UNSAFE_FOR_TERMINAL.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), text)


def shortened(text: str, limit: int = MAX_SAID) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text) - limit:,} more characters)"


def console():
    """One rich Console for stdout (imported on first use: rich costs start-up time)."""
    global _console
    if _console is None:
        from rich.console import Console

        # Into a pipe or file rich would wrap at 80 columns: a table there keeps each row on one line.
        _console = Console(highlight=False, soft_wrap=False, width=None if sys.stdout.isatty() else 100_000)
    return _console


def err_console():
    global _err_console
    if _err_console is None:
        from rich.console import Console

        _err_console = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 100_000)
    return _err_console


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def say(message: str) -> None:
    """A line for the person at the terminal (on stderr, so stdout stays clean for pipes); a long
    one is shortened, control characters are shown escaped."""
    err_console().print(for_terminal(shortened(message)), markup=False)


def result_line(event: str, memory_id: str | None, text: str) -> None:
    """One line of a write's result on stdout, for pipes: the event, the whole id, then the text
    (shortened, control characters escaped), so `memvault add ... | cut -f2` gives the id."""
    sys.stdout.write(f"{event}\t{memory_id or '-'}\t{for_terminal(shortened(text))}\n")


def warn(message: str) -> None:
    sys.stderr.write(f"memvault: warning: {for_terminal(message)}\n")


def error(message: str) -> None:
    sys.stderr.write(f"memvault: error: {for_terminal(message)}\n")


def print_text(text: str) -> None:
    """Text as it is into a pipe or file; on a terminal with its control characters escaped."""
    sys.stdout.write(for_terminal(text) if sys.stdout.isatty() else text)


def age(moment: datetime | None, reference: datetime | None = None) -> str:
    """A short age such as 5m, 3h, 2d, 7w, 4y."""
    if moment is None:
        return ""
    seconds = max(0.0, ((reference or datetime.now(timezone.utc)) - moment).total_seconds())
    for unit, size in (("y", 365 * 86400), ("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds)}s"


# Above this many rows a table is printed as plain lines: rich lays out 10k rows in tens of seconds.
LARGE_TABLE = 500


class Styled(NamedTuple):
    """A table cell with a rich style; every other cell is literal text (a memory may contain '[b]')."""

    text: str
    style: str


def table(columns: list[str], rows: list[list[Any]], title: str | None = None) -> None:
    """A rich table on a terminal; tab-separated lines (header first) into a pipe or when long."""
    if len(rows) > LARGE_TABLE or not console().is_terminal:
        plain_table(columns, rows)
        return
    from rich.table import Table
    from rich.text import Text

    def cell(value: Any) -> Text:
        if isinstance(value, Styled):
            return Text(for_terminal(value.text), style=value.style)
        return Text(for_terminal("" if value is None else str(value)))

    grid = Table(title=title, show_lines=False, header_style="bold")
    for name in columns:
        grid.add_column(name, overflow="fold", no_wrap=name in ("id", "role", "age", "event"))
    for row in rows:
        grid.add_row(*[cell(v) for v in row])
    console().print(grid)


def plain_table(columns: list[str], rows: list[list[Any]]) -> None:
    def cell(value: Any) -> str:
        text = value.text if isinstance(value, Styled) else "" if value is None else str(value)
        return for_terminal(" ".join(text.split()))  # one line, no tabs, no escape sequences

    lines = ["\t".join(columns), *("\t".join(cell(v) for v in row) for row in rows)]
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
