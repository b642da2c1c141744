"""Reading entries from the files: one by id, lists (newest first when limited), history, the log."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.core.caller import ANYONE, Caller, walls
from memvault.errors import EntryFormatError, NotFoundError
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry
from memvault.vault.git.history import Event, memory_events

if TYPE_CHECKING:
    from memvault.core.base import Storage
    from memvault.core.searching import Searching
    from memvault.vault.git.timetravel import PastCommit


@dataclass
class Listing:
    entries: list[tuple[PurePosixPath, Entry]] = field(default_factory=list)
    broken: list[EntryFormatError] = field(default_factory=list)


def matches(entry: Entry, conversation: str | None, role: str | None, scopes: dict[str, str]) -> bool:
    return ((conversation is None or entry.conversation_id == conversation)
            and (role is None or entry.role == role)
            and all(getattr(entry, key) == value for key, value in scopes.items()))


def in_conversation(rel: PurePosixPath, entry: Entry, conversation: str | None) -> bool:
    """Whether an entry read from a conversation's folders is the conversation's: every entry of its
    own folder (a folder name asked for lists what is in it), and of another folder it reads (agent-cli's
    My_Chat/ for "My Chat") only those whose id is the one asked: the conversation "My_Chat" lives there too."""
    return (conversation is None or entry.conversation_id == conversation
            or layout.conversation_folder_of(rel) == layout.folder_for(conversation))


class Reading:
    """Reads straight from the files (the source of truth); nothing is embedded."""

    def __init__(self, storage: Storage, searching: Searching) -> None:
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper
        self.searching = searching

    def get(self, memory_id: str, include_deleted: bool = True,
            caller: Caller = ANYONE) -> tuple[PurePosixPath, Entry]:
        """The entry whose id is `memory_id` or starts with it, when `caller` may see it; NotFoundError
        otherwise, as for an id the vault does not hold (scopes are walls)."""
        rel, entry = self.vault.resolve(memory_id, include_deleted=include_deleted)
        if not caller.sees(entry):
            raise NotFoundError(f"no memory with id {str(memory_id)[:40]}")
        return rel, entry

    def get_live(self, memory_id: str, caller: Caller = ANYONE) -> tuple[PurePosixPath, Entry]:
        rel, entry = self.get(memory_id, caller=caller)
        if entry.deleted:
            raise NotFoundError(f"memory {entry.id[:8]} is deleted (see `memvault history {entry.id[:8]}`)")
        return rel, entry

    def list(self, conversation: str | None = None, role: str | None = None, scopes: dict[str, Any] | None = None,
             include_deleted: bool = False, limit: int = 0) -> Listing:
        """Entries oldest first; `limit` > 0: only the newest `limit`, reading as few files as it can
        (files that fail to parse are then reported only among those read)."""
        scopes = walls(scopes)
        if limit > 0:
            return self._newest(conversation, role, scopes, include_deleted, limit)
        listing = Listing()
        for rel, item in self.vault.iter_entries(include_deleted, conversation):
            if isinstance(item, EntryFormatError):
                listing.broken.append(item)
            elif matches(item, None, role, scopes) and in_conversation(rel, item, conversation):
                listing.entries.append((rel, item))
        listing.entries.sort(key=lambda pair: pair[1].created_at)
        return listing

    def _newest(self, conversation, role, scopes, include_deleted, limit) -> Listing:
        import heapq

        listing = Listing()
        newest: list[float] = []  # a min-heap of the `limit` newest creation times found so far
        for rel, created in self.vault.newest_entry_files(include_deleted, conversation):
            if created is not None and len(newest) >= limit and created + 0.001 <= newest[0]:
                break  # every file left was created before the ones found (names are to the millisecond)
            try:
                entry = self.vault.read(rel)
            except EntryFormatError as exc:
                listing.broken.append(exc)
                continue
            if matches(entry, None, role, scopes) and in_conversation(rel, entry, conversation):
                listing.entries.append((rel, entry))
                heapq.heappush(newest, entry.created_at.timestamp())
                if len(newest) > limit:
                    heapq.heappop(newest)
        listing.entries.sort(key=lambda pair: pair[1].created_at)
        listing.entries = listing.entries[-limit:]
        return listing

    def walk_entries(self, include_deleted: bool = False) -> Iterator[tuple[PurePosixPath, Entry | EntryFormatError]]:
        """Every entry file in the vault's own order, as read (an EntryFormatError for one that does not
        parse): for a walk over the whole vault, such as an export."""
        return self.vault.iter_entries(include_deleted)

    def stored_ids_and_paths(self) -> tuple[set[str], set[str]]:
        """The ids and paths of every entry file, tombstones too (an import leaves out what is held:
        a deleted memory stays deleted). An id is read from the file only when its name lacks one."""
        ids, paths = set(), set()
        for rel in self.vault.entry_files(include_deleted=True):
            paths.add(str(rel))
            memory_id = layout.id_from_filename(rel.name)
            if memory_id is None:
                try:
                    memory_id = self.vault.read(rel).id
                except EntryFormatError:
                    continue
            ids.add(memory_id)
        return ids, paths

    def entry_defaults(self, rel: PurePosixPath) -> dict[str, Any]:
        """The fields a file at `rel` that leaves them out would be read with (its place and time)."""
        return self.vault.defaults_for(rel, self.vault.root / rel)

    def history(self, memory_id: str, as_of: Any = None) -> list[Event]:
        """A memory's events; with `as_of` (a date, time, commit or PastCommit), those up to then."""
        rel, entry = self.get(memory_id)
        events = memory_events(self.vault.git, entry.id, rel)
        past = self.searching.resolve_as_of(as_of)
        if past is None:
            return events
        later = self.commits_after(past)
        return [event for event in events if event.commit not in later]

    def commits_after(self, past: PastCommit) -> set[str]:
        """The shas of the vault's commits since `past` (a log or a history as it read then leaves them out)."""
        git = self.vault.git
        return set(git.run("rev-list", f"{past.sha}..HEAD", *git.vault_scope()).split())

    def log(self, limit: int = 20) -> list:
        return self.vault.git.log(limit=limit)
