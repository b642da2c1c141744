"""The MCP tools: each one call of the library facade (memvault.core.Memvault), exactly as the CLI
makes it, so inputs are checked by the same code and fail with the same messages. Results are the
Python API's dicts (memvault.api.shapes) as structured content, with a short readable text beside them.

Tools run on the SDK's worker threads; one lock makes them take turns, because the index and the
vault's caches are not shared across threads (the Python API does the same).
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError, ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent
from pydantic import Field

from memvault.api.shapes import event_dict, history_record, item_from_entry, item_from_hit, item_from_row
from memvault.core import Memvault
from memvault.errors import MemvaultError, UsageError
from memvault.mcp.fields import (
    LIST_LIMIT,
    MAX_LIMIT,
    AgentId,
    Conversation,
    CoreName,
    Filters,
    MemoryId,
    PadConversation,
    PadKey,
    RunId,
    UserId,
)
from memvault.settings import Settings
from memvault.shapes import layout, named_scopes


def described(entry, rel=None) -> dict[str, Any]:
    """An entry as the Python API shows it, with what an agent needs beside it."""
    data = {**item_from_entry(entry), "role": entry.role, "conversation": entry.conversation_id,
            "deleted": entry.deleted}
    if rel is not None:
        data["path"] = str(rel)
    return data


def answer(text: str, structured: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)


def lines_of(items: list[dict[str, Any]], empty: str) -> str:
    """One line per memory: short id, text (and score when there is one)."""
    if not items:
        return empty
    return "\n".join(f"[{item['id'][:8]}] {item['memory']}" + (f"  (score {item['score']:.2f})" if "score" in item
                                                                 else "") for item in items)


class MemoryTools:
    """The vault behind the server, one call at a time."""

    def __init__(self, settings: Settings) -> None:
        self.core = Memvault.open(settings, create=True)
        self.lock = threading.Lock()
        self.pads: set[str] = set()  # conversations whose scratchpad this server wrote: cleared at its end

    def end_session(self) -> None:
        """The client went away (stdio) or the server stops: its scratchpads go (they are not memory)."""
        with self.lock:
            for conversation in self.pads:
                self.core.scratchpad(conversation).clear()
            self.pads.clear()

    def warm_up(self) -> None:
        """Bring the index in step with the files (hand edits since the last run) and load the model,
        so the agent's first recall does not pay for it. Run in a thread at start-up; a failure here
        is left for the first call that needs the index to report."""
        try:
            with self.lock:
                self.core.reindex()
        except Exception:  # noqa: BLE001 - reported by the call that needs the index
            pass

    def guarded(self, fn: Callable) -> Callable:
        """`fn` one call at a time, its memvault errors turned into MCP tool errors."""

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                with self.lock:
                    return fn(*args, **kwargs)
            except MemvaultError as exc:
                raise ToolError(str(exc)) from None

        return wrapper

    # -- tools -------------------------------------------------------------------------------------
    def remember(self, text: Annotated[str, Field(description="What to remember, in the user's words or "
                                                              "as a short fact.")],
                 conversation: Conversation = None, user_id: UserId = None, agent_id: AgentId = None,
                 run_id: RunId = None,
                 metadata: Annotated[dict[str, Any] | None, Field(description=(
                     'Extra fields kept with the memory, e.g. {"topic": "food"} (filterable later).'))] = None,
                 ) -> CallToolResult:
        conversation = layout.check_conversation_id(conversation) if conversation else None  # as recall names them
        result = self.core.add(text, conversation, named_scopes(user_id, agent_id, run_id), metadata)  # core's guards
        events = [event_dict(event) for event in result.events if event.event != "NONE"]
        structured = {"results": events, "notes": list(result.notes), "curated": result.curated}
        text_lines = [f"{e['event']} [{e['id'][:8]}] {e['memory']}" if e["id"] else
                      f"{e['event']} {e['memory'][:80]!r}: {e.get('reason') or ''}" for e in events] or [
            "Nothing new to remember in that."]
        return answer("\n".join(text_lines + [f"note: {note}" for note in result.notes]), structured)

    def recall(self, query: Annotated[str, Field(description="What to look for, in plain words (a question "
                                                             "or the topic at hand).")],
               conversation: Annotated[str | None, Field(description=(
                   "Search this conversation (and 'global') only; omit to search every conversation."))] = None,
               user_id: UserId = None, agent_id: AgentId = None, run_id: RunId = None,
               filters: Filters = None,
               top_k: Annotated[int | None, Field(ge=1, le=MAX_LIMIT, description="How many results (default: "
                                                                                 "the configured top_k, 5).")] = None,
               threshold: Annotated[float | None, Field(ge=0, le=1, allow_inf_nan=False, description=(
                   "Drop results less relevant than this (0-1; default: the configured threshold)."))] = None,
               ) -> CallToolResult:
        if not query.strip():
            raise UsageError("the query is empty")
        conversation = layout.check_conversation_id(conversation) if conversation else None
        hits = self.core.search(query, conversation, named_scopes(user_id, agent_id, run_id), filters, top_k=top_k,
                                score_threshold=threshold)
        items = [{**item_from_hit(hit), "role": hit.role, "conversation": hit.conversation_id} for hit in hits]
        found: dict[str, Any] = {"results": items}
        relations = self.core.relations(query, conversation, named_scopes(user_id, agent_id, run_id), filters)
        if relations:  # mem0's graph memory, from the facts' triples
            found["relations"] = [relation.to_dict() for relation in relations]
        text = lines_of(items, "No memory matches that.") + "".join(
            f"\n{r.source} -- {r.relationship} -- {r.destination}" for r in relations)
        return answer(text, found)

    def get_memory(self, memory_id: MemoryId) -> CallToolResult:
        rel, entry = self.core.get(memory_id)
        item = described(entry, rel)
        return answer(f"[{entry.id[:8]}] {entry.text}" + (" (deleted)" if entry.deleted else ""), item)

    def list_memories(self, conversation: Annotated[str | None, Field(description=(
                          "Only this conversation; omit for all."))] = None,
                      user_id: UserId = None, agent_id: AgentId = None, run_id: RunId = None,
                      role: Annotated[Literal["memory", "user", "assistant"], Field(description=(
                          "memory: curated facts (default); user/assistant: stored conversation turns."))] = "memory",
                      filters: Filters = None,
                      limit: Annotated[int, Field(ge=1, le=MAX_LIMIT, description="At most this many, newest "
                                                                                 "first.")] = LIST_LIMIT,
                      ) -> CallToolResult:
        if conversation is not None:
            conversation = layout.check_conversation_id(conversation)
            filters = {"AND": [{"conversation_id": conversation}, filters]} if filters else {
                "conversation_id": conversation}
        rows = self.core.select(named_scopes(user_id, agent_id, run_id), filters, role=role, limit=limit)
        items = [{**item_from_row(row), "role": row["role"], "conversation": row["conversation_id"]} for row in rows]
        return answer(lines_of(items, "No memories."), {"results": items})

    def update_memory(self, memory_id: MemoryId,
                      text: Annotated[str | None, Field(description="The new text (replaces the old; git keeps "
                                                                    "it).")] = None,
                      metadata: Annotated[dict[str, Any] | None, Field(description=(
                          "Fields to set in the memory's metadata (merged with what is there)."))] = None,
                      ) -> CallToolResult:
        if text is None and not metadata:
            raise UsageError("nothing to update: give text or metadata")
        _, before = self.core.get_live(memory_id)
        updated = self.core.update(before.id, text=text, metadata=metadata)
        structured = {"event": "UPDATE", "id": updated.id, "old_memory": before.text, "memory": updated.text,
                      "metadata": updated.metadata}
        return answer(f"UPDATE [{updated.id[:8]}] {updated.text}", structured)

    def forget(self, memory_id: MemoryId,
               erase: Annotated[bool, Field(description="Remove it from every commit and derived store: "
                                                        "IRREVERSIBLE, no history is kept. Only when the user "
                                                        "asks for it to be erased for good.")] = False,
               ) -> CallToolResult:
        if erase:
            _, entry = self.core.get(memory_id)
            result = self.core.erase(ids=[entry.id], reason="MCP forget(erase=true)")
            return answer(f"ERASE [{entry.id[:8]}] from {result.commits} commits",
                          {"event": "ERASE", "id": entry.id, "commits": result.commits})
        removed = self.core.delete([memory_id])[0]
        return answer(f"DELETE [{removed.id[:8]}] {removed.text}",
                      {"event": "DELETE", "id": removed.id, "memory": removed.text})

    def memory_history(self, memory_id: MemoryId) -> CallToolResult:
        _, entry = self.core.get(memory_id)
        records = [history_record(event) for event in self.core.history(entry.id)]
        text = "\n".join(f"{r['created_at']} {r['event']}: {r['new_memory'] or r['old_memory'] or ''}"
                         for r in records) or "No history."
        return answer(text, {"id": entry.id, "history": records})

    def list_rules(self, conversation: Conversation = None, user_id: UserId = None, agent_id: AgentId = None,
                   run_id: RunId = None,
                   archived: Annotated[bool, Field(description="List archived (superseded or removed) rules "
                                                               "instead of the ones in force.")] = False,
                   ) -> CallToolResult:
        rules = self.core.rules(conversation, named_scopes(user_id, agent_id, run_id), archived)
        items = [{"id": rule.id, "rule": rule.text, "conversation": rule.conversation_id,
                  "created_at": rule.to_dict()["created_at"]} for rule in rules]
        text = "\n".join(f"[{item['id'][:8]}] {item['rule']}" for item in items) or "No rules."
        return answer(text, {"results": items})

    def add_rule(self, text: Annotated[str, Field(description="The instruction, as the user gave it (\"answer in "
                                                              "British English\").")],
                 conversation: Conversation = None, user_id: UserId = None, agent_id: AgentId = None,
                 run_id: RunId = None) -> CallToolResult:
        result = self.core.add_rule(text, conversation, named_scopes(user_id, agent_id, run_id), llm=self.core.llm())
        if result.event == "DROP":
            raise UsageError(f"not stored: {result.reason}")
        lines = [f"{'ADD' if result.event == 'ADD' else 'ALREADY IN FORCE'} [{result.rule.id[:8]}] {result.rule.text}"]
        lines += [f"ARCHIVED [{rule.id[:8]}] {rule.text} ({why})" for rule, why in result.archived]
        return answer("\n".join(lines + [f"note: {note}" for note in result.notes]), result.to_dict())
    # -- the workspace: scratchpad and core files -----------------------------------------------
    def pad(self, conversation: str | None, user_id: str | None = None, agent_id: str | None = None,
            run_id: str | None = None):
        conversation = conversation or layout.scope_conversation(user_id, agent_id, run_id)
        conversation = layout.check_conversation_id(conversation)
        return conversation, self.core.scratchpad(conversation)

    def scratchpad_write(self, key: PadKey,
                         value: Annotated[str, Field(description="The note (replaces the key's old value; an "
                                                                 "empty value removes the key).")],
                         conversation: PadConversation = None, user_id: UserId = None, agent_id: AgentId = None,
                         run_id: RunId = None) -> CallToolResult:
        conversation, pad = self.pad(conversation, user_id, agent_id, run_id)
        items = pad.write(key, value)
        self.pads.add(conversation)
        done = f"wrote {key!r}" if key.strip() in items else f"removed {key!r}"
        return answer(f"Scratchpad: {done} ({len(items)} key(s)).", {"conversation": conversation,
                                                                    "keys": list(items)})

    def scratchpad_read(self, key: PadKey, conversation: PadConversation = None, user_id: UserId = None,
                        agent_id: AgentId = None, run_id: RunId = None) -> CallToolResult:
        conversation, pad = self.pad(conversation, user_id, agent_id, run_id)
        value = pad.read(key)
        return answer(value, {"conversation": conversation, "key": key.strip(), "value": value})

    def scratchpad_list(self, conversation: PadConversation = None, user_id: UserId = None,
                        agent_id: AgentId = None, run_id: RunId = None) -> CallToolResult:
        conversation, pad = self.pad(conversation, user_id, agent_id, run_id)
        items = pad.items()
        text = "\n".join(f"{key}: {value}" for key, value in items.items()) or "The scratchpad is empty."
        return answer(text, {"conversation": conversation, "items": items})

    def read_core(self, name: Annotated[CoreName | None, Field(description=(
                      "One core file; omit for all four."))] = None) -> CallToolResult:
        shown = {found.name: found for found in self.core.core_context()}
        files = []
        for stem in [name] if name else layout.CORE_NAMES:
            rel, _ = self.core.read_core(stem)
            found = shown.get(rel.name)
            files.append({"name": rel.name, "text": found.text if found else "", "chars": found.chars if found else 0,
                          "cut": bool(found and found.cut)})
        text = "\n\n".join(f"## {f['name']}\n{f['text'] or '(empty)'}" for f in files)
        return answer(text, {"files": files, "max_chars": self.core.settings.core.max_chars})

    def update_core(self, name: CoreName,
                    text: Annotated[str, Field(description=(
                        "The file's whole new text (markdown). It replaces the old text: read_core first and "
                        "keep what still holds."))]) -> CallToolResult:
        rel, changed = self.core.update_core(name, text)
        return answer(f"{'Saved' if changed else 'No change to'} {rel}" + (" (one git commit)." if changed else "."),
                      {"path": str(rel), "changed": changed})

    def core_resource(self, name: str) -> str:
        try:
            with self.lock:
                return self.core.read_core(name)[1]
        except MemvaultError as exc:
            raise ResourceError(str(exc)) from None

    # -- resources and prompt ----------------------------------------------------------------------
    def conversations(self) -> str:
        with self.lock:
            names = self.core.conversations()
        return json.dumps({"conversations": names}, ensure_ascii=False)

    def summary(self, conversation: str) -> str:
        try:
            with self.lock:
                summary = self.core.summary(conversation)
        except MemvaultError as exc:
            raise ResourceError(str(exc)) from None
        if summary is None:
            raise ResourceNotFoundError(f"conversation {conversation!r} has no summary yet")
        return summary.text

    def with_memory(self, message: Annotated[str, Field(description="The user's message to answer.")],
                    conversation: Conversation = None, user_id: UserId = None, agent_id: AgentId = None,
                    run_id: RunId = None) -> str:
        """The chat injection (summary, relevant memories, the message), as `memvault chat` sends it.
        A bad argument is an invalid-params error with memvault's message (the SDK would hide it)."""
        from memvault.converse import MemoryChat
        from memvault.core.messages import message_text

        scopes = named_scopes(user_id, agent_id, run_id)
        conversation = conversation or layout.scope_conversation(user_id, agent_id, run_id)
        try:
            with self.lock:
                chat = MemoryChat(self.core, layout.check_conversation_id(conversation), scopes)
                turn = chat.prepare([{"role": "user", "content": message}])
        except MemvaultError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None
        return message_text(turn.messages[-1])

