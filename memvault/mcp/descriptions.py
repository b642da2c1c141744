"""What a model reads of memvault's MCP server: the instructions, and each tool's description with
the hints clients use to ask before a write."""

from __future__ import annotations

from mcp.types import ToolAnnotations

INSTRUCTIONS = (
    "memvault is the user's long-term memory: facts kept as markdown files in a git repository they can "
    "read and edit. Call `recall` before answering anything that may depend on what the user told you "
    "earlier (preferences, people, projects, decisions). Call `remember` when the user tells you something "
    "worth keeping across sessions. Use the same user_id (and agent_id/run_id) on every call of a session. "
    "Keep working notes for the current task in the scratchpad (scratchpad_write), not in memory. The core "
    "files (read_core) say who the user is and who you are."
)

# What a model reads to choose a tool, and the hints clients use to ask before a write.
TOOLS: dict[str, tuple[str, ToolAnnotations]] = {
    "remember": ("Save something worth keeping across sessions: a preference, a fact about the user, a "
        "decision. With an LLM configured the text is curated (facts extracted and reconciled with what is "
        "already known: added, updated or deleted); without one it is stored as given. Each call is one git "
        "commit in the user's vault.", ToolAnnotations(read_only_hint=False, destructive_hint=False)),
    "recall": ("Search long-term memory for what is relevant to a query (semantic + keyword search, reranked). "
        "Use it before answering questions that may depend on earlier sessions. Returns the best memories "
        "with ids and scores.", ToolAnnotations(read_only_hint=True)),
    "get_memory": ("Read one memory by id (deleted ones too), with its scopes, metadata and file path.",
        ToolAnnotations(read_only_hint=True)),
    "list_memories": ("List memories newest first, by scope, conversation or filter, without a query. "
        "Prefer recall to find something specific.", ToolAnnotations(read_only_hint=True)),
    "update_memory": ("Correct a memory in place (same id): new text and/or metadata. Git keeps the old "
        "version.", ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)),
    "forget": ("Delete a memory the user wants gone or that is wrong. Soft delete: the file moves to "
        "deleted/ and git history keeps it. With erase=true it is removed from every commit and every store: "
        "irreversible, for a user who asks that it be erased for good.",
        ToolAnnotations(read_only_hint=False, destructive_hint=True)),
    "memory_history": ("How a memory changed over time (ADD, UPDATE, DELETE events with their commits), "
        "read back from git.", ToolAnnotations(read_only_hint=True)),
    "list_rules": ("List the user's standing instructions to the assistant (procedural rules such as 'answer in "
        "British English'), oldest first. They are already in memvault's prompts; call this to show or review "
        "them.", ToolAnnotations(read_only_hint=True)),
    "add_rule": ("Save a durable instruction the user gives about how the assistant should behave from now on "
        "('never suggest meat', 'answer in British English'). Rules it replaces, and the oldest past the cap, "
        "are archived (kept in git). A request to drop safety is refused. Facts about the user go to "
        "remember instead.", ToolAnnotations(read_only_hint=False, destructive_hint=False)),
    "scratchpad_write": ("Keep a working note for this session (a plan, intermediate results, open questions) "
        "under a key. Not long-term memory: never committed, gone when the session ends; use remember for what "
        "should last.", ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True)),
    "scratchpad_read": ("Read one note of this session's scratchpad by key.", ToolAnnotations(read_only_hint=True)),
    "scratchpad_list": ("List this session's scratchpad: every key with its note.",
        ToolAnnotations(read_only_hint=True)),
    "read_core": ("Read the core memory files the user keeps for every conversation: USER (who they are), "
        "IDENTITY (who you are), SOUL (your values), MEMORY (durable notes).", ToolAnnotations(read_only_hint=True)),
    "update_core": ("Rewrite one core memory file (its whole text) when the user asks you to change who you are "
        "or what you should always know about them. One git commit; the user can revert it.",
        ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)),
}
