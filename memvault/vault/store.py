"""The vault on disk: reads, listings, id lookup, and transactions that write files and commit them.

Only this module writes under entries/ (and the workspace files, core/ and journal/). Every
mutation runs inside `transaction()`: it holds the vault's lock, writes atomically, commits exactly
the touched paths, and undoes its file changes if anything fails before the commit, so a failed
command never leaves half a change behind.

A process killed mid-transaction cannot undo anything itself, so each transaction first notes what
it is about to change in an intent file (.memvault/transaction.jsonl: the HEAD it started from,
then each path with its bytes before). The next writer, under the same lock, finds the file: if
HEAD has not moved, the commit never happened and the half-done change is undone as a rollback
would have; otherwise the commit landed and only the note is dropped (`recover_interrupted`).
"""

from __future__ import annotations

import base64
import glob
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from memvault.errors import (
    AmbiguousIdError,
    EntryFormatError,
    NotFoundError,
    UnsafePathError,
    UsageError,
    VaultError,
)
from memvault.settings import LimitsSettings
from memvault.vault import jsonlines, layout
from memvault.vault.entry import Entry, check_text, now, parse, render
from memvault.vault.git import VaultGit, format_message
from memvault.vault.merge import GITATTRIBUTES_FILE, gitattributes_text
from memvault.vault.redact import redact, redact_entry

GITIGNORE_LINE = f"{layout.STATE_DIR}/"
# .memvault/ ignores itself (as a venv does): whoever made the vault, and whichever command made the
# folder, a `git add .` (agent-cli commits that way) never commits the index.
STATE_GITIGNORE = "# memvault's derived data (index, locks, queues): never committed\n*\n"
LOCK_TIMEOUT = 120.0
# An atomic write's temporary file lives for milliseconds; one older than this was left by a crash.
STALE_TEMP_AGE = 60.0
INTENT_FILE = "transaction.jsonl"
# What git writes into a file it could not merge: such a file is two versions at once, never a memory.
CONFLICT_MARKER = re.compile(r"^<<<<<<< .*\n(?:.*\n)*?=======\n(?:.*\n)*?>>>>>>> ", re.MULTILINE)
MAX_FILE_BYTES = LimitsSettings.max_file_bytes
# Memvault reads and writes nothing through a symbolic link under entries/ (docs/architecture.md, Trust boundaries):
# a link may point anywhere (/etc/passwd, another user's files), and even one that stays inside the
# vault would make one file two entries. Links are reported, never followed.
LINK_REASON = "a symbolic link: memvault does not follow links (replace it with the file itself)"


