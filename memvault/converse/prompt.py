"""Prompt assembly: the one place that decides what memory adds to a prompt, and in which order.

`memvault chat`, the OpenAI-compatible proxy and the MCP `with-memory` prompt all call `gather` then
`inject`, so every surface shows the model the same context. The order
(docs/architecture.md, Retrieval, step 8): core files, active rules, the latest session summary,
the rolling summary, the relevant memories, then the current message. A layer that has nothing to
say adds no header.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memvault.converse.knowledge import noise
from memvault.core.messages import message_text
from memvault.curate.extract import last_user_index
from memvault.settings import PERSONAL_VAULT
from memvault.vault.format.entry import SCOPE_KEYS, Entry
from memvault.vault.format.layout import WORKSPACE_ROLES

SYSTEM_PROMPT = (
    "You are a helpful assistant with a long-term memory of earlier conversations. Use the remembered "
    "facts when they are relevant to the current message; do not mention them otherwise."
)
CORE_HEADER = "Core memory:"
RULES_HEADER = "Standing instructions from the user (follow them):"
SESSION_HEADER = "Last session:"
SUMMARY_HEADER = "Conversation summary:"
MEMORY_HEADER = "Long-term memory (most relevant first):"
CURRENT_HEADER = "Current message:"


@dataclass
class MemoryContext:
    """What memory adds to one prompt, section by section (each may be empty)."""

    core: list[tuple[str, str]] = field(default_factory=list)  # (core file name, its text, already capped)
    rules: list[str] = field(default_factory=list)  # active procedural rules, oldest first
    latest_session: str | None = None  # the newest episodic session summary, however old
    summary: str | None = None  # the conversation's rolling summary
    memories: list = field(default_factory=list)  # search hits, most relevant first


def memory_line(hit) -> str:
    """How one retrieved memory reads in the prompt: always its text, the truth a person can read
    and edit (a triple only annotates: a fact with one shows its category), as `[category] text`."""
    triple = getattr(hit, "triple", None) or {}
    team = getattr(hit, "vault_name", None)  # a team vault's memory says whose it is: [memory, team vault "ops"]
    where = f', team vault "{team}"' if team and team != PERSONAL_VAULT else ""
    return f"[{triple.get('category') or hit.role}{where}] {hit.text}"


def render(context: MemoryContext, message: str) -> str:
    """The memory context then the current message, as one text (the sections in the documented order)."""
    parts = [f"{CORE_HEADER}\n" + "\n\n".join(f"## {name}\n{text.strip()}" for name, text in context.core)
             if context.core else "",
             f"{RULES_HEADER}\n" + "\n".join(f"- {rule}" for rule in context.rules) if context.rules else "",
             f"{SESSION_HEADER}\n{context.latest_session.strip()}" if (context.latest_session or "").strip() else "",
             f"{SUMMARY_HEADER}\n{context.summary.strip()}" if (context.summary or "").strip() else "",
             MEMORY_HEADER + "\n" + "\n".join(memory_line(hit) for hit in context.memories) if context.memories else "",
             f"{CURRENT_HEADER} {message}"]
    return "\n\n".join(part for part in parts if part)


def inject(messages: list[dict], context: MemoryContext) -> list[dict]:
    """The messages with the last user message wrapped in the memory context (the others untouched),
    and memvault's system prompt when the client sent none."""
    result = [dict(m) for m in messages]
    position = last_user_index(result)
    if position is not None:
        result[position]["content"] = render(context, message_text(result[position]))
    if not any(m.get("role") == "system" for m in result):
        result.insert(0, {"role": "system", "content": SYSTEM_PROMPT})
    return result


def owned_by(entry: Entry, scopes: dict[str, Any]) -> bool:
    """Whether `entry` carries exactly these scopes (folders are for people, the scope fields decide;
    see memvault.vault.format.layout.scope_conversation)."""
    return all(getattr(entry, key) == scopes.get(key) for key in SCOPE_KEYS)


def gather(memvault, query: str, conversation: str, scopes: dict[str, Any],
           retrieval: dict[str, Any] | None = None, core: bool = True) -> MemoryContext:
    """Everything memory has to say for `query` in this conversation and scope. `core`: include the
    core files (the vault owner's; a caller confined to a scope by its API key passes False)."""
    context = MemoryContext()
    if core:
        context.core = [(found.name, found.text) for found in memvault.core_context()]
    context.rules = memvault.active_rules(conversation, scopes)
    latest = memvault.latest_session(conversation, scopes)  # always shown, however old
    context.latest_session = latest.text if latest else None
    if query.strip():
        retrieval = dict(retrieval or {})
        wanted = retrieval.pop("top_k", None) or memvault.settings.retrieval.top_k
        # Memory follows its owner: the same user's facts from every conversation, imported ones included.
        # Team vaults (vault.shared) are the owner's choice, like the core files: not for a scoped key.
        # More are asked for than are shown, and more again while the noise left out below leaves the
        # prompt short and the search had more to give (up to NOISE_MARGIN_MAX times what is shown).
        asked = wanted * NOISE_MARGIN
        while True:
            hits = memvault.search_together(query, conversation, scopes, shared=core, follow_owner=True,
                                            top_k=asked, **retrieval)
            kept = [hit for hit in hits if memory_worth_showing(memvault, hit, latest)]
            if len(kept) >= wanted or len(hits) < asked or asked >= wanted * NOISE_MARGIN_MAX:
                break
            asked *= 2
        context.memories = kept[:wanted]
        if memvault.settings.prompt.assistant_last:  # what the user said outranks what a model answered
            context.memories.sort(key=lambda hit: hit.role == "assistant")
    summary = memvault.summary(conversation)
    if summary is not None and owned_by(summary, scopes):  # another scope's summary is never shown
        context.summary = summary.text
    return context


NOISE_MARGIN = 2
NOISE_MARGIN_MAX = 8


def memory_worth_showing(memvault, hit, latest) -> bool:
    """Rules and core files are shown above, in full; a journal day repeats the facts it lists, at
    length; an old session is left out unless it is recent enough (the latest is shown above); the
    user's questions and the model's non-answers are not memories (converse.knowledge)."""
    return (hit.role != "rule" and hit.role not in WORKSPACE_ROLES.values()
            and not stale_session(hit, latest, memvault.settings.session) and noise(hit.role, hit.text) is None)


def stale_session(hit, latest: Entry | None, session) -> bool:
    """An episodic hit left out of the memories: the latest session (it has its own section), or one
    older than `session.max_age_days` (a query retrieves it, but an old session misleads more than it helps)."""
    from datetime import datetime, timedelta, timezone

    if hit.role != "session":
        return False
    if latest is not None and hit.id == latest.id:
        return True
    return hit.created_at < datetime.now(timezone.utc) - timedelta(days=session.max_age_days)
