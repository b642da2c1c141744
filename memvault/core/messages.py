"""What a message says, and which messages can become memories: the one reader of the messages every
door hands to the facade (the CLI's and MCP's text, mem0's `Memory.add` and REST bodies, the proxy's
and chat's OpenAI messages).

- A message's text: a string as it is; OpenAI content parts joined by newlines, text parts only
  (`{"type": "text", "text": ...}`, or a part with a text and no type). Images, audio and files are
  not memory, and leave no blank line behind.
- What may be given: a string (the user's words), one message, or a list of messages (mem0's
  inputs). A message without a role, or with no text, is skipped, as mem0 skips it.
- The client's instructions to the model (`system`, `developer`) are never memories.
- Nothing left to remember is a UsageError ("the memory text is empty").

Curation (memvault.curate) reads only messages normalised here: their content is a string.
"""

from __future__ import annotations

from typing import Any

from memvault.curate.extract import last_user_index
from memvault.errors import UsageError

INSTRUCTION_ROLES = frozenset({"system", "developer"})  # what the client tells the model: never a memory
EMPTY = "the memory text is empty"


def message_text(message: dict) -> str:
    """A chat message's text (see the module's docstring)."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, list):
        return "\n".join(part["text"] for part in content if is_text_part(part))
    return content if isinstance(content, str) else str(content)


def is_text_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type", "text") == "text" and isinstance(part.get("text"), str)


def last_user_text(messages: list[dict]) -> str:
    """The text of the last user message ('' when there is none)."""
    index = last_user_index(messages)
    return "" if index is None else message_text(messages[index])


def chat_of(messages: Any) -> list[dict]:
    """The messages whose words may become memories, as {role, content (a string), name (when
    given)}: mem0's accepted inputs (a string is the user's message), instructions and messages with
    no role or no text left out. UsageError when nothing is left."""
    if isinstance(messages, str):
        messages = [{"role": "user", "content": messages}]
    elif isinstance(messages, dict):
        messages = [messages]
    if not isinstance(messages, list):
        raise UsageError("messages must be str, dict, or list[dict]")
    chat = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            continue
        text = message_text(message)
        if message["role"] in INSTRUCTION_ROLES or not text.strip():
            continue
        name = message.get("name")
        chat.append({"role": message["role"], "content": text, **({"name": name} if isinstance(name, str)
                                                                      and name.strip() else {})})
    if not chat:
        raise UsageError(EMPTY)
    return chat


def redacted_chat(chat: list[dict]) -> tuple[list[dict], int]:
    """The messages with each secret's value redacted before anything reads them (the extracting
    model never sees a secret; the message's other words are kept), and how many were changed. A user
    message that finishes a secret its previous user message began (a token pasted in two) has that
    head marked too (memvault.text.redact.redact_turn)."""
    from memvault.text.redact import redact_turn

    clean, changed, previous = [], 0, None
    for message in chat:
        text = message["content"]
        safe = redact_turn(previous if message["role"] == "user" else None, text)
        if message["role"] == "user":
            previous = text
        changed += safe != text
        clean.append({**message, "content": safe} if safe != text else message)
    return clean, changed


def previous_user_text(messages: list[dict]) -> str | None:
    """The text of the user message before the last one (None when there is none): where a secret the
    last one finishes would have begun."""
    users = [message for message in messages if isinstance(message, dict) and message.get("role") == "user"]
    return message_text(users[-2]) if len(users) >= 2 else None
