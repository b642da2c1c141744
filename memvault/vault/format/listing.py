"""Where a vault's entries are: conversation folders, entry files (live and deleted, agent-cli's
tombstones too), workspace files, stray markdown files, and the id -> file map.

`EntryListing` is one part of `Vault` (vault.write.store). Listings use os.scandir (no stat per file:
reindex and completion walk 100k files with them); symbolic links are reported, never entered.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from stat import S_ISDIR
from typing import Any

from memvault.errors import AmbiguousIdError, EntryFormatError, NotFoundError
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry


class EntryListing:
    """The listings of a vault's files (reading them is vault.format.reading's job)."""

    def entry_files(self, include_deleted: bool = False, conversation: str | None = None,
                    links: list[str] | None = None) -> Iterator[PurePosixPath]:
        """Relative paths of entry files, sorted; live ones only unless asked (`links`: see entry_names).

        Uses os.scandir (no extra stat per file): reindex and completion walk 100k files with it."""
        for folder, name in self.entry_names(include_deleted, conversation, links):
            yield PurePosixPath(f"{folder}/{name}")

    def entry_names(self, include_deleted: bool = False, conversation: str | None = None,
                    links: list[str] | None = None) -> Iterator[tuple[str, str]]:
        """(folder, file name) of each entry file, as `entry_files` orders them, as plain strings.
        Symbolic links (files or folders) are left out, and their paths added to `links` if given."""
        for folder, names in self.entry_folders(include_deleted, conversation, links):
            for name in names:
                yield folder, name

    def entry_folders(self, include_deleted: bool = False, conversation: str | None = None,
                      links: list[str] | None = None, cache: FolderCache | None = None
                      ) -> Iterator[tuple[str, list[str]]]:
        """`entry_names` a folder at a time: (folder, its entry file names), for a walk of a million
        files that does its own work per file. `cache`: folders not listed again while unchanged."""
        links = [] if links is None else links
        for root in self.entry_roots(include_deleted, conversation):
            for kind in layout.KIND_DIRS.values():
                yield from self.kind_folders(f"{root}/{kind}", links, cache)

    def kind_names(self, folder: str, links: list[str] | None = None) -> Iterator[tuple[str, str]]:
        """(folder, file name) of the entry files of one kind folder ('entries/work/facts'): see
        `kind_file_folders`. A kind folder reached through a link has none (the link goes to `links`)."""
        for day, names in self.kind_folders(folder, links):
            for name in names:
                yield day, name

    def kind_folders(self, folder: str, links: list[str] | None = None,
                     cache: FolderCache | None = None) -> Iterator[tuple[str, list[str]]]:
        """`kind_names` a folder at a time (see `entry_folders`)."""
        links = [] if links is None else links
        link = self.linked_part(PurePosixPath(folder))
        if link is not None:
            if str(link) not in links:
                links.append(str(link))
            return
        yield from kind_file_folders(self.root, folder, links, cache)

    def entry_roots(self, include_deleted: bool, conversation: str | None) -> list[str]:
        """The folders holding kind folders (facts/, turns/...): each conversation's, then (asked for
        deleted entries) its deleted/, then agent-cli's tombstones under entries/deleted/<conversation>/."""
        folders = self.conversation_folders(conversation) if conversation else self.conversations()
        roots = []
        for folder in folders:
            roots.append(f"{layout.ENTRIES}/{folder}")
            if include_deleted:
                roots.append(f"{layout.ENTRIES}/{folder}/{layout.DELETED}")
        if include_deleted:
            tombstones = self.agentcli_tombstone_folders()
            roots += [f"{layout.ENTRIES}/{layout.DELETED}/{folder}" for folder in tombstones
                      if conversation is None or folder in folders]
        return roots

    def agentcli_tombstone_folders(self) -> list[str]:
        """The conversation folders under entries/deleted/, when that folder is agent-cli's tombstone
        root (it holds no kind folder of its own, as a conversation called 'deleted' would)."""
        if not self.is_tombstone_root():
            return []
        return sorted(d.name for d in scandir_dirs(self.root / layout.ENTRIES / layout.DELETED))

    def is_tombstone_root(self) -> bool:
        base = self.root / layout.ENTRIES / layout.DELETED
        return base.is_dir() and not base.is_symlink() and not any((base / top).exists() for top in layout.KIND_TOPS)

    def _file_names(self, folder: str, links: list[str]) -> list[str]:
        """The markdown file names in a folder of no day folders (core/, journal/), sorted: see kind_names."""
        return [name for _, name in self.kind_names(folder, links)]

    def stray_files(self, limit: int = 100) -> list[PurePosixPath]:
        """Markdown files under entries/ in no folder memvault reads entries from (entries/notes/x.md,
        entries/x.md, entries/<conversation>/turns/x.md): never indexed, so `reindex` and `doctor` name
        them (at most `limit`). The kind folders themselves are not walked: the cost is that of the odd
        folders, not of the vault."""
        read_here: dict[str, set[str]] = {}  # facts: {} (read whole), turns: {user, assistant} (only those)
        for kind in layout.KIND_DIRS.values():
            top, _, sub = kind.partition("/")
            read_here.setdefault(top, set()).update([sub] if sub else [])
        stray: list[PurePosixPath] = []

        def walk(rel: PurePosixPath, depth: int, skip: dict[str, set[str]] | set[str]) -> None:
            try:
                items = sorted(os.scandir(self.root / rel), key=lambda item: item.name)
            except (FileNotFoundError, NotADirectoryError, PermissionError):
                return
            for item in items:
                if len(stray) >= limit or item.name.startswith(".") or item.is_symlink():
                    continue
                if item.is_file(follow_symlinks=False) and item.name.endswith(".md"):
                    stray.append(rel / item.name)
                elif not item.is_dir(follow_symlinks=False) or (depth == 0 and item.name == layout.DELETED):
                    continue
                elif isinstance(skip, dict) and item.name in skip:
                    if skip[item.name]:  # turns/: its user/ and assistant/ are read, not what else it holds
                        walk(rel / item.name, depth + 1, skip[item.name])
                elif isinstance(skip, set) and item.name in skip:
                    continue
                elif depth == 0:
                    walk(rel / item.name, 1, {**read_here, layout.DELETED: set()})  # a conversation's folder
                else:
                    walk(rel / item.name, depth + 1, set())

        walk(PurePosixPath(layout.ENTRIES), 0, set())
        return stray

    def newest_entry_files(self, include_deleted: bool = False, conversation: str | None = None
                           ) -> Iterator[tuple[PurePosixPath, float | None]]:
        """Entry files with their creation time, newest first, from their names alone (memvault names
        a file '<created>__<id>.md' and keeps the name). A file whose name carries no time comes
        first, with None: only reading it tells."""
        stamped: list[tuple[str, str]] = []
        for folder, name in self.entry_names(include_deleted, conversation):
            if not layout.STAMPED_NAME.match(name):
                yield PurePosixPath(f"{folder}/{name}"), None
            else:
                stamped.append((name, folder))
        stamped.sort(reverse=True)  # the stamps are fixed-width UTC times: text order is time order
        for name, folder in stamped:
            yield PurePosixPath(f"{folder}/{name}"), layout.time_from_filename(name)

    def workspace_files(self, links: list[str] | None = None) -> Iterator[PurePosixPath]:
        """The workspace files the index holds: journal days, and core files a person has written in
        (one that is still only its explaining comment is left out). Links are reported, not followed."""
        links = [] if links is None else links
        for folder in (layout.CORE_DIR, layout.JOURNAL_DIR):
            for name in self._file_names(folder, links):
                rel = PurePosixPath(folder, name)
                if not layout.is_workspace_path(rel):
                    continue
                if folder == layout.CORE_DIR:
                    try:
                        if not self.read(rel).text:
                            continue
                    except EntryFormatError:
                        pass  # listed: the sync reports why it cannot be read
                yield rel

    def conversations(self) -> list[str]:
        """The conversation folders (not entries/deleted/ when it is agent-cli's tombstone root)."""
        skip = layout.DELETED if self.is_tombstone_root() else None
        return sorted(d.name for d in scandir_dirs(self.root / layout.ENTRIES) if d.name != skip)

    def conversation_folders(self, conversation: str) -> list[str]:
        """The folders a conversation id's entries live in: `layout.folder_for(id)` (the id itself
        when it is a folder name), and for an id that is none, also the folder agent-cli made of it
        ("My Chat" in My_Chat/) when there is one. Each is a checked name: an id never leads out of
        entries/."""
        folder = layout.folder_for(conversation)
        if folder == conversation:
            return [folder]
        theirs = layout.agentcli_slug(layout.check_conversation_id(conversation))
        existing = {*self.conversations(), *self.agentcli_tombstone_folders()}
        return [folder] + ([layout.check_conversation(theirs)] if theirs in existing else [])

    def forget_paths(self) -> None:
        """Drop the cached id -> path map: files changed outside this process (by hand, or another writer)."""
        self._paths = None

    def _id_paths(self) -> dict[str, PurePosixPath]:
        """id -> path for every entry file (live and deleted), from file names where they carry it."""
        if self._paths is None:
            paths: dict[str, PurePosixPath] = {}
            for rel in self.entry_files(include_deleted=True):
                memory_id = layout.id_from_filename(rel.name)
                if memory_id is None:
                    try:
                        memory_id = self.read(rel).id
                    except EntryFormatError:
                        continue
                # A live file wins over its tombstone if both exist.
                if memory_id not in paths or not layout.is_deleted_path(rel):
                    paths[memory_id] = rel
            self._paths = paths
        return self._paths

    def path_of(self, memory_id: str) -> PurePosixPath | None:
        return self._id_paths().get(memory_id)

    def remember_path(self, memory_id: str, rel: PurePosixPath) -> None:
        """Keep the id -> path map in step with this process's own write (the liveness checks of a
        later step in the same transaction read it)."""
        if self._paths is not None:
            self._paths[memory_id] = rel

    def is_live(self, memory_id: str) -> bool:
        """Whether the entry has a live file (not only a tombstone, or nothing)."""
        rel = self.path_of(memory_id)
        return rel is not None and not layout.is_deleted_path(rel)

    def resolve(self, prefix: str, include_deleted: bool = True) -> tuple[PurePosixPath, Entry]:
        """The entry whose id is `prefix` or starts with it, as git resolves short hashes; an id that
        is no UUID's prefix (agent-cli's summary ids, hand-made ones) is matched exactly."""
        prefix = layout.check_id_text(prefix)
        paths = self._id_paths()
        if prefix in paths:
            matches = {prefix: paths[prefix]}
        elif layout.ID_CHARS.match(prefix):
            matches = {i: rel for i, rel in paths.items() if i.startswith(prefix)}
        else:
            matches = {}
        if not include_deleted:
            matches = {i: rel for i, rel in matches.items() if not layout.is_deleted_path(rel)}
        if not matches:
            raise NotFoundError(f"no memory with id {prefix}")
        if len(matches) > 1:
            shown = ", ".join(sorted(i[:12] for i in matches)[:5])
            raise AmbiguousIdError(f"id prefix {prefix} is ambiguous: {len(matches)} memories match ({shown}...)")
        memory_id, rel = next(iter(matches.items()))
        return rel, self.read(rel)


