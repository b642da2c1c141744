"""A curated add: extract facts from what the user said, reconcile them with stored facts, summarise.

Every LLM call happens in `plan_curation`, before the vault is locked; `apply_curation` then writes
the turn, the facts, the rewrites and the summary inside one short transaction (one commit).
An UPDATE rewrites the stored fact in place (docs/architecture.md, Curation): same id, same file, new text and
`updated_at`; git keeps the old text, so history reads ADD -> UPDATE under one id.
A target that vanished between the two (another process deleted it) degrades safely: an UPDATE of
a memory that is gone becomes an ADD, a DELETE of one is dropped. Nothing the user said is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from memvault.curate.events import (
    MAX_PROVENANCE_CHARS,
    PROVENANCE_KEYS,
    MemoryEvent,
    Placement,
    split_fields,
)
from memvault.curate.extract import Fact, extract_fact_records, grounding_source, split_latest
from memvault.curate.grounding import Source
from memvault.curate.judge import Judge, judged_problem
from memvault.curate.llm import LLM
from memvault.curate.reconcile import Plan, reconcile
from memvault.curate.summary import update_summary
from memvault.curate.voice import misnamed, mixed_voice, names_of_user, names_user, sentences, user_fact
from memvault.errors import EmbeddingError, LLMError
from memvault.text.wording import consistent_triple
from memvault.vault.format.entry import TRIPLE_KEYS, Entry, now, text_hash
from memvault.vault.write.transaction import Transaction


@dataclass
class StoredFacts:
    """The stored facts new ones are reconciled with: `find(fact)` gives the (id, text) of the nearest;
    the hashes of every text found are kept, so an exact repeat is never stored twice."""

    find: Callable[[str], list[tuple[str, str]]]
    hashes: set[str] = field(default_factory=set)
    failure: str | None = None  # why neighbours could not be looked up (the embedder failed)

    def near(self, fact: str) -> list[tuple[str, str]]:
        """The fact's nearest stored facts; none when the embedder fails: one failing embedding must
        not abort an add (the facts are then ADDed as given, and indexed later from the journal)."""
        if self.failure is None:
            try:
                found = self.find(fact)
            except EmbeddingError as exc:
                self.failure = str(exc)
        if self.failure is not None:
            return []
        self.hashes.update(text_hash(text) for _, text in found)
        return found


@dataclass
class CurationPlan:
    facts: list[str]
    plan: Plan
    summary: str | None  # the new rolling summary, None when unchanged
    notes: list[str] = field(default_factory=list)
    triples: dict[str, dict[str, str]] = field(default_factory=dict)  # fact text -> its triple fields
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (text, why): DROP events

    def triple_of(self, decision) -> dict[str, str]:
        """The triple fields to store with a decision's text: its fact's triple when it describes
        that text (text.wording.consistent_triple), else none ({} when it has none)."""
        text = decision.new_text or ""
        return consistent_triple(text, self.triples.get(decision.origin or text, {}))


def plan_curation(llm: LLM, messages: list[dict], conversation: str, stored: StoredFacts,
                  previous_summary: str | None, prompt: str | None = None,
                  select: Callable[[list[str]], list[str]] | None = None,
                  facts: list[str] | None = None, whole: bool = False, embedder=None,
                  judge: Judge | None = None, literal: bool = False) -> CurationPlan:
    """Ask the LLM what the latest user message (with `whole`, every user message) teaches, and how
    it changes what is stored. Only facts the user's words support are kept (curate.grounding):
    the rest are `dropped`, with the reason.
    `select(facts)`: the extracted facts to store now (the write policy, memvault.curate.policy);
    `facts`: candidates already chosen (held ones promoted at session end): nothing is extracted.
    `embedder`: what the grounding guard judges closeness of meaning with (None: words alone);
    `judge`: the model asked about a fact refused only for closeness (curate.judge; None: nobody);
    `literal`: the model's facts must keep to the user's words (curate.grounding.literal_problem)."""
    notes: list[str] = []
    triples: dict[str, dict[str, str]] = {}
    dropped: list[tuple[str, str]] = []
    if facts is None:
        try:
            records = extract_fact_records(llm, messages, prompt, whole)
            source = grounding_source(messages, whole, embedder, literal)
            speakers = tuple(m["name"] for m in messages if isinstance(m.get("name"), str) and m["role"] != "user")
            records = grounded(records, source, dropped, judge, speakers, voiced=prompt is None)
            facts = [record.text for record in records]
            triples = {record.text: record.triple for record in records if record.triple}
        except LLMError as exc:
            latest = split_latest(messages)[0]
            facts = [latest.strip()] if latest.strip() else []
            notes.append(f"LLM failed ({exc}); stored the message as given")
        if select is not None:
            facts = select(facts)
    neighbours = {fact: stored.near(fact) for fact in facts}
    if stored.failure:
        notes.append(f"embedding failed ({stored.failure}): facts stored without comparing them to stored ones")
    plan = reconcile(llm, facts, neighbours, stored.hashes, embedder=embedder)
    notes += plan.notes
    learned = [d.new_text for d in plan.changes if d.event in ("ADD", "UPDATE") and d.new_text]
    summary = (update_summary(llm, previous_summary, learned, conversation, notes, embedder, literal)
               if learned else None)
    return CurationPlan(facts, plan, summary if summary and summary != (previous_summary or "") else None, notes,
                        triples, dropped + plan.dropped)


NOT_NAMED = "not about the user: a sentence of the model's chatter that does not say the user"


def grounded(records: list[Fact], source: Source, dropped: list[tuple[str, str]],
             judge: Judge | None = None, speakers: tuple[str, ...] = (), voiced: bool = True) -> list[Fact]:
    """The extracted facts the source supports (curate.grounding) and the hard guards let through
    (curate.policy.guard: a fact that names a secret is never kept); each other one is appended to
    `dropped` with its reason. With `voiced` (memvault's own prompt: facts about the user), a fact is put in
    the third person and must be about the user (curate.voice). A fact refused only for closeness is kept
    when `judge` says the user stated it, unless it names one of the other `speakers` (curate.judge.asks)."""
    from memvault.curate.policy import guard

    names = names_of_user(source.said, source.replied or "")

    def verdict(record: Fact) -> tuple[str, str | None, str | None]:
        """The fact's text as stored, why it is refused (or None), and the voice's part of that."""
        text, form = user_fact(record.text, names) if voiced else (record.text, None)
        reason = form or ((mixed_voice(record.text) or misnamed(text, source.said, names)) if voiced else None)
        return text, guard(record.text) or reason or judged_problem(text, source, judge, speakers,
                                                                    record.triple.get("evidence")), form

    kept = []
    for record in records:
        text, reason, form = verdict(record)
        if not reason:
            kept.append(replace(record, text=text))
            continue
        # A weak model's text of several sentences refused for its form (a remark to the other speaker, a
        # pronoun first: the voice's refusals) may hold a fact among its chatter: each sentence is judged as a
        # fact of its own. One refused for what it says is refused whole (alone, its sentences would lose what
        # refused it: the other speaker's news, a question).
        parts = [(part, *verdict(part)[:2]) for part in map(Fact, sentences(record.text))] if form else []
        # a sentence of chatter is a fact only when it says the user ("Remember, it's never too late" is none)
        parts = [(part, text, why or (None if names_user(text, names) else NOT_NAMED)) for part, text, why in parts]
        if len(parts) < 2 or all(why for _, _, why in parts):
            dropped.append((record.text, reason))
            continue
        for part, part_text, why in parts:
            if why:
                dropped.append((part.text, why))
            else:
                kept.append(replace(part, text=part_text))
    return kept


def apply_curation(tx: Transaction, curation: CurationPlan, place: Placement, live: Callable[[str], Entry | None],
                   previous_summary: Entry | None) -> list[MemoryEvent]:
    """Write the planned changes into an open transaction; returns the events, in mem0's shape.
    `live(id)`: the memory as it is now (None when gone)."""
    events: list[MemoryEvent] = []
    conversation, scopes, metadata, source = place.conversation, place.scopes, place.metadata, place.source
    written_by = provenance_of(place)

    fields, metadata = split_fields(metadata)

    def new_fact(text: str, triple: dict[str, str]) -> Entry:
        entry = Entry(text=text, conversation_id=conversation, metadata=dict(metadata), source=source,
                      extra=dict(written_by), **fields, **scopes, **triple)
        tx.write(entry, event="ADD")
        return entry

    for decision in curation.plan.decisions:
        target = live(decision.memory_id) if decision.memory_id else None
        if decision.event == "ADD" or (decision.event == "UPDATE" and target is None):
            entry = new_fact(decision.new_text, curation.triple_of(decision))
            events.append(MemoryEvent("ADD", entry.id, None, entry.text))
        elif decision.event == "UPDATE":
            # In place: same id and file; the turn it came from becomes its source, the new triple its own.
            rewritten = target.replace(text=decision.new_text, updated_at=now(), source=source or target.source,
                                       metadata={**target.metadata, **metadata},
                                       extra={**target.extra, **written_by},
                                       **{**dict.fromkeys(TRIPLE_KEYS), **curation.triple_of(decision)})
            tx.write(rewritten, event="UPDATE")
            events.append(MemoryEvent("UPDATE", target.id, target.text, rewritten.text))
        elif decision.event == "DELETE" and target is not None:
            tx.soft_delete(target)
            events.append(MemoryEvent("DELETE", target.id, target.text, None))
        elif decision.event == "NONE":
            events.append(MemoryEvent("NONE", decision.memory_id, decision.old_text, decision.new_text))
    events += [MemoryEvent("DROP", None, None, text, reason=reason) for text, reason in curation.dropped]
    if curation.summary:
        summary = (previous_summary.replace(text=curation.summary, updated_at=now(),
                                            extra=resummarized(previous_summary)) if previous_summary
                   else Entry(text=curation.summary, role="summary", conversation_id=conversation, **scopes))
        tx.write(summary, event="SUMMARY")
    return events


def provenance_of(place: Placement) -> dict[str, str]:
    """The provenance a fact's file can hold: known keys, each one printable line of at most
    MAX_PROVENANCE_CHARS (a model name from an environment variable may hold anything); any other
    value is left out, never the fact."""
    return {key: value for key, value in place.provenance.items()
            if key in PROVENANCE_KEYS and isinstance(value, str) and value and value.isprintable()
            and len(value) <= MAX_PROVENANCE_CHARS}


def resummarized(previous: Entry) -> dict:
    """The summary's unknown front matter keys, less the mark a sync's union left (memvault.vault.devices.merge):
    this rewrite is the re-summarising it asked for."""
    from memvault.vault.devices.merge import RESUMMARIZE

    return {key: value for key, value in previous.extra.items() if key != RESUMMARIZE}
