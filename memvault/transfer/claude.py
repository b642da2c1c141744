"""Claude's data export (claude.ai, Settings > Privacy > Export data): `conversations.json`, a list of
conversations (`uuid`, `name`, `created_at`, `chat_messages`), each message with `uuid`, `sender`
(`human` or `assistant`), `created_at`, and its text as `content` blocks (newer exports) or `text`.
Only text blocks are imported (tool use, tool results and attachments are left out)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.errors import UsageError
from memvault.transfer.batches import Batch, chat_turn, checked_text, conversation_name, epoch_time
from memvault.transfer.source_files import read_export
from memvault.vault.format.entry import now

if TYPE_CHECKING:
    from memvault.core import Memvault

FORMAT = "claude"
ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def looks_like(data: Any) -> bool:
    return isinstance(data, list) and bool(data) and isinstance(data[0], dict) and "chat_messages" in data[0]


def batches(memvault: Memvault, path: Path, conversation: str | None, notes: list[str],
            data: Any = None) -> list[Batch]:
    """One batch per conversation of the export at `path` (`data`: its JSON, when already read)."""
    data = read_export(path, "Claude export", memvault.settings.limits.max_import_bytes) if data is None else data
    if not isinstance(data, list) or not all(isinstance(c, dict) and isinstance(c.get("chat_messages"), list)
                                             for c in data):
        raise UsageError(f"{path} is not a Claude export: expected a list of conversations with 'chat_messages'")
    return [batch_of(memvault, item, conversation, notes) for item in data]


def batch_of(memvault: Memvault, chat: dict, conversation: str | None, notes: list[str]) -> Batch:
    chat_id = str(chat.get("uuid") or "")
    if not chat_id:
        raise UsageError("a Claude conversation has no 'uuid'")
    title = str(chat.get("name") or "untitled")
    name = conversation or conversation_name(FORMAT, title, chat_id)
    started = epoch_time(chat.get("created_at")) or now()
    items = []
    for message in chat["chat_messages"]:
        if not isinstance(message, dict):
            continue
        role = ROLES.get(str(message.get("sender") or "").lower())
        message_id = str(message.get("uuid") or "")
        if role is None or not message_id:
            continue
        text = checked_text(memvault, message_text(message), f"{title!r}, message {message_id}", notes)
        if text is None:
            continue
        items.append(chat_turn(FORMAT, chat_id, name, title, message_id, role, text,
                               epoch_time(message.get("created_at")) or started))
    return Batch(chat_id, name, title, items, curatable=True)


def message_text(message: dict) -> str | None:
    blocks = message.get("content")
    if isinstance(blocks, list) and blocks:
        texts = [block.get("text") for block in blocks if isinstance(block, dict) and block.get("type") == "text"]
        return "\n\n".join(t for t in texts if isinstance(t, str) and t.strip()) or None
    return message.get("text") if isinstance(message.get("text"), str) else None
