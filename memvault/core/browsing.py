"""Browsing: what a person looking at the whole vault asks (the web page, memvault.ui): pages of
entries from the index, a conversation's timeline, one file's text today or in the past, the
vault's past a page at a time, what changed between two moments, and restoring a soft delete.

Lists come from the index (caught up with every write first), so a page of a 10k-memory vault
reads no file; a single memory is read from its file, the source of truth. Given `as_of` (a date,
time, commit or resolved PastCommit), the rows read are the past's own (`Searching.index_as_of`
without ranking: memvault.index.past_rows, no past index built), so every list can show the vault
as it was then."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.core.base import short
from memvault.core.caller import Caller, walls
from memvault.errors import NotFoundError, UsageError
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry

if TYPE_CHECKING:
    from memvault.core.base import Storage
    from memvault.core.reading import Reading
    from memvault.core.searching import Searching
    from memvault.vault.git.timetravel import PastCommit

MAX_CHANGES = 500  # changes between two moments shown at once: a page, not a dump of a bulk import
ENTRY_STATUS = {"A": "added", "M": "changed", "D": "removed"}


@dataclass
class Page:
    """One page of a list, and how many there are in all."""

    items: list[Any]
    total: int
    offset: int
    limit: int


@dataclass
class Change:
    """One entry file changed between two moments: its text then and now (None: absent)."""

    status: str  # added | changed | removed | deleted | restored
    path: str
    memory_id: str | None
    old: str | None
    new: str | None


@dataclass
class Changes:
    start: PastCommit
    end: PastCommit
    commits: list = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    more: bool = False


def scoped_sql(conversation: str | None, role: str | None, scopes: dict[str, Any] | None) -> tuple[str, list]:
    """The WHERE of a listing: conversation, role and scopes, each only when given."""
    parts, params = [], []
    if conversation is not None:
        parts.append("e.conversation_id = ?")
        params.append(layout.check_conversation_id(conversation))
    if role is not None:
        parts.append("e.role = ?")
        params.append(role)
    for key, value in walls(scopes).items():
        parts.append(f"e.{key} = ?")
        params.append(value)
    return " AND ".join(parts) or "1", params


class Browsing:
    """Reads for browsing the vault, and the restore of a soft delete."""

    def __init__(self, storage: Storage, reading: Reading, searching: Searching) -> None:
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper
        self.reading = reading
        self.searching = searching

    def overview(self, scopes: dict[str, Any] | None = None,
                 as_of: str | PastCommit | None = None) -> dict[str, list[dict[str, Any]]]:
        """Per conversation: how many entries of each role, and the last activity (epoch seconds);
        and the scopes (user, agent, run) with their counts."""
        where, params = scoped_sql(None, None, scopes)
        with self.searching.index_as_of(as_of, ranking=False) as (index, _):
            rows = index.conn.execute(
                "SELECT conversation_id, role, count(*), max(max(created_at, updated_at)) FROM entries e "
                f"WHERE {where} GROUP BY conversation_id, role", params).fetchall()
            scope_rows = index.conn.execute(
                "SELECT user_id, agent_id, run_id, count(*) FROM entries e WHERE "
                f"{where} AND (user_id IS NOT NULL OR agent_id IS NOT NULL OR run_id IS NOT NULL) "
                "GROUP BY user_id, agent_id, run_id ORDER BY count(*) DESC LIMIT 200", params).fetchall()
        conversations: dict[str, dict[str, Any]] = {}
        for conversation, role, count, last in rows:
            found = conversations.setdefault(conversation, {"conversation": conversation, "counts": {}, "last": 0.0})
            found["counts"][role] = count
            found["last"] = max(found["last"], last or 0.0)
        return {"conversations": sorted(conversations.values(), key=lambda c: -c["last"]),
                "scopes": [{"user_id": u, "agent_id": a, "run_id": r, "count": n} for u, a, r, n in scope_rows]}

    def rows_page(self, conversation: str | None = None, role: str | None = None,
                  scopes: dict[str, Any] | None = None, offset: int = 0, limit: int = 50,
                  as_of: str | PastCommit | None = None) -> Page:
        """Index rows, newest first, one page of them."""
        where, params = scoped_sql(conversation, role, scopes)
        with self.searching.index_as_of(as_of, ranking=False) as (index, _):
            total = index.count(where, params)
            rowids = [r for (r,) in index.conn.execute(
                f"SELECT rowid FROM entries e WHERE {where} ORDER BY e.created_at DESC, e.rowid DESC "
                "LIMIT ? OFFSET ?", (*params, int(limit), int(offset)))]
            found = index.rows(rowids)
        return Page([found[r] for r in rowids if r in found], total, offset, limit)

    def timeline(self, conversation: str, scopes: dict[str, Any] | None = None, offset: int = 0,
                 limit: int = 50, as_of: str | PastCommit | None = None) -> Page:
        """A conversation's turns, oldest first, each with the facts taken from it (`facts`); facts
        whose turn is not on the page (or has none) come as their own items."""
        where, params = scoped_sql(conversation, None, scopes)
        where += " AND e.role IN ('user', 'assistant', 'memory')"
        with self.searching.index_as_of(as_of, ranking=False) as (index, _):
            total = index.count(where + " AND (e.role <> 'memory' OR e.source IS NULL)", params)
            turns = index.select(where + " AND (e.role <> 'memory' OR e.source IS NULL)", params, None,
                                 newest_first=False)[offset:offset + limit]
            ids = [t["id"] for t in turns]
            facts = index.select(where + " AND e.role = 'memory' AND e.source IN (SELECT value FROM json_each(?))",
                                 [*params, _json(ids)], None, newest_first=False) if ids else []
        by_turn: dict[str, list] = {}
        for fact in facts:
            by_turn.setdefault(fact["source"], []).append(fact)
        return Page([{**turn, "facts": by_turn.get(turn["id"], [])} for turn in turns], total, offset, limit)

    def summary(self, conversation: str, as_of: str | PastCommit | None = None) -> Entry | None:
        """The conversation's rolling summary (as it read at `as_of`), None when it has none."""
        if as_of is not None:
            found, _ = self.entries_as_of(as_of, conversation, "summary", limit=1)
            return found.items[0] if found.items else None
        return self.vault.summary(layout.check_conversation_id(conversation))

    def conversation_named(self, name: str) -> str:
        """The conversation a page's link names: by its folder (layout.folder_for: "a/b" lives in a
        hashed folder), else the name itself as an id."""
        with self.searching.index_as_of(None, ranking=False) as (index, _):
            ids = {row[0] for row in index.conn.execute("SELECT DISTINCT conversation_id FROM entries")}
        if name in ids:
            return name
        return next((found for found in sorted(ids) if layout.folder_for(found) == name), name)

    def conversations(self) -> list[str]:
        """The conversations' folder names, sorted."""
        return self.vault.conversations()

    def entry_file(self, memory_id: str) -> tuple[PurePosixPath, Entry, str]:
        """A memory (live or a tombstone) with its file's whole text."""
        rel, entry = self.reading.get(memory_id)
        return rel, entry, self.vault.read_content(rel)

    def entry_as_of(self, memory_id: str, as_of: str | PastCommit) -> tuple[PurePosixPath, Entry, str, PastCommit]:
        """A memory as its file read at a past moment (a tombstone if it was deleted by then)."""
        from memvault.vault.git.timetravel import entry_at

        past = self.searching.resolve_as_of(as_of)
        rel, entry, content = entry_at(self.vault.git, past, memory_id)
        return rel, entry, content, past

    def entries_as_of(self, as_of: str | PastCommit, conversation: str | None = None, role: str | None = None,
                      scopes: dict[str, Any] | None = None, offset: int = 0, limit: int = 50) -> tuple[Page, Any]:
        """The live entries of a past moment, newest first, one page: the folders say the conversation
        and the role, so only the page's files are read (scopes, in the files only, need them all)."""
        from memvault.core.reading import matches
        from memvault.vault.git.timetravel import names_at, parsed_at

        past = self.searching.resolve_as_of(as_of)
        folder = layout.folder_for(layout.check_conversation_id(conversation)) if conversation else None
        kind = layout.KIND_DIRS.get(role) if role else None  # the role from the folder: nothing parsed
        # Paths as strings: only the files read become PurePosixPaths (10k of them cost a page's time).
        # A live file's conversation folder is its second part: the prefix picks the candidates cheaply.
        start = f"{layout.ENTRIES}/{folder}/" if folder is not None else ""
        listing = [(rel, blob) for rel, blob in names_at(self.vault.git, past) if rel.startswith(start)
                   and ((folder is None and kind is None) or _in_folder(rel.split("/"), folder, kind))]
        listing.sort(key=lambda pair: pair[0].rpartition("/")[2], reverse=True)  # names start with their time
        wanted = walls(scopes)
        if (role is None or kind is not None) and not wanted:
            chosen = parsed_at(self.vault.git, past, _paths(listing[offset:offset + limit]))
            return Page([e for _, e in chosen if isinstance(e, Entry)], len(listing), offset, limit), past
        kept = [e for _, e in parsed_at(self.vault.git, past, _paths(listing))
                if isinstance(e, Entry) and matches(e, None, role, wanted)]
        return Page(kept[offset:offset + limit], len(kept), offset, limit), past

    def changes_between(self, start: str | PastCommit, end: str | PastCommit | None = None) -> Changes:
        """What changed in the entry files from `start` to `end` (now when None): the commits, and
        each file added, changed, removed, soft-deleted or restored with its text before and after."""
        from memvault.vault.git.history import Texts

        git = self.vault.git
        first = self.searching.resolve_as_of(start)
        last = self.searching.resolve_as_of(end or "HEAD")
        found = Changes(first, last)
        if first.sha == last.sha:
            return found
        # The commits after `first` up to `last`, counted by git and read as a page of the log as of
        # `last` (the whole log, read to pick them by time, grew with every write the vault ever had).
        count = len(git.run("rev-list", f"{first.sha}..{last.sha}", "--", git.repo_path(".")).split())
        found.commits = self.commits(min(count, MAX_CHANGES), as_of=last) if count else []
        out = git.run("diff", "--name-status", "-z", "-M", first.sha, last.sha, "--", git.repo_path(layout.ENTRIES))
        fields = [f for f in out.split("\0") if f]
        records, i = [], 0
        while i < len(fields):
            status = fields[i][0]
            if status in "RC":
                records.append((status, git.vault_path(fields[i + 1]), git.vault_path(fields[i + 2])))
                i += 3
            else:
                records.append((status, None, git.vault_path(fields[i + 1])))
                i += 2
        found.more = len(records) > MAX_CHANGES
        texts = Texts(git)  # the page's texts, before and after, read at once
        texts.fetch(pair for _, old_rel, rel in records[:MAX_CHANGES]
                    for pair in ((first.sha, old_rel or rel), (last.sha, rel)))
        for status, old_rel, rel in records[:MAX_CHANGES]:
            found.changes.append(self._change(texts, first.sha, last.sha, status, old_rel, rel))
        return found

    def _change(self, texts, before: str, after: str, status: str, old_rel: str | None, rel: str) -> Change:
        old = texts.body(before, old_rel or rel)[0] if status != "A" else None
        new = texts.body(after, rel)[0] if status != "D" else None
        kind = ENTRY_STATUS.get(status, "changed")
        if status == "R":
            was, gone = layout.is_deleted_path(PurePosixPath(old_rel)), layout.is_deleted_path(PurePosixPath(rel))
            kind = "deleted" if gone and not was else "restored" if was and not gone else "moved"
        return Change(kind, rel, layout.id_from_filename(PurePosixPath(rel).name), old, new)

    def restore(self, memory_id: str) -> Entry:
        """Bring a soft-deleted memory back to its live place, one commit (a RESTORE in its history)."""
        _, entry = self.reading.get(memory_id)
        if not entry.deleted:
            raise UsageError(f"memory {entry.id[:8]} is not deleted: nothing to restore")
        if entry.role == "summary":
            raise UsageError("a deleted summary cannot be restored here: the conversation has a new one")
        with self.storage.write("restore", f"memvault restore: {short(entry.text)} [{entry.id[:8]}]",
                        entry.conversation_id) as tx:
            _, live = tx.restore(entry.id)
        return live

    def commits(self, limit: int = 50, operation: str | None = None, conversation: str | None = None,
                as_of: str | PastCommit | None = None) -> list:
        """The vault's commits, newest first, filtered as `memvault log` filters them; with `as_of`,
        the log as it read then (its commit and those before it)."""
        from memvault.vault.git.history import vault_log

        past = self.searching.resolve_as_of(as_of)
        if past is None:
            return vault_log(self.vault.git, limit, operation or None, conversation or None)
        # The commits since then, left out: as many more are asked for, so a page is still whole.
        later = self.reading.commits_after(past)
        found = vault_log(self.vault.git, limit + len(later) if limit else 0, operation or None, conversation or None)
        kept = [commit for commit in found if commit.sha not in later]
        return kept[:limit] if limit else kept

    def journal_days(self, limit: int = 60, as_of: str | PastCommit | None = None) -> list[str]:
        """The days the daily log has a file for (at `as_of`: had then), newest first."""
        past = self.searching.resolve_as_of(as_of)
        if past is not None:
            git = self.vault.git
            listed = git.run("ls-tree", "--name-only", "-z", past.sha, "--", git.repo_path(layout.JOURNAL_DIR) + "/")
            names = [PurePosixPath(path).name for path in listed.split("\0") if path]
        else:
            folder = self.vault.root / layout.JOURNAL_DIR
            if not folder.is_dir() or self.vault.linked_part(PurePosixPath(layout.JOURNAL_DIR)) is not None:
                return []
            names = [p.name for p in folder.iterdir()]
        days = sorted((name for name in names if layout.JOURNAL_NAME.match(name)), reverse=True)
        return [name[:-3] for name in days[:limit]]

    def require_scopes(self, entry: Entry, scopes: dict[str, Any] | None) -> Entry:
        """`entry` if it carries every one of these scopes; NotFoundError otherwise (scopes are walls)."""
        if not Caller.of(scopes).sees(entry):
            raise NotFoundError(f"no memory with id {entry.id[:8]}")
        return entry


def _in_folder(parts: list[str], folder: str | None, kind: str | None) -> bool:
    """Whether an entry file (its path's parts) lies in this conversation folder and kind folder
    (None: any)."""
    return ((folder is None or layout.conversation_folder_of_parts(parts) == folder)
            and (kind is None or layout.kind_of_parts(parts) == kind))


def _paths(listing: list[tuple[str, str]]) -> list[tuple[PurePosixPath, str]]:
    return [(PurePosixPath(rel), blob) for rel, blob in listing]


def _json(values: list[str]) -> str:
    import json

    return json.dumps(values)

