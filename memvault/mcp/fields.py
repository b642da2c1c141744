"""The MCP tools' argument types: the JSON schema a model sees, with what each field is for."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

LIST_LIMIT = 20  # list_memories' default: enough to scan, small enough for a context window
MAX_LIMIT = 500

# Input types shared by several tools: the schema a model sees, with what each field is for.
Conversation = Annotated[str | None, Field(description=(
    "Conversation id (any printable name, e.g. a proxy memory_id). Omit it to use the one the scopes imply "
    "(or 'default').") )]
UserId = Annotated[str | None, Field(description="The user the memory belongs to (scope).")]
AgentId = Annotated[str | None, Field(description="The agent the memory belongs to (scope).")]
RunId = Annotated[str | None, Field(description="The run or session the memory belongs to (scope).")]
MemoryId = Annotated[str, Field(description="A memory id, or a unique prefix of one (8 characters are "
                                            "usually enough), as returned by recall or list_memories.")]
CoreName = Annotated[Literal["USER", "IDENTITY", "SOUL", "MEMORY"], Field(description=(
    "USER: who the user is; IDENTITY: who the assistant is; SOUL: its values and boundaries; MEMORY: durable "
    "notes for every conversation."))]
PadConversation = Annotated[str | None, Field(description=(
    "The session's conversation id; omit for the one the scopes imply, or 'default'."))]
PadKey = Annotated[str, Field(description="A short name for the note, e.g. 'plan' or 'open-questions'.")]
Filters = Annotated[dict[str, Any] | None, Field(description=(
    'A mem0 filter on fields and metadata, e.g. {"topic": "food"} or {"AND": [{"topic": {"in": ["food", '
    '"travel"]}}, {"created_at": {"gte": "2026-01-01"}}]}; operators eq ne gt gte lt lte in nin contains '
    "icontains, combined with AND, OR, NOT."))]