DATED_ENDINGS = tuple(f"/{kind}" for kind in layout.DATED_KINDS)


def kind_file_folders(root: str | Path, folder: str, links: list[str] | None = None,
                      cache: FolderCache | None = None) -> Iterator[tuple[str, list[str]]]:
    """(folder, its file names) for the entry files of one kind folder (`folder`, relative to `root`):
    the markdown files in it (older vaults, files written by hand or by agent-cli), then, for a kind
    written in day folders (layout.DATED_KINDS), those of <YYYY>/<MM>/<DD>/ day by day. Each folder's
    names are sorted. Links (files, day folders) go to `links` when given, never entered. The one
    listing of a kind folder: the vault's, the sync's and TAB completion's (`cache`: see FolderCache)."""
    links = [] if links is None else links
    scan = _scan if cache is None else cache.scan
    root = os.fspath(root)
    yield folder, scan(root, folder, links, ())[0]
    if not is_dated(folder):
        return
    for day in day_folders(folder, lambda parent, shape: scan(root, parent, links, shape)[1]):
        yield day, scan(root, day, links, ())[0]


def is_dated(folder: str) -> bool:
    """Whether a kind folder ('entries/work/facts', 'turns/user') holds day folders (layout.DATED_KINDS)."""
    return f"/{folder}".endswith(DATED_ENDINGS)


