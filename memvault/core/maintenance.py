"""Maintenance: garbage collection, reset, and moving commits to and from a remote."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.errors import UsageError, VaultError
from memvault.vault.forget import record as erasure_record
from memvault.vault.forget.eviction import GcPlan, parse_age, plan_eviction, plan_purge
from memvault.vault.format.entry import Entry, now
from memvault.vault.format.fields import check_scopes
from memvault.vault.git import rewrites

if TYPE_CHECKING:
    from memvault.core.adding import Adding
    from memvault.core.base import Storage
    from memvault.core.erasing import Erasing
    from memvault.core.reading import Reading
    from memvault.core.searching import Searching


@dataclass(frozen=True)
class Repository:
    """Where the vault's commits go: `work_dir` is the repository's folder, the vault's own unless
    `enclosing` (a notes repository the vault is a folder of)."""

    root: Path
    work_dir: Path
    enclosing: bool
    description: str  # one line for people ("the vault's own git repository at ...")


class Maintenance:
    """Whole-vault operations."""

    def __init__(self, storage: Storage, reading: Reading, searching: Searching, adding: Adding,
                 erasing: Erasing) -> None:
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper
        self.reading = reading
        self.searching = searching
        self.adding = adding
        self.erasing = erasing

    def gc(self, max_entries: int | None = None, purge_older_than: str | None = None, dry_run: bool = False,
           git_gc: bool = True) -> GcPlan:
        """Evict the oldest facts and turns above the limit (soft), purge old tombstones, compact git."""
        limit = max_entries or self.settings.vault.max_entries
        live, tombstones = [], []
        if purge_older_than or self._may_evict(limit):
            for rel, item in self.vault.iter_entries(include_deleted=True):
                if isinstance(item, Entry):
                    (tombstones if item.deleted else live).append((rel, item))
        plan = GcPlan(evict=plan_eviction([e for _, e in live], limit))
        if purge_older_than:
            plan.purge = plan_purge(tombstones, parse_age(purge_older_than), now())
        if dry_run:
            return plan
        if plan.evict or plan.purge:
            subject = f"memvault gc: evicted {len(plan.evict)}, purged {len(plan.purge)}"
            with self.storage.write("gc", subject) as tx:
                # Planned before the lock: another writer may have deleted or purged some since.
                plan.evict = [entry for entry in plan.evict if self.vault.is_live(entry.id)]
                plan.purge = [(rel, entry) for rel, entry in plan.purge if (self.vault.root / rel).is_file()]
                for entry in plan.evict:
                    tx.soft_delete(entry, event="EVICT")
                for rel, entry in plan.purge:
                    tx.purge(rel, entry.id)
        if git_gc:
            self.vault.git.compact()
        self.keeper.compact()
        return plan

    def _may_evict(self, limit: int) -> bool:
        """Whether some conversation holds more entry files than `limit`, counted by name alone: reading
        every file to find nothing to evict was most of a gc's 570 s at a million memories."""
        counts = Counter(folder.split("/", 2)[1] for folder, _ in self.vault.entry_names())
        return max(counts.values(), default=0) > limit

    def repository(self) -> Repository:
        """The git repository the vault commits to (its own, or an enclosing one)."""
        git = self.vault.git
        return Repository(git.root, git.work_dir, git.enclosing, git.describe())

    def push(self, remote: str | None = None, force_with_lease: bool = False) -> str:
        """Push to the remote. After an erase the remote still holds the old history: a plain push is
        refused with a pointer to `force_with_lease`, which replaces it only if it is still the one
        this vault saw before the rewrite (docs/architecture.md, Erasure)."""
        git, state = self.vault.git, self.vault.state_dir
        with self.vault.lock():
            name = git.remote_name(remote or self.settings.vault.git_remote or None)
            branch = git.repo.active_branch.name
            hint = (f"`memvault erase` rewrote this vault's history and {name} still holds the old one (with "
                    "what was erased); replace it with `memvault push --force-with-lease`"
                    if erasure_record.erased(self.vault.root, "HEAD") else "")
            git.push(name, (rewrites.lease(state, name, branch) or "") if force_with_lease else None, hint)
            if force_with_lease:
                rewrites.leased(state, name, branch)
            return name

    def pull(self, remote: str | None = None):
        """Pull others' commits, then bring the index in step with the files that arrived."""
        from memvault.vault.devices.drivers import install_drivers
        from memvault.vault.git.remote import PullClash

        try:
            with self.vault.lock():
                install_drivers(self.vault.git)  # this machine's interpreter and module path, before git merges
                self.vault.git.pull(remote or self.settings.vault.git_remote or None,
                                    self.settings.sync.timeout_seconds, self.refuse_unsafe)
                erasure_record.drop_erased(self.vault.root)  # what erasure records list never comes back through a pull
        except PullClash:
            self.storage.reindex()  # what arrived is in the files: the index follows them, then the error is told
            raise
        return self.storage.reindex()

    def refuse_unsafe(self, tracking: str) -> None:
        """A pull checks out the remote's tree as it is: one that holds a path no checkout can hold
        safely (vault.devices.safety) is refused before anything moves; `sync` merges the rest of it."""
        from memvault.vault.devices import safety

        git = self.vault.git
        flagged = safety.unsafe_paths(git, tracking, safety.root_prefix_of(git), git.head_sha())
        if flagged:
            shown = ", ".join(repr(p) for p in sorted(flagged)[:3]) + (" ..." if len(flagged) > 3 else "")
            raise VaultError(f"the remote's head holds {len(flagged)} path(s) no checkout can hold safely "
                             f"({shown}): nothing was pulled; `memvault sync` merges the rest without them")

    def stray_files(self) -> list:
        """Markdown files under entries/ that are in no folder memvault reads (see Vault.stray_files)."""
        return self.vault.stray_files()

    def delete_scope(self, scopes: dict[str, Any], erase: bool = False, reason: str = "") -> int:
        """Everything stored under these scopes (every one given must match): facts (expired ones
        too), turns and the conversation summaries, soft-deleted in one commit; with `erase`, removed
        from every commit instead, and a user_id alone erases everything from or about that user,
        history included. Returns how many entries were deleted (0 for a whole user's erasure)."""
        scopes = check_scopes(scopes)
        if not scopes:
            raise UsageError("name at least one scope (user_id, agent_id, run_id): reset() deletes everything")
        if erase and set(scopes) == {"user_id"}:
            self.erasing.erase(user=scopes["user_id"], reason=reason)
            return 0
        ids = [row["id"] for row in self.searching.select(scopes, role=None, show_expired=True)]  # facts and turns
        ids += [entry.id for _, entry in self.reading.list(role="summary", scopes=scopes).entries]
        if erase:
            if ids:
                self.erasing.erase(ids=ids, reason=reason)
            return len(ids)
        return len(self.adding.delete(ids))

    def reset(self) -> int:
        """Soft-delete every live entry (facts, turns, summaries) in one commit, then rebuild the index
        from the files. Files with broken front matter are left alone. Returns how many were deleted."""
        with self.storage.write("reset", "memvault reset: soft-deleted every entry") as tx:
            # Listed under the vault lock, so an entry another process writes meanwhile is included.
            for entry in [item for _, item in self.vault.iter_entries() if isinstance(item, Entry)]:
                tx.soft_delete(entry)
        self.storage.reindex(full=True)
        return len(tx.events)
