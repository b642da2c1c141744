"""What a format module makes of its source: `Batch`es (one per conversation) of `Item`s (entries),
with ids derived from the source's own ids, so the same message always becomes the same entry."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.errors import UsageError
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry

if TYPE_CHECKING:
    from datetime import datetime

    from memvault.core import Memvault


@dataclass
class Item:
    """One entry to bring in, with (for a JSONL line that carries it) its file's exact bytes and place."""

    entry: Entry
    data: bytes | None = None
    rel: PurePosixPath | None = None

    @property
    def path(self) -> PurePosixPath:
        return self.rel or layout.relative_path(self.entry)


@dataclass
class Batch:
    """One conversation of the source: committed whole, or not at all."""

    key: str  # the source's own id for it (the progress file names it)
    conversation: str  # the vault conversation it goes into
    title: str
    items: list[Item]
    curatable: bool = False  # chat turns an LLM may turn into facts (`--curate`)

    def digest(self) -> str:
        """Changes when the source's conversation does (a message added since the last import)."""
        hashed = hashlib.sha256()
        for item in self.items:
            hashed.update(f"{item.entry.id}:{item.entry.hash}:{item.path}\n".encode())
            if item.data is not None:
                hashed.update(hashlib.sha256(item.data).digest())
        return hashed.hexdigest()[:32]




def stable_id(*parts: str) -> str:
    """The id an imported entry gets: the same source ids always give the same UUID."""
    import uuid

    return str(uuid.uuid5(uuid.NAMESPACE_URL, "memvault-import:" + "\x1f".join(parts)))


def chat_turn(fmt: str, chat_id: str, name: str, title: str, message_id: str, role: str, text: str,
              created: datetime) -> Item:
    """One message of an exported chat as a turn of conversation `name`: its id derived from the
    source's ids (a re-import finds it again), the source named in metadata (core.importing's
    FACT_METADATA reads it)."""
    return Item(Entry(text=text, role=role, conversation_id=name, id=stable_id(fmt, chat_id, message_id),
                      created_at=created, metadata={"imported_from": fmt, "source_conversation": chat_id,
                                                    "source_message": message_id, "title": title}))


def mapped_id(fmt: str, value: str, metadata: dict | None = None, key: str = "") -> str:
    """A source's id as memvault's: the id itself when it is a UUID (so sources and replacements still
    point at it), else a stable one derived from it, the original then kept in `metadata[key]`."""
    if layout.UUID_SHAPE.match(value.lower()):
        return value.lower()
    if metadata is not None:
        metadata[key] = value
    return stable_id(fmt, value)



def conversation_name(prefix: str, title: str, source_id: str) -> str:
    """A readable, stable, portable folder name: 'chatgpt-trip-to-lisbon-1a2b3c4d'."""
    import re
    import unicodedata

    from memvault.text.redact import redact

    # a title holding a secret names no folder: its value is redacted before the name is made
    words = unicodedata.normalize("NFKC", redact(title or "")).lower()
    words = re.sub(r"[^\w]+", "-", words, flags=re.UNICODE).strip("-_")[:40].strip("-_")
    tail = re.sub(r"[^0-9a-zA-Z]+", "", source_id)[:8].lower() or hashlib.sha256(source_id.encode()).hexdigest()[:8]
    return layout.check_conversation("-".join(part for part in (prefix, words, tail) if part))



def checked_text(memvault: Memvault, text: Any, where: str, notes: list[str]) -> str | None:
    """A source message's text as memvault stores it, or None (with a note) when it cannot be one:
    empty, or refused by the vault's rules (a NUL, a lone surrogate, longer than limits.max_text_chars).
    Nothing is cut or changed silently."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return memvault.clean_text(text)
    except UsageError as exc:
        notes.append(f"{where}: left out: {exc}")
        return None


def epoch_time(value: Any) -> Any:
    """A time given as Unix seconds (ChatGPT), as an ISO string, or missing (None)."""
    from datetime import datetime, timezone

    from memvault.vault.format.entry import iso_time

    if value is None or value == "":
        return None
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            moment = datetime.fromtimestamp(float(value), timezone.utc)
        else:
            moment = iso_time(value)
    except (ValueError, OverflowError, OSError):
        return None
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)

