"""A chat turn with memory: gather and inject the context (converse.prompt), answer, persist, curate.

Shared by `memvault chat`, the OpenAI-compatible proxy and the MCP server, so all inject the same way.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from memvault.converse.prompt import gather, inject
from memvault.core.messages import last_user_text, message_text, previous_user_text
from memvault.text.redact import redact_turn
from memvault.vault.format.entry import Entry
from memvault.vault.format.fields import check_text


@dataclass
class ChatTurn:
    """What one turn used and made."""

    messages: list[dict]  # what was sent to the LLM
    hits: list = field(default_factory=list)
    user_turn: Entry | None = None
    history: list[dict] | None = None  # the client's messages after compaction (None: not compacted)


class MemoryChat:
    """Memory around an LLM conversation: before each reply retrieve and inject, after it persist the
    turns at once and curate them in the background (the user does not wait for it)."""

    def __init__(self, memvault, conversation: str = "default", scopes: dict[str, Any] | None = None,
                 use_memory: bool = True, retrieval: dict[str, Any] | None = None, settings=None, llm=None,
                 core: bool = True) -> None:
        """`memvault` None (incognito, `use_memory` False): no vault is opened; `settings` gives the limits."""
        self.memvault = memvault
        self.settings = settings or memvault.settings
        self.conversation = conversation
        self.scopes = scopes or {}
        self.use_memory = use_memory
        self.retrieval = retrieval or {}
        # Writes the `[compacted]` summary of a long message list (None: snippets); the proxy curates with it.
        self.llm = llm
        self.core = core  # the core files go first in the prompt (not for a caller confined to a scope)
        self.pending: list[threading.Thread] = []
        self.errors: list[str] = []
        self.events: list = []  # the write policy's HOLD and DROP events (curate.ingest.MemoryEvent)

    def prepare(self, messages: list[dict], model: str | None = None, answer_tokens: int | None = None) -> ChatTurn:
        """The messages to send: a long list compacted (converse.compaction), then the memory context
        injected into the last user message (core files first), within the token budget of `model`'s
        context less the answer's `answer_tokens` (memvault.converse.budget).
        Raises UsageError for a message over limits.max_text_chars or with a lone surrogate."""
        from memvault.converse.budget import fit, memory_budget, within_context
        from memvault.converse.compaction import compact

        limit = self.settings.limits.max_text_chars
        for message in messages:
            check_text(message_text(message), f"a {message.get('role') or 'chat'} message", limit)
        model = model or self.settings.llm.model
        compacted = compact(messages, within_context(self.settings, model, answer_tokens), self.llm)
        history = compacted.messages if compacted.folded else None
        messages = compacted.messages
        if not self.use_memory or self.retrieval.get("top_k") == 0:  # top_k 0: nothing retrieved, turns kept
            return ChatTurn(messages=list(messages), history=history)
        context = gather(self.memvault, last_user_text(messages), self.conversation, self.scopes, self.retrieval,
                         core=self.core)
        budget = memory_budget(self.settings, messages, model, answer_tokens)
        context = fit(context, budget, self.settings.prompt.item_tokens)
        return ChatTurn(messages=inject(messages, context), hits=context.memories, history=history)

    def persist(self, turn: ChatTurn, user_text: str, assistant_text: str) -> ChatTurn:
        """Store both turns in one commit."""
        entries = self.turn_entries(turn, user_text, assistant_text)
        if entries:
            try:
                self.memvault.add_entries(entries, f"memvault chat: turn in {self.conversation}", operation="chat")
            except BaseException:
                turn.user_turn = None  # not stored: nothing to curate
                raise
        return turn

    def turn_entries(self, turn: ChatTurn, user_text: str, assistant_text: str) -> list[Entry]:
        """The entries for what was said (none without memory or user text), noted on `turn`."""
        if not self.use_memory or not user_text.strip():
            return []
        # the vault redacts every text; a secret begun in the previous message is only seen from here
        text = redact_turn(previous_user_text(turn.messages), user_text.strip())
        entries = [Entry(text=text, role="user", conversation_id=self.conversation, **self.scopes)]
        if assistant_text.strip():
            entries.append(Entry(text=assistant_text.strip(), role="assistant", conversation_id=self.conversation,
                                 source=entries[0].id, **self.scopes))
        turn.user_turn = entries[0]
        return entries

    def curate(self, turn: ChatTurn, context: list[dict], llm, background: bool = True) -> None:
        """Extract, reconcile and summarise what the user said (in a thread unless told otherwise),
        through the write policy (memvault.core.sessions): each candidate stored now, held until the
        session ends, or dropped; `events` collects the HOLD and DROP events, for the user to see."""
        if not self.use_memory or turn.user_turn is None:
            return

        def work() -> None:
            try:
                result = self.memvault.policy_add(context, self.conversation, self.scopes, llm=llm,
                                                  turn=turn.user_turn)
                self.events.extend(e for e in result.events if e.event in ("HOLD", "DROP"))
            except Exception as exc:  # noqa: BLE001 - reported to the user, the turns are already safe
                self.errors.append(f"curation failed: {exc}")

        if not background:
            work()
            return
        thread = threading.Thread(target=work, name="memvault-curate", daemon=False)
        thread.start()
        self.pending.append(thread)

    def wait(self, timeout: float | None = None) -> None:
        for thread in self.pending:
            thread.join(timeout)
        self.pending = [t for t in self.pending if t.is_alive()]
