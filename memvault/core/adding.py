"""Adding, curating, updating and deleting memories: every change is one commit, then indexed."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memvault.core.base import add_subject, short
from memvault.core.caller import ANYONE, Caller
from memvault.core.messages import chat_of, last_user_text, redacted_chat
from memvault.errors import EntryFormatError, UsageError
from memvault.vault.format import layout
from memvault.vault.format.entry import TRIPLE_KEYS, Entry, now
from memvault.vault.format.fields import check_scopes, check_text

if TYPE_CHECKING:
    from memvault.core.base import Storage
    from memvault.core.reading import Reading
    from memvault.core.searching import Searching
    from memvault.curate.events import Placement


@dataclass
class AddResult:
    """What an add did: mem0-style events, and notes on anything that degraded."""

    events: list = field(default_factory=list)  # MemoryEvent
    notes: list[str] = field(default_factory=list)
    turn: Entry | None = None
    curated: bool = False
    stored: list[Entry] = field(default_factory=list)  # the memories stored as given, for doors that show them

    def to_dict(self) -> dict[str, Any]:
        return {"results": [e.to_dict() for e in self.events], "notes": self.notes,
                "turn_id": self.turn.id if self.turn else None, "curated": self.curated}


REDACTED = "a secret's value was redacted before anything read or stored the text"


def placed(messages: Any, conversation: str | None, scopes: dict[str, Any] | None,
           max_chars: int | None = None) -> tuple[str, dict[str, str], list[dict], list[str]]:
    """(conversation, scopes, messages, notes) of an add: the conversation defaults to the scopes'
    folder; the messages are those that may become memories (memvault.core.messages), each secret's
    value redacted before any model sees them (a note says so); an add with nothing to say is a
    UsageError, and so is an id that holds a secret (memvault.vault.format.fields), and a message longer than
    `max_chars` (limits.max_text_chars): checked first, so a 20 MB text is refused before anything
    reads it whole."""
    scopes = check_scopes(scopes)
    conversation = layout.check_conversation_id(conversation or layout.conversation_for_scopes(scopes))
    chat = chat_of(messages)
    for message in chat:
        if max_chars is not None and len(message["content"]) > max_chars:
            check_text(message["content"], max_chars=max_chars)  # the error every door words alike
    chat, changed = redacted_chat(chat)
    return conversation, scopes, chat, [REDACTED] if changed else []


def refusal(text: str):
    """A DROP event when the hard local guards refuse this text (memvault.curate.policy.guard: a
    request to skip safety), else None. Every add and import runs them, whichever door it came
    through, before any LLM sees the words. A secret's value is not a reason to refuse a text: the
    value is redacted and the rest kept (a fact a model extracts that names one is refused later,
    curate.ingest)."""
    from memvault.curate.events import MemoryEvent
    from memvault.curate.policy import guard
    from memvault.text.redact import redact

    reason = guard(text, mentions=False)
    # the event is printed and returned (CLI, REST, logs): it shows the text with its secrets marked
    return MemoryEvent("DROP", None, None, redact(text), reason=reason) if reason else None


def guarded_messages(messages: list[dict]) -> tuple[list[dict], list]:
    """The messages the guards let through, and a DROP event for each one they refuse."""
    kept, dropped = [], []
    for message in messages:
        event = refusal(message["content"])
        if event:
            dropped.append(event)
        else:
            kept.append(message)
    return kept, dropped


def speaker_of(chat: list[dict]) -> str | None:
    """The name of the latest user message: the actor the facts extracted from it are attributed to."""
    return next((m.get("name") for m in reversed(chat) if m["role"] == "user"), None)


class Adding:
    """Writes: verbatim adds, LLM-curated adds, in-place updates, soft deletes."""

    def __init__(self, storage: Storage, reading: Reading, searching: Searching) -> None:
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper
        self.reading = reading
        self.searching = searching

    @functools.cached_property
    def refusal_log(self):
        """The refusals noted under .memvault/ (memvault.curate.refusals): `memvault log`, doctor, the proxy."""
        from memvault.curate.refusals import RefusalLog

        return RefusalLog(self.storage.state_dir)

    def note_refusals(self, events: list, conversation: str | None, scopes: dict[str, Any] | None = None,
                      turn: Entry | None = None, operation: str = "add") -> None:
        """Note the DROP events among `events` in the refusal log: nothing refused is silent, even
        where no one waits for the answer (the proxy's background curation, a session ended by cron)."""
        if any(event.event == "DROP" for event in events):
            self.refusal_log.record(events, conversation, scopes, turn.id if turn else None, operation)

    def refusals(self, days: float | None = None, conversation: str | None = None) -> list:
        """The refusals noted (memvault.curate.refusals.Refusal), oldest first: of the last `days`, of one
        conversation."""
        return self.refusal_log.read(days, conversation)

    def add_entries(self, entries: list[Entry], subject: str | None = None, operation: str = "add") -> list[Entry]:
        """Store new entries in one commit (`subject`: the commit's; default: the memory, or how many)."""
        subject = subject or add_subject(entries)
        conversation = entries[0].conversation_id if entries else None
        with self.storage.write(operation, subject, conversation) as tx:
            for entry in entries:
                tx.write(entry, event="ADD")
        return entries

    def gate(self, entries: list[Entry]) -> tuple[list[Entry], list]:
        """Entries as every door may store them, in order: one the hard guards refuse left out, with a
        DROP event saying why; the others with each secret's value redacted (text, triple, metadata;
        a user turn that finishes a secret its previous user turn began, too). `add --jsonl` and every
        import pass here; `add` does the same to messages (`placed`)."""
        from memvault.text.redact import redact_entry, redact_turn

        kept, refused, previous = [], [], None
        for entry in entries:
            event = refusal(entry.text)
            if event is not None:
                refused.append(event)
                self.note_refusals([event], entry.conversation_id, entry.scopes)
                continue
            if entry.role == "user":
                text, previous = redact_turn(previous, entry.text), entry.text
                entry = entry.replace(text=text) if text != entry.text else entry
            kept.append(redact_entry(entry))
        return kept, refused

    def add_as_given(self, entries: list[Entry]) -> AddResult:
        """Entries a caller built (the CLI's --jsonl, several texts at once), stored as given in one
        commit after the gate every add passes: each one it refuses is a DROP event, not stored."""
        from memvault.curate.events import MemoryEvent

        kept, refused = self.gate(entries)
        if kept:
            self.add_entries(kept)
        given = {entry.id: entry.text for entry in entries}
        notes = [REDACTED] if any(entry.text != given[entry.id] for entry in kept) else []
        return AddResult(refused + [MemoryEvent("ADD", e.id, None, e.text) for e in kept], notes=notes, stored=kept)

    def add_verbatim(self, text: str, conversation: str = "default", role: str = "memory",
                     scopes: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None) -> Entry:
        """Store the text as given, as one fact (or turn), in one commit."""
        text = self.storage.clean_text(text)
        entry = Entry(text=text, role=role, conversation_id=layout.check_conversation_id(conversation),
                      metadata=dict(metadata or {}), **check_scopes(scopes))
        self.add_entries([entry])
        return entry

    def add(self, messages: Any, conversation: str | None = None,
            scopes: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None, infer: bool = True,
            prompt: str | None = None, llm=None, turn: Entry | None = None, whole: bool = False,
            fields: dict[str, Any] | None = None) -> AddResult:
        """Remember what the user said: with an LLM, extract and reconcile facts (one commit with the
        user turn, the facts, tombstones and the rolling summary); without one, or with `infer=False`,
        store each message as given (one commit). What may become a memory is core's to decide, for
        every door: messages are read by memvault.core.messages (content parts, no system messages),
        and a secret or a request to skip safety is dropped (a DROP event) before anything is stored.

        `fields`: front-matter fields every memory of this add carries (expiration_date, memory_type;
        a `created_at` in `metadata` dates them, a message's `name` is its memory's actor_id). A
        procedural memory (`memory_type`) is stored as given.
        `turn`: the user turn is already stored (chat persists turns first); it becomes the source.
        `whole`: facts come from every user message given (mem0's `add(messages)`), not the latest."""
        from memvault.curate.events import Placement

        conversation, scopes, chat, notes = placed(messages, conversation, scopes, self.settings.limits.max_text_chars)
        chat, dropped = guarded_messages(chat)
        carried = {**(metadata or {}), **{key: value for key, value in (fields or {}).items() if value is not None}}
        infer = infer and not carried.get("memory_type")
        llm = (llm or self.storage.llm()) if infer else None
        if not chat:
            result = AddResult()
        elif llm is None:
            result = self._add_as_given(chat, conversation, scopes, carried, keep_role=not isinstance(messages, str))
            if infer:
                result.notes.append("no LLM configured (set llm.model): stored the text as given")
        else:
            speaker = speaker_of(chat)
            place = Placement(conversation, scopes, {**carried, **({"actor_id": speaker} if speaker else {})})
            result = self.curated_add(llm, chat, place, prompt, turn, whole=whole)
        result.events = dropped + result.events
        self.note_refusals(result.events, conversation, scopes, result.turn)
        result.notes = notes + result.notes
        return result

    def _add_as_given(self, chat: list[dict], conversation: str, scopes: dict[str, str], carried: dict[str, Any],
                      keep_role: bool) -> AddResult:
        """Each message as one memory, all in one commit. `keep_role`: the message's role is kept in
        the metadata (messages given as messages, as mem0 keeps it; a plain text has none)."""
        from memvault.curate.events import MemoryEvent, split_fields

        entries = []
        for message in chat:
            given = {**carried, **({"role": message["role"]} if keep_role else {}),
                     **({"actor_id": message["name"]} if message.get("name") else {})}
            fields, rest = split_fields(given)
            entries.append(Entry(text=self.storage.clean_text(message["content"]), conversation_id=conversation,
                                 metadata=rest, **fields, **scopes))
        self.add_entries(entries)
        return AddResult([MemoryEvent("ADD", e.id, None, e.text) for e in entries], stored=entries)

    def extraction_prompt(self, given: str | None = None) -> str | None:
        """The extraction prompt every curated path uses: `given` (a caller's own), else the file
        `llm.extraction_prompt_file` names (read at each use, so an edit applies at once), else None
        (the default prompt). The one place that reads the setting."""
        from memvault.curate.extract import load_prompt

        return given or load_prompt(self.settings.llm.extraction_prompt_file)

    def curated_add(self, llm, chat: list[dict], place: Placement, prompt: str | None,
                     turn: Entry | None, select=None, whole: bool = False) -> AddResult:
        """`select`: the write policy's choice of the extracted facts to store now (core.sessions)."""
        from memvault.curate.ingest import apply_curation

        conversation = place.conversation
        latest = last_user_text(chat)
        if turn is None and latest.strip():
            turn = Entry(text=self.storage.clean_text(latest), role="user", conversation_id=conversation,
                         **place.scopes)

        previous = self.vault.summary(conversation)
        curation = self.plan_turn(llm, chat, conversation, self.stored_facts(conversation, place.scopes),
                                  previous.text if previous else None, self.extraction_prompt(prompt), select, whole)
        learned = sum(1 for d in curation.plan.decisions if d.event != "NONE")
        subject = f"memvault add: {learned} change(s) from \"{short(latest, 40)}\""
        with self.storage.write("add", subject, conversation) as tx:
            if turn is not None and self.vault.path_of(turn.id) is None:
                tx.write(turn, event="TURN")
            source = turn.id if turn else None
            written_by = {"model": self.model_name(llm), **place.provenance}
            events = apply_curation(tx, curation, dataclasses.replace(place, source=source, provenance=written_by),
                                    self.live_entry, previous)
        return AddResult(events, curation.notes, turn, curated=True)

    def plan_turn(self, llm, chat: list[dict], conversation: str, stored, previous_summary: str | None,
                  prompt: str | None = None, select=None, whole: bool = False):
        """What the latest user turn of `chat` teaches (curate.ingest.plan_curation), judged with what every
        curated path judges by: the embedder and the second judge the settings allow for `llm`. An add
        and an import (`stored`: the facts new ones are reconciled with) plan through here."""
        from memvault.curate.ingest import plan_curation

        return plan_curation(llm, chat, conversation, stored, previous_summary, prompt, select, whole=whole,
                             embedder=self.storage.embedder(), judge=self.judge(llm), literal=self.literal(llm))

    def judge(self, llm):
        """The second judge the settings allow for `llm` (curate.judge); None when none may judge."""
        from memvault.curate.judge import judge_for

        return judge_for(self.settings.curation, self.llm_settings(llm), llm)

    def literal(self, llm) -> bool:
        """Whether `llm`'s facts must keep to the user's words (curation.literal_models)."""
        from memvault.settings import model_marked

        return llm is not None and model_marked(self.settings.curation.literal_models, self.llm_settings(llm))

    def llm_settings(self, llm):
        """What describes `llm`: its own settings when it has them, else the configured ones."""
        from memvault.settings import LLMSettings

        own = getattr(llm, "settings", None)
        return own if isinstance(own, LLMSettings) else self.settings.llm

    def model_name(self, llm) -> str:
        """The model an LLM client calls (its own settings' llm.model, else the configured one), for
        the facts it writes ("" when neither names one)."""
        own = getattr(getattr(llm, "settings", None), "model", None)
        return own if isinstance(own, str) and own else self.settings.llm.model

    def stored_facts(self, conversation: str, scopes: dict[str, Any]):
        """The conversation's facts new ones are reconciled with (curate.ingest.StoredFacts)."""
        from memvault.curate.ingest import StoredFacts

        def neighbours_of(fact: str) -> list[tuple[str, str]]:
            hits = self.searching.search(fact, conversation, scopes, {"role": "memory"}, top_k=5, score_threshold=0.0,
                               recency_weight=0.0, mmr_lambda=1.0, include_global=False)
            return [(h.id, h.text) for h in hits]

        return StoredFacts(neighbours_of)

    def live_entry(self, memory_id: str, caller: Caller = ANYONE) -> Entry | None:
        """The live entry with exactly this id, when `caller` may see it (else None)."""
        rel = self.vault.path_of(memory_id)
        if rel is None or layout.is_deleted_path(rel):
            return None
        try:
            entry = self.vault.read(rel)
        except EntryFormatError:
            return None
        return entry if caller.sees(entry) else None

    def update(self, memory_id: str, text: str | None = None, metadata: dict[str, Any] | None = None,
               replacement: Entry | None = None) -> Entry:
        """Rewrite a live memory in place (same id): git keeps the old text. A new text passes the
        guards every add runs: one they refuse is a UsageError, and nothing changes. When nothing
        would change, no commit is made and the entry comes back as it was (equal to `get`'s)."""
        _, entry = self.reading.get_live(memory_id)
        if replacement is not None:
            if replacement.id != entry.id:
                raise UsageError(f"the id of a memory cannot be changed (was {entry.id}, now {replacement.id})")
            if replacement.conversation_id != entry.conversation_id:
                raise UsageError("a memory cannot be moved to another conversation by editing it")
            if replacement.role != entry.role:
                raise UsageError("the role of a memory cannot be changed by editing it")
            updated = replacement.replace(text=self.storage.clean_text(replacement.text), updated_at=now(),
                                          created_at=entry.created_at)
        else:
            new_text = self.storage.clean_text(text) if text is not None else entry.text
            # A fact's triple describes its old text: a new text without one leaves none (the graph drops it).
            stale = {key: None for key in TRIPLE_KEYS} if new_text != entry.text else {}
            updated = entry.replace(text=new_text, metadata={**entry.metadata, **(metadata or {})}, updated_at=now(),
                                    **stale)
        if updated.replace(updated_at=entry.updated_at) == entry:
            return entry  # nothing but the time would change: no commit for nothing
        refused = refusal(updated.text) if updated.text != entry.text else None
        if refused:
            raise UsageError(f"not stored: {refused.reason}")
        with self.storage.write("update", f"memvault update: {short(updated.text)} [{entry.id[:8]}]",
                        entry.conversation_id) as tx:
            tx.write(updated, event="UPDATE")
        return updated

    def delete(self, memory_ids: Iterable[str]) -> list[Entry]:
        """Soft-delete memories: each moves to deleted/ as a tombstone, all in one commit."""
        found = (self.reading.get_live(memory_id)[1] for memory_id in memory_ids)
        targets = list({entry.id: entry for entry in found}.values())  # an id named twice is deleted once
        if not targets:
            return []
        subject = (f"memvault rm: {short(targets[0].text)} [{targets[0].id[:8]}]" if len(targets) == 1
                   else f"memvault rm: {len(targets)} memories")
        conversations = {t.conversation_id for t in targets}
        with self.storage.write("delete", subject, conversations.pop() if len(conversations) == 1 else None) as tx:
            for entry in targets:
                tx.soft_delete(entry)
        return targets
