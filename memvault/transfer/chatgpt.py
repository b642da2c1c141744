"""ChatGPT's data export (Settings > Data controls > Export): `conversations.json`, a list of
conversations, each a tree of messages (`mapping`: node id -> {message, parent, children}) whose
`current_node` is the leaf of the thread the user last saw. That thread becomes the conversation's
turns; branches left by edits and regenerations are not imported (the export keeps them, memvault
keeps the answer the user kept). System and tool messages, hidden messages, and parts that are not
text (images, files) are left out; what was said in voice mode comes in as its transcription.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.errors import UsageError
from memvault.transfer.batches import Batch, chat_turn, checked_text, conversation_name, epoch_time
from memvault.transfer.source_files import read_export
from memvault.vault.format.entry import now

if TYPE_CHECKING:
    from memvault.core import Memvault

FORMAT = "chatgpt"
TEXT_TYPES = ("text", "multimodal_text")


def looks_like(data: Any) -> bool:
    return isinstance(data, list) and bool(data) and isinstance(data[0], dict) and "mapping" in data[0]


def batches(memvault: Memvault, path: Path, conversation: str | None, notes: list[str],
            data: Any = None) -> list[Batch]:
    """One batch per conversation of the export at `path` (`data`: its JSON, when already read)."""
    data = read_export(path, "ChatGPT export", memvault.settings.limits.max_import_bytes) if data is None else data
    if not isinstance(data, list) or not all(isinstance(c, dict) and isinstance(c.get("mapping"), dict)
                                             for c in data):
        raise UsageError(f"{path} is not a ChatGPT export: expected a list of conversations with a 'mapping'")
    return [batch_of(memvault, item, conversation, notes) for item in data]


def batch_of(memvault: Memvault, chat: dict, conversation: str | None, notes: list[str]) -> Batch:
    chat_id = str(chat.get("conversation_id") or chat.get("id") or "")
    if not chat_id:
        raise UsageError("a ChatGPT conversation has no id (neither 'conversation_id' nor 'id')")
    title = str(chat.get("title") or "untitled")
    name = conversation or conversation_name(FORMAT, title, chat_id)
    started = epoch_time(chat.get("create_time")) or now()
    items = []
    for message in thread(chat["mapping"], chat.get("current_node")):
        role = fields(message.get("author")).get("role")
        if role not in ("user", "assistant") or hidden(message):
            continue
        message_id = str(message.get("id") or "")
        text = checked_text(memvault, message_text(message), f"{title!r}, message {message_id}", notes)
        if text is None or not message_id:
            continue
        items.append(chat_turn(FORMAT, chat_id, name, title, message_id, role, text,
                               epoch_time(message.get("create_time")) or started))
    return Batch(chat_id, name, title, items, curatable=True)


def thread(mapping: dict, current: Any) -> list[dict]:
    """The messages from the root down to `current_node` (or, without one, down the newest branches)."""
    if not is_node(mapping, current):
        current = newest_leaf(mapping)
    path, seen = [], set()
    while is_node(mapping, current) and current not in seen:  # `seen`: a damaged export may loop
        seen.add(current)
        node = fields(mapping[current])
        if isinstance(node.get("message"), dict):
            path.append(node["message"])
        current = node.get("parent")
    return path[::-1]


def newest_leaf(mapping: dict) -> Any:
    roots = [key for key, node in mapping.items()
             if isinstance(node, dict) and not is_node(mapping, node.get("parent"))]
    current = roots[0] if roots else None
    seen = set()
    while is_node(mapping, current) and current not in seen:
        seen.add(current)
        children = fields(mapping[current]).get("children")
        children = [c for c in children if is_node(mapping, c)] if isinstance(children, list) else []
        if not children:
            break
        current = children[-1]
    return current


def is_node(mapping: dict, key: Any) -> bool:
    """Whether `key` names a node of the tree (a damaged export may hold a list or a number there)."""
    return isinstance(key, str) and key in mapping


def fields(value: Any) -> dict:
    """An object of the export, or {} where a damaged one holds something else."""
    return value if isinstance(value, dict) else {}


def hidden(message: dict) -> bool:
    metadata = fields(message.get("metadata"))
    return bool(metadata.get("is_visually_hidden_from_conversation")) or message.get("recipient") not in (None, "all")


def message_text(message: dict) -> str | None:
    content = fields(message.get("content"))
    if content.get("content_type") not in TEXT_TYPES or not isinstance(content.get("parts"), list):
        return None
    parts = [part_text(part) for part in content["parts"]]
    return "\n\n".join(part for part in parts if part and part.strip()) or None


def part_text(part: Any) -> str | None:
    """A part's text: a string, or what was said in voice mode (an audio part's transcription)."""
    if isinstance(part, dict) and part.get("content_type") == "audio_transcription":
        part = part.get("text")
    return part if isinstance(part, str) else None
