"""A session's scratchpad: a small key/value pad an agent keeps while it works (AgenticX's working
notes), in `.memvault/session/<conversation>/scratchpad.json`.

Not memory: it lives under the git-ignored state folder, is never committed nor indexed, and goes
away when the session ends (`clear`; ending a session removes its whole folder). Only the write
policy may turn what it says into memories. It is size-capped, so an agent in a loop cannot fill the
disk or a later prompt with it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from memvault.errors import NotFoundError, UsageError
from memvault.vault.format import layout

FILE_NAME = "scratchpad.json"
MAX_KEYS = 100
MAX_KEY_CHARS = 100
MAX_VALUE_CHARS = 8_000
MAX_TOTAL_CHARS = 64_000  # all keys and values of one pad


def session_folder(state_dir: Path, conversation: str) -> Path:
    """`.memvault/session/<conversation>/`: the conversation name checked, so it stays one folder. The
    session buffer's folder (core.session_buffer), which ending the session removes, pad and all."""
    return Path(state_dir) / layout.SESSION_STATE_DIR / layout.folder_for(conversation)


def check_key(key: str) -> str:
    key = (key or "").strip() if isinstance(key, str) else ""
    if not key:
        raise UsageError("the scratchpad key is empty")
    if len(key) > MAX_KEY_CHARS or any(ord(c) < 32 for c in key):
        raise UsageError(f"invalid scratchpad key {key[:40]!r}: at most {MAX_KEY_CHARS} printable characters")
    return key


class Scratchpad:
    """The pad of one conversation's session. Callers serialise access (the vault's lock, or the
    MCP server's one-call-at-a-time lock); each write replaces the file atomically."""

    def __init__(self, state_dir: Path, conversation: str) -> None:
        self.folder = session_folder(state_dir, conversation)
        self.path = self.folder / FILE_NAME

    def items(self) -> dict[str, str]:
        """key -> value, in the order written. A damaged file reads as an empty pad: it holds only
        working notes, and an agent can always write them again."""
        if self.path.is_symlink() or not self.path.is_file():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {str(k): str(v) for k, v in data.items()}

    def read(self, key: str) -> str:
        key = check_key(key)
        items = self.items()
        if key not in items:
            shown = ", ".join(list(items)[:10]) or "none"
            raise NotFoundError(f"no scratchpad key {key!r} (keys: {shown})")
        return items[key]

    def write(self, key: str, value: str) -> dict[str, str]:
        """Set `key` (an empty value removes it); returns the pad. Refused past the size caps."""
        from memvault.text.redact import redact_value
        from memvault.vault.format.atomic import atomic_write
        from memvault.vault.format.fields import check_text

        key = check_key(key)
        value = check_text(str(value), "the scratchpad value")
        if len(value) > MAX_VALUE_CHARS:
            raise UsageError(f"the scratchpad value has {len(value):,} characters, more than {MAX_VALUE_CHARS:,}")
        items = self.items()
        items.pop(key, None)
        if value:
            items[key] = value
        if len(items) > MAX_KEYS:
            raise UsageError(f"the scratchpad holds {MAX_KEYS} keys already: remove one (write it empty) first")
        if sum(len(k) + len(v) for k, v in items.items()) > MAX_TOTAL_CHARS:
            raise UsageError(f"the scratchpad would hold more than {MAX_TOTAL_CHARS:,} characters: remove "
                             "something (write a key empty) first")
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        # atomic_write refuses a path reached through a link (the folder, or .memvault/session above it).
        atomic_write(self.path, json.dumps(redact_value(items), ensure_ascii=False, indent=1).encode("utf-8"))
        return items

    def clear(self) -> None:
        """End of session: the pad is gone (and its folder, when nothing else is left in it)."""
        if self.path.is_symlink() or self.path.is_file():
            self.path.unlink(missing_ok=True)
        try:
            os.rmdir(self.folder)
        except OSError:
            pass  # other session files (held candidates, state) stay for their owner
