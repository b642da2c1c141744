"""Bringing another system's memories in, whatever its format: one commit per conversation, resumable
after an interruption, and idempotent.

Each format module turns its source into `Batch`es (one per conversation, holding entries whose ids are
derived from the source's own ids, so the same message always becomes the same entry). The runner
writes each batch in one transaction of the vault (one commit), leaving out every entry the vault
already holds. So a second run changes nothing, and a run that was killed is resumed by running it
again: the transaction it was in is undone by the next writer (store.py), the batches it committed are
found by their ids. A small progress file under `.memvault/imports/` lets the next run skip those
batches without looking at their entries, and says how far the killed run got.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memvault.transfer.batches import Batch, Item
from memvault.vault.format import jsonlines
from memvault.vault.format.entry import Entry

if TYPE_CHECKING:
    from memvault.core import Memvault
    from memvault.curate.llm import LLM

STATE_FOLDER = "imports"
CONTEXT_MESSAGES = 6  # earlier turns the curation of a user turn sees (to resolve "she", "there")


@dataclass
class ImportReport:
    format: str
    conversations: int = 0  # in the source
    imported: int = 0  # conversations committed by this run
    unchanged: int = 0  # conversations with nothing new
    entries: int = 0  # files written
    turns: int = 0  # of them, turns
    facts: int = 0  # facts curated from the turns (--curate)
    present: int = 0  # entries left out because the vault holds them already
    refused: int = 0  # entries the gate every add passes refused (each named in the notes)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def new_items(batch: Batch, held_ids: set[str], held_paths: set[str],
              given: set[str] | None = None) -> tuple[list[Item], int]:
    """The batch's items the vault does not hold yet, and how many repeat an id (or a file) given
    earlier in the batch, or in an earlier batch of this import (`given`, updated here): those are
    left out, for two files with one id would make it ambiguous."""
    new: list[Item] = []
    ids: set[str] = set()
    paths: set[str] = set()
    given = set() if given is None else given
    repeated = 0
    for item in batch.items:
        memory_id, path = item.entry.id, str(item.path)
        if memory_id in ids or path in paths or memory_id in given:
            repeated += 1
            continue
        given.add(memory_id)
        if memory_id in held_ids or path in held_paths:
            continue
        ids.add(memory_id)
        paths.add(path)
        new.append(item)
    return new, repeated


class Importer:
    """Writes batches into a vault (see the module docstring). `llm`: curate new user turns into facts."""

    def __init__(self, memvault: Memvault, source_key: str, fmt: str, llm: LLM | None = None,
                 prompt: str | None = None, on_progress: Callable[[int, int, str], None] | None = None) -> None:
        self.memvault = memvault
        self.llm = llm
        self.prompt = prompt
        self.on_progress = on_progress
        self.report = ImportReport(fmt)
        self.refused_ids: set[str] = set()
        self.state_path = memvault.state_dir / STATE_FOLDER / f"{source_key}.jsonl"

    def run(self, batches: Iterable[Batch], total: int) -> ImportReport:
        started = time.monotonic()
        self.report.conversations = total
        self.memvault.finish_interrupted_write()  # a killed import's half-written conversation is undone first
        self.memvault.remove_temp_files()  # those a minute old: a younger one may be a write under way
        done = {record.get("key"): record.get("digest") for record in jsonlines.read(self.state_path)}
        held_ids, held_paths = self.held()
        given: set[str] = set()  # ids the source gave in this run: a second one is noted, not merged silently
        for number, batch in enumerate(batches, start=1):
            if self.on_progress:
                self.on_progress(number - 1, total, batch.title)
            digest = batch.digest()
            if done.get(batch.key) == digest:
                self.report.unchanged += 1
                continue
            new, repeated = new_items(batch, held_ids, held_paths, given)
            self.report.present += len(batch.items) - len(new) - repeated
            if repeated:
                self.report.notes.append(f"{batch.title}: left out {repeated} entr{'y' if repeated == 1 else 'ies'} "
                                         "whose id the source gives twice (the first is kept)")
            refused_before = self.report.refused
            written = self.write(batch, new) if new else 0
            held_ids.update(item.entry.id for item in new)
            held_paths.update(str(item.path) for item in new)
            self.report.present += len(new) - written - (self.report.refused - refused_before)
            if written:
                self.report.imported += 1
            else:
                self.report.unchanged += 1
            jsonlines.append(self.state_path, [{"key": batch.key, "digest": digest}], mode=0o600, sync=True)
        if self.on_progress:
            self.on_progress(total, total, "")
        self.report.seconds = time.monotonic() - started
        return self.report

    def held(self) -> tuple[set[str], set[str]]:
        """The ids and paths of every entry file in the vault (tombstones too: a deleted memory stays
        deleted, never comes back with the next import)."""
        return self.memvault.stored_ids_and_paths()

    def write(self, batch: Batch, new: list[Item]) -> int:
        """Write the batch's new items in one commit through the facade's import (the gate every add
        passes, then the transaction); each item refused is counted and named in the report. Returns
        how many were written (an import of the same source running beside this one may have written
        some since `held` looked)."""
        curate = None
        if self.llm is not None and batch.curatable:
            def curate(kept: list[Item]) -> list[tuple[Any, Entry]]:
                kept_ids = {item.entry.id for item in kept}  # the model never sees a turn the gate refused
                self.refused_ids.update(item.entry.id for item in new if item.entry.id not in kept_ids)
                return self.curate(batch, kept)
        imported = self.memvault.import_entries(batch.conversation, batch.title, new, curate)
        for event in imported.refused:
            self.report.notes.append(f"{batch.title}: not imported: {event.reason}: {event.new_memory[:80]!r}")
        self.report.refused += len(imported.refused)
        self.report.entries += len(imported.written)
        self.report.turns += sum(1 for item in imported.written if item.entry.role in ("user", "assistant"))
        self.report.facts += imported.facts
        return len(imported.written)

    # -- curation (--curate) -------------------------------------------------------------------------
    def curate(self, batch: Batch, new: list[Item]) -> list[tuple[Any, Entry]]:
        """Ask the LLM what each new user turn teaches, in order, before the vault is locked; each
        turn sees the turns before it. Facts planned for an earlier turn count as stored, so a repeat
        later in the same conversation is not stored twice."""
        from memvault.core.messages import redacted_chat
        from memvault.curate.ingest import StoredFacts
        from memvault.vault.format.entry import text_hash

        new_ids = {item.entry.id for item in new}
        previous = self.memvault.summary(batch.conversation)
        summary = previous.text if previous else None
        planned: set[str] = set()
        plans = []
        chat: list[dict] = []
        items = [item for item in batch.items if item.entry.id not in self.refused_ids]
        # the model never sees a secret, nor a turn the gate refused
        clean, _ = redacted_chat([{"role": item.entry.role, "content": item.entry.text} for item in items])
        for item, message in zip(items, clean, strict=True):
            entry = item.entry
            chat.append(message)
            if entry.role != "user" or entry.id not in new_ids:
                continue
            stored = StoredFacts(lambda fact, entry=entry: self.neighbours(fact, entry), set(planned))
            # judged as an add is: the embedder, and the second judge of a fact refused for closeness alone
            plan = self.memvault.plan_turn(self.llm, chat[-CONTEXT_MESSAGES:], batch.conversation, stored, summary,
                                           self.prompt)
            planned.update(text_hash(d.new_text) for d in plan.plan.changes if d.new_text)
            summary = plan.summary or summary
            plans.append((plan, entry))
            self.report.notes.extend(f"{batch.title}: {note}" for note in plan.notes)
        return plans

    def neighbours(self, fact: str, turn: Entry) -> list[tuple[str, str]]:
        hits = self.memvault.search(fact, turn.conversation_id, turn.scopes, {"role": "memory"}, top_k=5,
                                    score_threshold=0.0, recency_weight=0.0, mmr_lambda=1.0, include_global=False)
        return [(hit.id, hit.text) for hit in hits]
