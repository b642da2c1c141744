"""All CLI output goes through here: JSON for programs, rich tables for people, errors on stderr."""

import json
import sys
from datetime import datetime, timezone
from typing import Any, NamedTuple

_console = None
_err_console = None


def console():
    """One rich Console for stdout (imported on first use: rich costs start-up time)."""
    global _console
    if _console is None:
        from rich.console import Console

        _console = Console(highlight=False, soft_wrap=False)
    return _console


def err_console():
    global _err_console
    if _err_console is None:
        from rich.console import Console

        _err_console = Console(stderr=True, highlight=False)
    return _err_console


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def say(message: str) -> None:
    """A line for the person at the terminal (on stderr, so stdout stays clean for pipes)."""
    err_console().print(message, markup=False)


def warn(message: str) -> None:
    sys.stderr.write(f"memvault: warning: {message}\n")


def error(message: str) -> None:
    sys.stderr.write(f"memvault: error: {message}\n")


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
            return Text(value.text, style=value.style)
        return Text("" if value is None else str(value))

    grid = Table(title=title, show_lines=False, header_style="bold")
    for name in columns:
        grid.add_column(name, overflow="fold", no_wrap=name in ("id", "role", "age", "event"))
    for row in rows:
        grid.add_row(*[cell(v) for v in row])
    console().print(grid)


def plain_table(columns: list[str], rows: list[list[Any]]) -> None:
    def cell(value: Any) -> str:
        text = value.text if isinstance(value, Styled) else "" if value is None else str(value)
        return " ".join(text.split())  # one line, no tabs

    lines = ["\t".join(columns), *("\t".join(cell(v) for v in row) for row in rows)]
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