def day_folders(folder: str, subfolders) -> list[str]:
    """The <YYYY>/<MM>/<DD>/ folders under a kind folder, in order; `subfolders(parent, shape)` names the
    folders in `parent` whose name has `shape` (layout.DAY_PARTS: years, then months, then days)."""
    days = [folder]
    for shape in layout.DAY_PARTS:
        days = [f"{parent}/{name}" for parent in days for name in subfolders(parent, shape)]
    return days


def flat_files(root: str | Path, folder: str, links: list[str] | None = None) -> list[str]:
    """The markdown file names in `folder` itself (not in its day folders), sorted."""
    return _scan(root, folder, [] if links is None else links, ())[0]


def _scan(root: str | Path, folder: str, links: list[str], shape) -> tuple[list[str], list[str]]:
    """(markdown files, folders whose name has `shape`) in one folder, each sorted, without a stat per
    file (os.scandir's d_type); links among them go to `links`. A missing folder has none."""
    names: list[str] = []
    folders: list[str] = []
    try:
        with os.scandir(os.path.join(root, folder)) as found:
            for item in found:
                name = item.name
                is_md = name.endswith(".md")
                if name[0] == "." or not (is_md or (shape and shape.match(name))):
                    continue
                if item.is_symlink():
                    links.append(f"{folder}/{name}")
                elif is_md and item.is_file(follow_symlinks=False):
                    names.append(name)
                elif not is_md and item.is_dir(follow_symlinks=False):
                    folders.append(name)
    except (FileNotFoundError, NotADirectoryError):
        pass
    return sorted(names), sorted(folders)


