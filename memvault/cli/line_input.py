"""The chat prompt: line editing and history on a terminal (prompt_toolkit), plain lines from a pipe.

`read` returns the line typed; Ctrl-C at the prompt clears the line (returns ""), Ctrl-D raises
EOFError. The history file lives in the vault's `.memvault/` (never committed); an incognito chat
keeps its history in memory only, as it keeps everything else.
"""

from __future__ import annotations

import sys
from pathlib import Path

HISTORY_FILE = "chat_history"


class LineReader:
    """Reads the user's lines: prompt_toolkit when both ends are a terminal, else standard input."""

    def __init__(self, history_dir: Path | None) -> None:
        self.session = None
        if sys.stdin.isatty() and sys.stdout.isatty():
            from prompt_toolkit import PromptSession
            from prompt_toolkit.history import FileHistory, InMemoryHistory

            history = (InMemoryHistory() if history_dir is None
                       else FileHistory(private_file(history_dir / HISTORY_FILE)))
            self.session = PromptSession(history=history)

    def read(self, prompt: str) -> str:
        if self.session is None:
            from memvault.cli.output import console

            try:
                return console().input(f"[bold green]{prompt}[/] ")
            except KeyboardInterrupt:  # no line editor to clear: a pipe's Ctrl-C means stop
                raise EOFError from None
        from prompt_toolkit.formatted_text import HTML

        try:
            return self.session.prompt(HTML(f"<ansigreen><b>{prompt}</b></ansigreen> "))
        except KeyboardInterrupt:  # prompt_toolkit has already dropped what was typed
            return ""


def private_file(path: Path) -> str:
    """`path`, created readable by its owner only if it is new: it holds what the user typed."""
    import os

    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
    return str(path)


def history_dir_of(memvault) -> Path | None:
    """Where the chat history is kept: the vault's `.memvault/` (None without a vault, or when that
    folder is a link, through which memvault writes nothing)."""
    if memvault is None:
        return None
    state = memvault.state_dir
    return None if state.is_symlink() or not state.is_dir() else state
