"""Team vaults (`vault.shared`): other vaults read beside the personal one, written only when asked.

A shared vault is a vault of its own: its own git history (often a clone of a team's remote, kept
current by `memvault sync`) and its own index under its own `.memvault/`. So a team's conventions and
a person's memories stay in separate histories (docs/architecture.md, Sync). Here:
- search over the personal vault and the shared ones together, each hit marked with its vault;
- where a write goes: the personal vault, unless `--to NAME` names a shared one; a memory that lives
  in a shared vault is changed only through `--to` (curation, chat and the proxy never get there);
- each shared vault synced with its own remote.
A shared vault that is missing or broken is a one-line warning and left out, never a crash.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memvault.errors import MemvaultError, NotFoundError, UsageError, VaultError, first_line
from memvault.settings import PERSONAL_VAULT, Settings, shared_vault_paths

if TYPE_CHECKING:
    from memvault.core import Memvault
    from memvault.core.base import Storage
    from memvault.core.searching import Searching
    from memvault.vault.devices.round import SyncReport

log = logging.getLogger("memvault")

ANY_SHARED = "shared"  # `--to shared`: the one shared vault (unless one is named so)


@dataclass
class SharedSync:
    """What `memvault sync` did with one shared vault: a report, a reason it was skipped, or an error."""

    name: str
    report: SyncReport | None = None
    skipped: str = ""
    error: MemvaultError | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"vault": self.name, **(self.report.to_dict() if self.report else {}),
                **({"skipped": self.skipped} if self.skipped else {}),
                **({"error": str(self.error)} if self.error else {})}


class Sharing:
    """The team vaults beside this one."""

    def __init__(self, storage: Storage, searching: Searching, personal: Memvault,
                 open_vault: Callable[[Settings], Memvault]) -> None:
        """`personal`: the facade of this vault (what a write without `--to` goes to); `open_vault`: how
        a team vault is opened (Memvault.open)."""
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper
        self.searching = searching
        self.personal = personal
        self.open_vault = open_vault

    def open_shared(self, name: str, path: Path) -> Memvault:
        """A shared vault as a Memvault of its own: these settings, its folder, no remote or team
        vaults of its own (a team vault never reaches further)."""
        if path.resolve() == self.vault.root:
            raise UsageError(f"vault.shared: {name!r} is the personal vault itself ({path})")
        settings = copy.deepcopy(self.settings)
        settings.vault.path, settings.vault.shared, settings.vault.git_remote = str(path), [], ""
        return self.open_vault(settings)

    @functools.cached_property
    def shared_opened(self) -> dict[str, Memvault]:
        """The shared vaults that open, by name, opened once for this object's life; a missing or
        broken one is said once (on_notice, else the log) and left out."""
        opened = {}
        for name, path in shared_vault_paths(self.settings.vault.shared).items():
            try:
                opened[name] = self.open_shared(name, path)
            except MemvaultError as exc:
                self.shared_warning(name, exc)
        return opened

    def shared_warning(self, name: str, exc: Exception) -> None:
        (self.storage.on_notice or log.warning)(f"warning: shared vault {name!r} left out: {first_line(exc)}")

    def search_together(self, query: str, conversation: str | None = None, scopes: dict[str, Any] | None = None,
                        filters: dict | None = None, shared: bool = True, **kwargs: Any) -> list:
        """`search` over this vault and, with `shared`, every team vault, the hits ranked together by
        their score and marked with their `vault` ("personal" or the team vault's name). A team vault is
        searched whole: the conversation, scopes and owner's reach narrow the personal vault only (a
        team's conventions are everyone's), mem0 filters and retrieval overrides apply to both."""
        from memvault.core.searching import RetrievalOverrides

        past = self.searching.resolve_as_of(kwargs.pop("as_of", None))
        hits = [dataclasses.replace(hit, vault_name=PERSONAL_VAULT)
                for hit in self.searching.search(query, conversation, scopes, filters, as_of=past, **kwargs)]
        team = self.shared_opened if shared and self.settings.vault.shared else {}
        if not team:
            return hits
        kwargs = {key: value for key, value in kwargs.items() if key not in ("follow_owner", "include_global")}
        for name, other in team.items():
            try:
                found = other.search(query, None, None, filters, as_of=past.moment.isoformat() if past else None,
                                     **kwargs)
            except (MemvaultError, OSError) as exc:  # an unreadable or unindexable team vault: said, left out
                self.shared_warning(name, exc)
                continue
            hits += [dataclasses.replace(hit, vault_name=name) for hit in found]
        known = {key: value for key, value in kwargs.items() if key not in ("show_expired",)}
        top_k = RetrievalOverrides.of(known).applied_to(self.settings.retrieval).top_k
        ranked = sorted(hits, key=lambda hit: -hit.total)[:top_k]
        return [dataclasses.replace(hit, rank=rank) for rank, hit in enumerate(ranked, start=1)]

    def target(self, to: str | None, memory_ids: Iterable[str] = ()) -> Memvault:
        """Where a write goes: this vault, or the shared vault `to` names ("shared": the only one).
        Without `to`, an id that only a shared vault holds is refused with the `--to` that would
        reach it: a shared vault is written only when asked."""
        if to is None:
            self.refuse_shared_ids(memory_ids)
            return self.personal
        if to == PERSONAL_VAULT:
            return self.personal
        paths = shared_vault_paths(self.settings.vault.shared)
        if not paths:
            raise UsageError(f"--to {to}: no shared vault is configured (set vault.shared, e.g. "
                             "`memvault config set vault.shared '[\"team=/path/to/team-vault\"]'`)")
        if to == ANY_SHARED and to not in paths:
            if len(paths) > 1:
                raise UsageError(f"--to shared: which one? vault.shared lists {', '.join(paths)}")
            to = next(iter(paths))
        if to not in paths:
            raise UsageError(f"--to {to}: no such shared vault (vault.shared lists {', '.join(paths)})")
        try:
            return self.open_shared(to, paths[to])
        except MemvaultError as exc:
            raise VaultError(f"shared vault {to!r}: {exc}") from None

    def refuse_shared_ids(self, memory_ids: Iterable[str]) -> None:
        for memory_id in memory_ids:
            name, _ = self.holder(memory_id)
            if name != PERSONAL_VAULT:
                raise UsageError(f"memory {memory_id} is in the shared vault {name!r}: add --to {name} to change it "
                                 "there (a shared vault is written only when asked)")

    def holder(self, memory_id: str) -> tuple[str, Memvault]:
        """(name, Memvault) of the vault that holds this id (or unique prefix): this one first, then
        each team vault; NotFoundError when none does."""
        try:
            self.vault.resolve(memory_id)
            return PERSONAL_VAULT, self.personal
        except NotFoundError as missing:
            for name, other in self.shared_opened.items():
                try:
                    other.vault.resolve(memory_id)
                except NotFoundError:
                    continue
                return name, other
            raise missing from None

    def sync_shared(self) -> list[SharedSync]:
        """Each shared vault synced with its own remote (one with none is skipped, said so); a failure
        is kept in its result, so the others are still synced."""
        results = []
        for name, path in shared_vault_paths(self.settings.vault.shared).items():
            try:
                other = self.open_shared(name, path)
            except MemvaultError as exc:
                results.append(SharedSync(name, error=exc))
                continue
            try:
                if not other.has_remote():
                    results.append(SharedSync(name, skipped="it has no git remote"))
                else:
                    results.append(SharedSync(name, report=other.sync()))
            except MemvaultError as exc:
                results.append(SharedSync(name, error=exc))
            finally:
                other.close()
        return results

    def has_remote(self) -> bool:
        return bool(self.vault.git.repo.remotes)

    def close_shared(self) -> None:
        """Close the team vaults opened (none is opened only to be closed)."""
        for other in self.__dict__.get("shared_opened", {}).values():
            other.close()
