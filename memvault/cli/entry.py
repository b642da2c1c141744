"""The `memvault` program's entry: help and TAB completion answered before typer is imported.

Importing typer and click alone takes most of the 0.1 s that `memvault --help` and every TAB may take.
So `--help` / `-h` of any command, a bare `memvault` or `memvault GROUP`, and the common completion
requests (cli/quick_complete.py) are served from memvault/cli/prebuilt.py, generated from the real
application by scripts/gen_prebuilt.py (tests/test_generated.py keeps it current, tests/test_fastpath.py
checks it prints what typer prints). Anything else, or a terminal narrower than the texts were made
for, goes to the real application (cli/app.py), which stays the one source of truth.
"""

import os
import sys

PROG = "memvault"


def main() -> None:
    # numpy's BLAS threads for a search's small products only spin: one thread halves a search's CPU at 1M
    # (118 -> 49 ms) and shortens it a little (scripts/bench_scale.py); a user's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # The texts say `memvault`: click names the program after argv[0] (`python -m memvault` runs __main__.py).
    code = quick(sys.argv[1:]) if os.path.basename(sys.argv[0]) == PROG else None
    if code is not None:
        sys.exit(code)
    from memvault.cli.app import main as run_application

    run_application()


def quick(args: list[str]) -> int | None:
    """The exit status after answering `args` from the prebuilt texts, or None when typer must answer."""
    if os.environ.get("_MEMVAULT_COMPLETE"):
        from memvault.cli import quick_complete

        return quick_complete.serve(os.environ["_MEMVAULT_COMPLETE"])
    from memvault.cli import prebuilt

    if terminal_columns() < prebuilt.WIDTH:  # click wraps help to a narrower terminal: let it
        return None
    if args and args[-1] in ("--help", "-h") and tuple(args[:-1]) in prebuilt.HELP:
        return write(sys.stdout, prebuilt.HELP[tuple(args[:-1])], 0)
    if tuple(args) in prebuilt.BARE:  # `memvault`, `memvault rules`: a group given no command
        stream, code = prebuilt.BARE[tuple(args)]
        return write(getattr(sys, stream), prebuilt.HELP[tuple(args)], code)
    return None


def terminal_columns() -> int:
    """The width click formats help for (shutil.get_terminal_size, without importing shutil)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80  # shutil's fallback


def write(stream, text: str, code: int) -> int:
    stream.write(text)
    stream.flush()
    return code
