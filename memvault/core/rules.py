"""Procedural rules (role `rule`, entries/<conv>/rules/): durable instructions to the assistant.

Each scope (a conversation and exactly its user_id / agent_id / run_id) holds at most
`rules.max_active` active rules. Adding one archives (soft-deletes, with `replaced_by`) the rules it
supersedes, then the oldest past the cap: archived rules stay in deleted/rules/ and in git, never
lost. A request to drop safety is never stored (curate.rules.safety_problem). One add, one commit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.core.base import short
from memvault.errors import EntryFormatError, NotFoundError
from memvault.vault.format import layout
from memvault.vault.format.entry import SCOPE_KEYS, Entry
from memvault.vault.format.fields import check_scopes

if TYPE_CHECKING:
    from memvault.core.adding import Adding
    from memvault.core.base import Storage
    from memvault.core.reading import Reading

RULES_DIR = layout.KIND_DIRS["rule"]


@dataclass
class RuleResult:
    """What adding a rule did. `event`: ADD (stored), NONE (already in force: `rule` is that one) or
    DROP (refused: `reason` says why; nothing was written). `archived`: (rule, why) soft-deleted;
    `superseded`: those of them the new rule replaces (archived with `replaced_by`)."""

    event: str
    rule: Entry | None = None
    archived: list[tuple[Entry, str]] = field(default_factory=list)
    reason: str | None = None
    notes: list[str] = field(default_factory=list)
    superseded: list[Entry] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event, "id": self.rule.id if self.rule else None,
                "rule": self.rule.text if self.rule else None, "reason": self.reason,
                "archived": [{"id": rule.id, "rule": rule.text, "why": why} for rule, why in self.archived],
                "notes": self.notes}


def same_scopes(entry: Entry, scopes: dict[str, str]) -> bool:
    return all(getattr(entry, key) == scopes.get(key) for key in SCOPE_KEYS)


class Rules:
    """Storing, listing, archiving procedural rules, and the ones in force for a prompt."""

    def __init__(self, storage: Storage, reading: Reading, adding: Adding) -> None:
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper
        self.reading = reading
        self.adding = adding

    def rule_entries(self, conversation: str, archived: bool = False) -> list[Entry]:
        """The rules in one conversation's rules/ folder (deleted/rules/ when `archived`), oldest
        first; files that do not parse are left alone (doctor reports them)."""
        parts = [layout.ENTRIES, layout.folder_for(conversation), *(["deleted"] if archived else []), RULES_DIR]
        folder = PurePosixPath(*parts)
        if self.vault.linked_part(folder) is not None:
            return []  # a folder that is a link is never followed
        try:
            with os.scandir(self.vault.root / folder) as found:
                names = sorted(item.name for item in found if item.name.endswith(".md")
                               and not item.name.startswith(".") and item.is_file(follow_symlinks=False))
        except (FileNotFoundError, NotADirectoryError):
            return []
        rules = []
        for name in names:
            try:
                entry = self.vault.read(folder / name)
            except EntryFormatError:
                continue
            if entry.role == "rule":
                rules.append(entry)
        return sorted(rules, key=lambda entry: entry.created_at)

    def rules(self, conversation: str | None = None, scopes: dict[str, Any] | None = None,
              archived: bool = False) -> list[Entry]:
        """The active rules (archived ones with `archived`) of exactly this scope, oldest first;
        `conversation` None: the one the scopes imply (as for `add`)."""
        scopes = check_scopes(scopes)
        conversation = conversation or layout.conversation_for_scopes(scopes)
        return [rule for rule in self.rule_entries(conversation, archived) if same_scopes(rule, scopes)]

    def active_rules(self, conversation: str, scopes: dict[str, Any] | None = None) -> list[str]:
        """The rules in force for a prompt in this conversation and scope: its own, then those of
        `global` that carry no scope or exactly this one."""
        scopes = check_scopes(scopes)
        own = self.rules(conversation, scopes)
        shared = [] if conversation == layout.GLOBAL else [
            rule for rule in self.rule_entries(layout.GLOBAL) if not rule.scopes or same_scopes(rule, scopes)]
        return [rule.text for rule in [*shared, *own]]

    def add_rule(self, text: str, conversation: str | None = None, scopes: dict[str, Any] | None = None,
                 llm=None, source: str | None = None) -> RuleResult:
        """Store a rule in one commit, archiving the rules it supersedes (asked of `llm` when given)
        and the oldest past `rules.max_active`. The write policy of chat and the proxy calls this for
        instructions it classifies as rules; `source` is the turn it came from."""
        result = self.plan_rule(text, conversation, scopes, llm, source)
        if result.event == "ADD":
            rule = result.rule
            with self.storage.write("rule", f"memvault rule: {short(rule.text)} [{rule.id[:8]}]",
                            rule.conversation_id) as tx:
                self.write_planned_rule(tx, result)
        return result

    def plan_rule(self, text: str, conversation: str | None = None, scopes: dict[str, Any] | None = None,
                  llm=None, source: str | None = None) -> RuleResult:
        """What storing this rule would do (nothing is written): DROP for a safety-dropping request,
        NONE when a rule in force says it already, else ADD with the rules it archives."""
        from memvault.curate.rules import review_rule, safety_problem, same_rule

        text = self.storage.clean_text(text)
        problem = safety_problem(text)
        if problem:
            return RuleResult("DROP", reason=problem)
        scopes = check_scopes(scopes)
        conversation = layout.check_conversation_id(conversation or layout.conversation_for_scopes(scopes))
        active = self.rules(conversation, scopes)
        twin = next((rule for rule in active if same_rule(rule.text, text)), None)
        if twin is not None:
            return RuleResult("NONE", twin, reason="already in force")
        review = review_rule(llm, text, [rule.text for rule in active])
        if review.same_as is not None:
            return RuleResult("NONE", active[review.same_as], reason="already in force (LLM)", notes=review.notes)
        rule = Entry(text=text, role="rule", conversation_id=conversation, source=source, **scopes)
        superseded = [active[i] for i in review.replaces]
        kept = [r for r in active if r not in superseded]
        over_cap = kept[:max(0, len(kept) + 1 - self.settings.rules.max_active)]  # oldest first
        return RuleResult("ADD", rule, [(r, f"superseded by {rule.id[:8]}") for r in superseded]
                          + [(r, f"over rules.max_active ({self.settings.rules.max_active})") for r in over_cap],
                          notes=review.notes, superseded=superseded)

    @staticmethod
    def write_planned_rule(tx, result: RuleResult) -> None:
        """Write an ADD from `plan_rule` inside the caller's transaction: the rule, and the rules it
        archives (superseded ones with `replaced_by`)."""
        rule = result.rule
        tx.write(rule, event="ADD")
        for old, _ in result.archived:
            if old in result.superseded:
                tx.soft_delete(old, replaced_by=rule.id, event="UPDATE")
            else:
                tx.soft_delete(old)

    def remove_rule(self, rule_id: str) -> Entry:
        """Archive one rule (soft delete, one commit)."""
        _, entry = self.reading.get_live(rule_id)
        if entry.role != "rule":
            raise NotFoundError(f"{entry.id[:8]} is not a rule (it is a {entry.role}): use `memvault rm`")
        return self.adding.delete([entry.id])[0]