class FolderCache:
    """What `_scan` found in each folder, kept beside the folder's (inode, mtime, ctime) of that moment,
    so that a folder whose stamp has not moved is not listed again (a million files of a vault are in
    74k day folders: listing them took 6 s, a stat of each folder 0.3 s). Sound because creating,
    removing or renaming an entry moves its folder's mtime and ctime (an edit in place changes no name),
    and ctime cannot be set back by hand (`touch`, `rsync -a`). A folder changed within `trusted_before`
    of its listing is not kept: a second change in the same clock tick would leave the stamp as it was.
    Folders are stat'ed before they are listed, so a change meanwhile shows as a new stamp next time."""

    def __init__(self, folders: dict[str, Any] | None = None, trusted_before: int = 0) -> None:
        self.folders: dict[str, Any] = folders or {}  # folder (and shape) -> (stamp, names, subfolders, links)
        self.trusted_before = trusted_before  # ns: a folder stamped later than this is listed every time
        self.changed = False  # whether `folders` differs from what it was given

    def scan(self, root: str, folder: str, links: list[str], shape) -> tuple[list[str], list[str]]:
        """`_scan`, from the cache when the folder's stamp is the one it was listed at."""
        key = f"{folder}\0{shape.pattern}" if shape else folder  # a kind folder is listed for files, then years
        try:
            stat = os.lstat(os.path.join(root, folder))
        except FileNotFoundError:  # most conversations lack most kinds: no listing tried
            self.changed |= self.folders.pop(key, None) is not None
            return [], []
        except OSError:
            stat = None
        stamp = stat and (stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns)
        known = self.folders.get(key)
        if known is not None and known[0] == stamp:
            links += known[3]
            return known[1], known[2]
        found: list[str] = []
        names, folders = _scan(root, folder, found, shape)
        links += found
        if stat is not None and S_ISDIR(stat.st_mode) and max(stamp[1:]) < self.trusted_before:
            self.folders[key] = (stamp, names, folders, found)
            self.changed = True
        elif self.folders.pop(key, None) is not None:
            self.changed = True
        return names, folders


def scandir_dirs(path: Path) -> list[os.DirEntry]:
    """The folders in `path`, symbolic links included (entry_names reports those, never enters them)."""
    try:
        return [d for d in os.scandir(path) if d.is_dir() and not d.name.startswith(".")]
    except FileNotFoundError:
        return []


def quick_entry_names(root: str, include_deleted: bool, id_prefix: str = "") -> Iterator[tuple[str, str, bool, str]]:
    """(conversation, kind folder, deleted, file name) of the entry files under the vault `root`, from
    folder listings alone (no stat, no read): what a TAB completing an id walks, every time. With
    `id_prefix`, only the files named '<stamp>__<id>.md' with an id that starts so (a few characters
    typed: a sixteenth of a large vault's names parsed). The places are kind_file_folders' (the kind folder,
    then its day folders), walked by name only: a TAB may take 0.1 s, and a DirEntry test per file of
    a large vault costs a fifth of that."""
    entries, marked = os.path.join(root, layout.ENTRIES), "__" + id_prefix  # id_prefix is lower case
    for conversation in folder_names(entries):
        homes = [(os.path.join(entries, conversation), False)]
        if include_deleted:
            homes.append((os.path.join(entries, conversation, layout.DELETED), True))
        for home, deleted in homes:
            for kind in layout.KIND_DIRS.values():
                for name in names_in_kind(os.path.join(home, kind), is_dated(kind)):
                    # the cheap test first: it keeps a sixteenth of the names per character typed
                    if marked in name.lower() and name.endswith(".md") and name[0] != "." \
                            and name.rpartition("__")[2].lower().startswith(id_prefix):
                        yield conversation, kind, deleted, name


def names_in_kind(folder: str, dated: bool) -> Iterator[str]:
    """Every name in a kind folder and, for a dated kind, in its <YYYY>/<MM>/<DD>/ folders (names only)."""
    yield from _names(folder)
    if dated:
        for day in day_folders(folder, lambda parent, shape: [name for name in _names(parent) if shape.match(name)]):
            yield from _names(day)


def _names(folder: str) -> list[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def folder_names(path: str) -> list[str]:
    """The names of the folders in `path` (links to folders included), none if it cannot be listed."""
    try:
        with os.scandir(path) as found:
            return [d.name for d in found if not d.name.startswith(".") and d.is_dir()]
    except OSError:
        return []
