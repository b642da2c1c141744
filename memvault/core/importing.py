"""Importing: entries another system made, through the gate every add passes, one commit per batch."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol

from memvault.vault.format.entry import Entry

if TYPE_CHECKING:
    from memvault.core.adding import Adding
    from memvault.core.base import Storage
    from memvault.core.browsing import Browsing

# What a curated fact keeps of its turn's metadata: where it came from (the turn itself is `source`).
FACT_METADATA = ("imported_from", "source_conversation", "title")


class ImportItem(Protocol):
    """One entry to bring in (transfer.batches.Item): a dataclass with its exact bytes when it has them."""

    entry: Entry
    data: bytes | None

    @property
    def path(self) -> PurePosixPath: ...


@dataclass
class Imported:
    written: list = field(default_factory=list)  # the items written (those already on disk left out)
    refused: list = field(default_factory=list)  # DROP events of what the gate refused
    facts: int = 0  # facts curated from the turns


class Importing:
    """Brings entries in: `import_entries` gates, then writes under one transaction."""

    def __init__(self, storage: Storage, adding: Adding, browsing: Browsing) -> None:
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper
        self.adding = adding
        self.browsing = browsing

    def import_entries(self, conversation: str, title: str, items: Sequence[ImportItem],
                       curate: Callable[[list], list[tuple[Any, Entry]]] | None = None) -> Imported:
        """Write a batch of `items` into `conversation` in one commit, after the gate every add passes
        (Memvault.gate: the hard guards, each secret's value redacted): a refused item is a DROP event
        in the answer, never written; an item the gate changed is rendered anew (its exact bytes hold
        what was redacted). `curate(kept)`, before the vault is locked: each kept user turn's planned
        facts, as (CurationPlan, turn), written in the same commit with the rolling summary last. An
        item whose file appeared meanwhile (an import of the same source beside this one) is left out."""
        kept, refused = self.adding.gate([item.entry for item in items])
        by_id = {entry.id: entry for entry in kept}
        items = [dataclasses.replace(item, entry=by_id[item.entry.id],
                                     data=item.data if by_id[item.entry.id] is item.entry else None)
                 for item in items if item.entry.id in by_id]
        result = Imported(refused=refused)
        if not items:
            return result
        plans = curate(items) if curate is not None else []
        subject = f"memvault import: {len(items)} entr{'y' if len(items) == 1 else 'ies'} of {title!r}"[:200]
        with self.storage.write("import", subject, conversation) as tx:
            items = [item for item in items if not (self.storage.root / item.path).exists()]  # under the lock now
            for item in items:
                if item.data is not None:
                    tx.write_exact(item.path, item.data, item.entry)
                else:
                    tx.write(item.entry, event="ADD")
            written = {item.entry.id for item in items}
            plans = [(plan, turn) for plan, turn in plans if turn.id in written]
            result.facts = self._apply_curation(tx, conversation, plans) if plans else 0
        result.written = items
        return result

    def _apply_curation(self, tx, conversation: str, plans: list[tuple[Any, Entry]]) -> int:
        """Write every turn's planned facts into the open transaction; the rolling summary once, last."""
        from memvault.curate.events import Placement
        from memvault.curate.ingest import CurationPlan, apply_curation
        from memvault.curate.reconcile import Plan

        facts = 0
        summary = None
        for plan, turn in plans:
            summary = plan.summary or summary
            kept = {key: turn.metadata[key] for key in FACT_METADATA if key in turn.metadata}
            place = Placement(conversation, turn.scopes, kept, source=turn.id)
            events = apply_curation(tx, dataclasses.replace(plan, summary=None), place, self.adding.live_entry, None)
            facts += sum(1 for event in events if event.event in ("ADD", "UPDATE"))
        if summary:
            apply_curation(tx, CurationPlan([], Plan(), summary), Placement(conversation), self.adding.live_entry,
                           self.browsing.summary(conversation))
        return facts