def is_temp_name(name: str) -> bool:
    """The name of an atomic write's temporary file ('.<name>.XXXX.tmp'): never an entry."""
    return name.startswith(".") and name.endswith(".tmp")


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename, so readers never see half a file.

    Never through a symbolic link: `path` (under the vault's resolved root) must be reached without
    one, checked before any folder is created."""
    folder = os.path.abspath(path.parent)
    if os.path.realpath(folder) != folder or path.is_symlink():
        raise UnsafePathError(f"refusing to write {path}: it is reached through a symbolic link")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class LockBusyError(VaultError):
    """Another process holds the vault's write lock (and kept it longer than we would wait)."""


@dataclass
class Change:
    """One file touched by a transaction: enough to undo it and to update the index after it."""

    rel: PurePosixPath
    before: bytes | None  # the file's bytes before, None if it did not exist
    entry: Entry | None  # the entry now at `rel`, None if the file is gone


@dataclass
class Transaction:
    vault: Vault
    operation: str
    conversation: str | None = None
    events: list[tuple[str, str]] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    commit_sha: str | None = None  # the commit this transaction made (None: nothing changed)

    def _touch(self, rel: PurePosixPath, entry: Entry | None, data: bytes | None = None) -> None:
        """Write `entry` at `rel` (as rendered, or as `data` when given), or remove the file (None)."""
        if entry is not None:
            self.vault.check_new_folder(rel)
            clean = redact_entry(entry)  # secrets never reach the vault (docs/architecture.md, Redaction)
            if clean is not entry:
                entry, data = clean, None  # an exact import's bytes held the secret: rendered anew
            data = render(entry).encode("utf-8") if data is None else data
        self._put(rel, data if entry is not None else None, entry)

    def _put(self, rel: PurePosixPath, data: bytes | None, entry: Entry | None) -> None:
        """Write `data` at `rel` (None: remove it), noted first for a crash's recovery, undone on rollback."""
        path = self.vault.root / rel
        if self.vault.linked_part(rel) is not None:  # neither read, written nor deleted through a link
            raise UnsafePathError(f"refusing to change {rel}: it is reached through a symbolic link")
        before = path.read_bytes() if path.exists() else None
        self.vault.note_intent(rel, before)
        if data is not None:
            atomic_write(path, data)
        else:
            path.unlink(missing_ok=True)
        self.changes.append(Change(rel, before, entry))

    def write_file(self, rel: PurePosixPath, text: str) -> PurePosixPath:
        """Write a workspace file (core/<NAME>.md, journal/<date>.md) as plain markdown, no front
        matter. Only those paths: anything else is an UnsafePathError, as is a path through a link."""
        rel = PurePosixPath(rel)
        if not layout.is_workspace_path(rel):
            raise UnsafePathError(f"refusing to write {str(rel)[:80]}: only core/<NAME>.md and journal/<date>.md "
                                  "are written this way")
        if "\x00" in text:
            raise UsageError(f"the text of {rel} contains a NUL character")
        text = redact(check_text(text, f"the text of {rel}"))
        data = text.encode("utf-8")
        if len(data) > self.vault.max_file_bytes:
            raise UsageError(f"{rel} would be {len(data):,} bytes, more than limits.max_file_bytes "
                             f"({self.vault.max_file_bytes:,})")
        entry = self.vault.workspace_entry(rel, text)
        self._put(rel, data, entry if entry.text else None)  # an empty file leaves the index
        return rel

    def write(self, entry: Entry, event: str | None = None) -> PurePosixPath:
        """Create or overwrite the file of `entry` (an edit keeps the file where it is). A live entry
        whose only file is now a tombstone was deleted by another writer since it was read: refused."""
        rel = self.vault.path_of(entry.id) if event != "ADD" else None
        if rel is not None and layout.is_deleted_path(rel) and not entry.deleted:
            raise deleted_meanwhile(entry.id)
        rel = rel or layout.relative_path(entry)
        self._touch(rel, entry)
        self.vault.remember_path(entry.id, rel)
        if event:
            self.events.append((event, entry.id))
        return rel

    def write_exact(self, rel: PurePosixPath, data: bytes, entry: Entry) -> None:
        """Add a file with exactly these bytes at `rel` (an import reproducing an exported file, which
        memvault's rendering may not: a hand-written file, a key memvault does not know); `entry` is what
        the file reads as. The caller checks that `rel` is an entry path."""
        self._touch(rel, entry, data)
        self.vault.remember_path(entry.id, rel)
        self.events.append(("ADD", entry.id))

    def soft_delete(self, entry: Entry, replaced_by: str | None = None, event: str = "DELETE") -> PurePosixPath:
        """Move an entry into deleted/ as a tombstone (deleted_at, replaced_by): nothing is lost.
        The entry must still be live: callers read it before taking the lock, and another writer may
        have deleted it since (unlinking its path again would then remove the new tombstone)."""
        old_rel = self.vault.path_of(entry.id)
        if not self.vault.is_live(entry.id):
            raise deleted_meanwhile(entry.id)
        current = self.vault.read(old_rel)  # as it is now: an edit may have landed since `entry` was read
        tombstone = current.replace(deleted_at=now(), replaced_by=replaced_by)
        new_rel = layout.tombstone_path(old_rel, tombstone)
        self._touch(new_rel, tombstone)
        self._touch(old_rel, None)
        self.vault.remember_path(entry.id, new_rel)
        self.events.append((event, entry.id))
        return new_rel

    def restore(self, memory_id: str) -> tuple[PurePosixPath, Entry]:
        """Move a tombstone back to its live place (soft_delete undone); the caller checked that the
        memory is deleted and that no live file of its id came back meanwhile."""
        old_rel = self.vault.path_of(memory_id)
        if old_rel is None or not layout.is_deleted_path(old_rel):
            raise NotFoundError(f"memory {memory_id[:8]} is not deleted: nothing to restore")
        live = self.vault.read(old_rel).replace(deleted_at=None, replaced_by=None)
        new_rel = layout.relative_path(live)
        self._touch(new_rel, live)
        self._touch(old_rel, None)
        self.vault.remember_path(memory_id, new_rel)
        self.events.append(("RESTORE", memory_id))
        return new_rel, live

    def purge(self, rel: PurePosixPath, memory_id: str) -> None:
        """Remove a file for good (it stays in git history)."""
        self._touch(rel, None)
        self.events.append(("PURGE", memory_id))

    def rollback(self) -> None:
        for change in reversed(self.changes):
            path = self.vault.root / change.rel
            if change.before is None:
                path.unlink(missing_ok=True)
            else:
                atomic_write(path, change.before)
        self.changes.clear()


class Vault:
    """A vault folder: entries as markdown files, in a git repository."""

    max_file_bytes = MAX_FILE_BYTES  # limits.max_file_bytes: a larger entry file is broken, not read

    def __init__(self, root: Path, git: VaultGit) -> None:
        self.root = root
        self.git = git
        self._paths: dict[str, PurePosixPath] | None = None
        self._intent_head: str | None = None  # HEAD when the open transaction started
        self.on_recovered = None  # callable(paths) told which files a recovery put back (the index follows)
        self.on_committing = None  # callable(paths) told which files a transaction is about to commit

    # -- opening -------------------------------------------------------------------------------
    @staticmethod
    def check_root(path: Path) -> Path:
        path = Path(path).expanduser()
        if path.exists() and not path.is_dir():
            raise VaultError(f"vault path {path} is a file, not a folder")
        return path

    @classmethod
    def open(cls, path: str | Path) -> Vault:
        root = cls.check_root(Path(path))
        if not root.exists():
            raise VaultError(f"no vault at {root}: run `memvault init` (or pass --vault PATH)")
        if not (root / layout.STATE_DIR).is_dir() and not (root / layout.ENTRIES).is_dir():
            raise VaultError(f"{root} is not a memvault vault: run `memvault init --vault {root}`")
        vault = cls(root.resolve(), VaultGit.open(root))
        vault.ensure_state_dir()
        return vault

    @classmethod
    def init(cls, path: str | Path, use_enclosing_repo: bool = False) -> Vault:
        """Create a vault (idempotent): folders, a git repository, and a .gitignore for the index.
        A new vault inside another repository gets a repository of its own unless `use_enclosing_repo`."""
        root = cls.check_root(Path(path))
        root.mkdir(parents=True, exist_ok=True)
        git = VaultGit.init(root, use_enclosing_repo)
        vault = cls(root.resolve(), git)
        vault.ensure_state_dir()
        (vault.root / layout.ENTRIES).mkdir(exist_ok=True)
        gitignore = vault.root / ".gitignore"
        lines = gitignore.read_text(encoding="utf-8").splitlines() if gitignore.exists() else []
        if GITIGNORE_LINE not in lines:
            atomic_write(gitignore, ("\n".join([*lines, GITIGNORE_LINE]) + "\n").encode("utf-8"))
        attributes = vault.root / GITATTRIBUTES_FILE  # how `memvault sync` merges (vault.merge)
        text = gitattributes_text(attributes.read_text(encoding="utf-8") if attributes.is_file() else None)
        if text is not None:
            atomic_write(attributes, text.encode("utf-8"))
        with vault.lock():
            git.check_state()  # never commit onto a detached HEAD or into a merge or rebase
            git.commit([".gitignore", GITATTRIBUTES_FILE], format_message("memvault init", "init", None, []))
        return vault

    @property
    def state_dir(self) -> Path:
        return self.root / layout.STATE_DIR

    def ensure_state_dir(self) -> None:
        """Create .memvault/ if needed, with the .gitignore that keeps it out of every commit."""
        ignore = self.state_dir / ".gitignore"
        if ignore.is_file() and not ignore.is_symlink():
            return
        if self.state_dir.is_symlink():
            return  # the owner's own arrangement: nothing is written through a link (atomic_write refuses)
        self.state_dir.mkdir(exist_ok=True)
        atomic_write(ignore, STATE_GITIGNORE.encode("utf-8"))

    @contextmanager
    def lock(self, wait: float = LOCK_TIMEOUT) -> Iterator[None]:
        """The vault's write lock: two processes never interleave writes or commits. The lock is
        the kernel's (flock): a process killed while holding it releases it."""
        from filelock import FileLock, Timeout

        self.ensure_state_dir()
        lock = FileLock(str(self.state_dir / "write.lock"), timeout=wait)
        try:
            lock.acquire()
        except Timeout:
            raise LockBusyError(f"another memvault process has held the vault lock for {wait:.0f} s") from None
        try:
            yield
        finally:
            lock.release()

    @contextmanager
    def transaction(self, operation: str, subject: str, conversation: str | None = None) -> Iterator[Transaction]:
        """Group file changes into one commit; on any error, put the files back as they were."""
        with self.lock():
            self.git.check_state()
            self.recover_interrupted()
            self.forget_paths()  # another process may have written since we last looked
            tx = Transaction(self, operation, conversation)
            self._intent_head = self.git.head_sha()
            try:
                yield tx
                paths = [str(change.rel) for change in tx.changes]
                self.tell_index([change.rel for change in tx.changes])  # before the commit: a kill after it
                tx.commit_sha = self.git.commit(paths, format_message(subject, operation, conversation, tx.events))
            except BaseException:
                if not self.commit_landed():  # after the commit, only bookkeeping is left: never undo it
                    touched = [change.rel for change in tx.changes]
                    tx.rollback()
                    self.tell_index(touched)  # the files are as they were: the last word to the index says so
                raise
            finally:
                self.intent_path.unlink(missing_ok=True)  # committed or rolled back: nothing left to recover
                self._intent_head = None
                self.forget_paths()

    def tell_index(self, rels: list[PurePosixPath]) -> None:
        """Journal these paths for the index as they are now (`on_committing`), so that a process killed
        between a commit and its index update leaves the next search to catch up (no row pointing at
        a path `rm` moved, no memory left unsearchable)."""
        if rels and self.on_committing is not None:
            self.on_committing(rels)

    def commit_landed(self) -> bool:
        """Whether HEAD moved since the open transaction started (we hold the lock: its commit landed,
        whatever failed or was interrupted after). Unreadable HEAD counts as moved: files are kept."""
        try:
            return self.git.head_sha() != self._intent_head
        except Exception:  # noqa: BLE001 - keeping the files is the safe side
            return True

    # -- recovery after a crash mid-transaction ----------------------------------------------------
    @property
    def intent_path(self) -> Path:
        return self.state_dir / INTENT_FILE

    def note_intent(self, rel: PurePosixPath, before: bytes | None) -> None:
        """Append to the intent file, before `rel` changes: its bytes before (None: it did not exist)."""
        lines = []
        if not self.intent_path.exists():
            lines.append({"head": self._intent_head})
        lines.append({"path": str(rel), "before": None if before is None else base64.b64encode(before).decode()})
        # Written before the change it describes; a killed process's writes survive it (no fsync:
        # thousands of paths in one gc would each pay for one, and the files' own writes are synced).
        jsonlines.append(self.intent_path, lines, mode=0o600, redacted=False)

    def recover_interrupted(self) -> list[PurePosixPath]:
        """Undo what a killed transaction changed but never committed (call with the lock held);
        returns the paths it had touched (their index rows may need refreshing)."""
        if not self.intent_path.exists():
            return []
        self.git.wait_for_git()  # the killed writer's `git commit` may still be running: let it land
        # Lines that are not records (the one being written when the process died, or damage) are
        # passed over: the file of a torn line had not been touched yet.
        records = jsonlines.read(self.intent_path)
        started_at = records[0].get("head") if records and "head" in records[0] else None
        befores = intended_befores(records)
        if started_at is not None and started_at == self.git.head_sha():  # the commit did not happen
            self.refuse_while_git_runs()
            for rel, before in befores.items():
                if self.linked_part(rel) is not None:
                    continue  # never act through a link: it may lead out of the vault
                if before is None:
                    (self.root / rel).unlink(missing_ok=True)
                else:
                    atomic_write(self.root / rel, before)
            if befores:
                self.git.unstage_paths([str(rel) for rel in befores])
        self.sweep_temp_files(befores)
        self.intent_path.unlink(missing_ok=True)
        self.forget_paths()
        touched = list(befores)
        if touched and self.on_recovered is not None:
            self.on_recovered(touched)
        return touched

    def sweep_temp_files(self, rels) -> None:
        """Remove the atomic writes' temporary files ('.<name>.XXXX.tmp', see atomic_write) of paths a
        killed transaction was writing: with the lock held no one else writes them, whatever their age."""
        for rel in rels:
            folder = self.root / rel.parent
            if self.linked_part(rel) is not None or not folder.is_dir():
                continue
            for tmp in folder.glob(f".{glob.escape(rel.name)}.*.tmp"):
                tmp.unlink(missing_ok=True)

    def refuse_while_git_runs(self) -> None:
        """A git still working in the repository after the wait may yet land the killed writer's
        commit: rolling the files back now would leave HEAD and the files disagreeing."""
        holders = self.git.lock_holders()
        if holders:
            raise VaultError(f"git process {', '.join(map(str, holders))} is still working in the vault's "
                             "repository (the commit of a memvault that was stopped?): try again when it ends")

    def write_new(self, entries: list[Entry]) -> list[Change]:
        """Write new entries now and commit them later with `commit_written` (the proxy answers once its
        turns are on disk, not after git). Without the lock: fresh ids make fresh file names, which no
        other writer touches. On error nothing of this call is left behind."""
        self.git.check_state()  # a repository mid-merge takes no new files, committed or not
        changes: list[Change] = []
        try:
            for entry in map(redact_entry, entries):  # secrets never reach the vault
                rel = layout.relative_path(entry)
                self.check_new_folder(rel)
                atomic_write(self.root / rel, render(entry).encode("utf-8"))
                changes.append(Change(rel, None, entry))
        except BaseException:
            for change in changes:
                (self.root / change.rel).unlink(missing_ok=True)
            raise
        finally:
            self.forget_paths()
        return changes

    def commit_written(self, changes: list[Change], subject: str, operation: str,
                       conversation: str | None = None) -> list[Change]:
        """One commit of files `write_new` wrote (those still there: a person may have removed one)."""
        with self.lock():
            self.git.check_state()
            self.recover_interrupted()
            present = [change for change in changes if (self.root / change.rel).exists()]
            events = [("ADD", change.entry.id) for change in present if change.entry is not None]
            self.git.commit([str(change.rel) for change in present],
                            format_message(subject, operation, conversation, events))
            self.forget_paths()
        return present

    def temp_files(self, older_than: float = 0.0) -> list[Path]:
        """Temporary files of atomic writes under entries/ last modified more than `older_than` s ago."""
        import time

        limit = time.time() - older_than
        found = []
        for folder, _, names in os.walk(self.root / layout.ENTRIES):
            for name in names:
                path = Path(folder, name)
                try:
                    if is_temp_name(name) and path.lstat().st_mtime < limit:
                        found.append(path)
                except OSError:
                    continue
        return sorted(found)

    def remove_temp_files(self, older_than: float = STALE_TEMP_AGE) -> list[Path]:
        """Remove the temporary files a crash left (any younger may belong to a write under way)."""
        removed = []
        for path in self.temp_files(older_than):
            path.unlink(missing_ok=True)
            removed.append(path)
        return removed

    # -- reading -------------------------------------------------------------------------------
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
        links = [] if links is None else links
        for root in self.entry_roots(include_deleted, conversation):
            for kind in layout.KIND_DIRS.values():
                folder = f"{root}/{kind}"
                for name in self._file_names(folder, links):
                    yield folder, name

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
        """The entry file names in one folder, sorted; links among them go to `links`. A folder reached
        through a link has none (the link goes to `links`, once), nor has a missing folder."""
        link = self.linked_part(PurePosixPath(folder))
        if link is not None:
            if str(link) not in links:
                links.append(str(link))
            return []
        names = []
        try:
            with os.scandir(self.root / folder) as found:
                for item in found:
                    if not item.name.endswith(".md") or item.name[0] == ".":
                        continue
                    if item.is_symlink():  # d_type from the directory: no extra stat
                        links.append(f"{folder}/{item.name}")
                    elif item.is_file(follow_symlinks=False):
                        names.append(item.name)
        except (FileNotFoundError, NotADirectoryError):
            return []
        return sorted(names)

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

    def linked_part(self, rel: PurePosixPath) -> PurePosixPath | None:
        """The first part of `rel` (from the vault root down) that is a symbolic link, or None."""
        path = self.root
        for depth, part in enumerate(rel.parts, start=1):
            path = path / part
            if path.is_symlink():
                return PurePosixPath(*rel.parts[:depth])
        return None

    def read(self, rel: PurePosixPath) -> Entry:
        """The entry in a file; fields a hand-written file leaves out come from its place and time.
        A workspace file (core/, journal/) reads as an entry of its own role in `global`.
        Nothing is read through a symbolic link (the file, or a folder above it)."""
        content = self.read_content(rel)
        if layout.is_workspace_path(rel):
            return self.workspace_entry(rel, content)
        return parse(content, str(rel), self.defaults_for(rel, self.root / rel))

    def read_content(self, rel: PurePosixPath) -> str:
        """A file's text, read safely: never through a link, never past limits.max_file_bytes, never
        a file holding git's conflict markers; EntryFormatError says why not."""
        path = self.root / rel
        link = self.linked_part(rel)
        if link is not None:
            raise EntryFormatError(rel, LINK_REASON if link == rel else f"under {link}, {LINK_REASON}")
        try:
            # A link swapped in since: refused. Non-blocking, so a FIFO put in the vault cannot hang the open.
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO or a device would block or never end
                os.close(fd)
                raise EntryFormatError(rel, "not a regular file: memvault reads only plain files")
            with os.fdopen(fd, "rb") as handle:
                data = handle.read(self.max_file_bytes + 1)  # never the whole of a huge file
            if len(data) > self.max_file_bytes:
                raise EntryFormatError(rel, too_large(self.max_file_bytes))
            content = data.decode("utf-8")
        except UnicodeDecodeError:
            raise EntryFormatError(rel, "not UTF-8 text") from None
        except OSError as exc:
            raise EntryFormatError(rel, f"cannot be read: {exc.strerror}") from None
        if CONFLICT_MARKER.search(content):
            raise EntryFormatError(rel, "holds unresolved git conflict markers (<<<<<<< ... >>>>>>>): "
                                        "resolve them with git, then run `memvault reindex`")
        return content

    def workspace_entry(self, rel: PurePosixPath, content: str) -> Entry:
        """A workspace file as the index and the prompt see it: its text without HTML comments."""
        try:
            created = datetime.fromtimestamp((self.root / rel).stat().st_mtime, timezone.utc)
        except OSError:
            created = now()
        return Entry(text=layout.workspace_text(content), role=layout.WORKSPACE_ROLES[rel.parts[0]],
                     conversation_id=layout.GLOBAL, id=layout.path_id(rel), created_at=created)

    def read_workspace(self, rel: PurePosixPath) -> str | None:
        """A workspace file's whole text as on disk (comments included), None when there is none."""
        if not (self.root / rel).is_file() and self.linked_part(rel) is None:
            return None
        return self.read_content(rel)

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

    def defaults_for(self, rel: PurePosixPath, path: Path) -> dict:
        try:
            created = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
        except OSError:
            created = None
        return layout.entry_defaults(rel, created)

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

    def iter_entries(self, include_deleted: bool = False, conversation: str | None = None
                     ) -> Iterator[tuple[PurePosixPath, Entry | EntryFormatError]]:
        """Each file with its entry, or the error that says why it could not be read; each symbolic
        link with the error that says it was not followed (so doctor and list report it)."""
        links: list[str] = []
        for rel in self.entry_files(include_deleted, conversation, links):
            try:
                yield rel, self.read(rel)
            except EntryFormatError as exc:
                yield rel, exc
        for link in links:
            yield PurePosixPath(link), EntryFormatError(PurePosixPath(link), LINK_REASON)

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

    def summary(self, conversation: str) -> Entry | None:
        for folder in self.conversation_folders(conversation):
            rel = PurePosixPath(layout.ENTRIES, folder, "summaries", layout.SUMMARY_FILE)
            if (self.root / rel).exists():
                return self.read(rel)
        return None

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

    def check_new_folder(self, rel: PurePosixPath) -> None:
        """Before writing `rel`: a conversation folder it would create must be portable."""
        layout.check_new_conversation(rel.parts[1], self.conversations())


def deleted_meanwhile(memory_id: str) -> NotFoundError:
    return NotFoundError(f"memory {memory_id[:8]} was deleted meanwhile (see `memvault history {memory_id[:8]}`)")


def intended_befores(records: list[dict]) -> dict[PurePosixPath, bytes | None]:
    """Each path an intent file notes, with its bytes before the transaction (None: it did not exist);
    the first note of a path holds the original. A note that is not a path a transaction writes
    (outside entries/ and the workspace files, '..') or whose bytes do not decode is passed over: never acted on."""
    befores: dict[PurePosixPath, bytes | None] = {}
    for record in records:
        path, before = record.get("path"), record.get("before")
        if not isinstance(path, str) or not (before is None or isinstance(before, str)):
            continue
        rel = PurePosixPath(path)
        written = layout.is_entry_path(rel) or layout.is_workspace_path(rel)
        if rel in befores or not written or ".." in rel.parts or rel.is_absolute():
            continue
        try:
            befores[rel] = None if before is None else base64.b64decode(before, validate=True)
        except ValueError:
            continue
    return befores


def too_large(limit: int) -> str:
    return f"larger than limits.max_file_bytes ({limit:,} bytes): not read"


def scandir_dirs(path: Path) -> list[os.DirEntry]:
    """The folders in `path`, symbolic links included (entry_names reports those, never enters them)."""
    try:
        return [d for d in os.scandir(path) if d.is_dir() and not d.name.startswith(".")]
    except FileNotFoundError:
        return []
