"""The vault on disk: opening and creating it, its write lock, and transactions that write files and commit them.

Only a transaction writes under entries/ (and the workspace files, core/ and journal/). Every
mutation runs inside `transaction()`: it holds the vault's lock, writes atomically, commits exactly
the touched paths, and undoes its file changes if anything fails before the commit, so a failed
command never leaves half a change behind.

A Vault is assembled from parts with one job each: where entries are (vault.format.listing), reading them
safely (vault.format.reading), crash recovery (vault.write.recovery); a transaction's file changes are
vault.write.transaction's, atomic writes vault.format.atomic's.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from memvault.errors import VaultError
from memvault.text.redact import redact_entry
from memvault.vault.format import layout
from memvault.vault.format.atomic import STALE_TEMP_AGE, atomic_write, is_temp_name, writer_gone
from memvault.vault.format.entry import Entry
from memvault.vault.format.gitattributes import GITATTRIBUTES_FILE, gitattributes_text
from memvault.vault.format.listing import EntryListing
from memvault.vault.format.markdown import render
from memvault.vault.format.reading import EntryReading
from memvault.vault.git.log import format_message
from memvault.vault.git.repository import VaultGit
from memvault.vault.write.recovery import CrashRecovery
from memvault.vault.write.transaction import Change, Transaction

GITIGNORE_LINE = layout.GITIGNORE_LINE
# .memvault/ ignores itself (as a venv does): whoever made the vault, and whichever command made the
# folder, a `git add .` (agent-cli commits that way) never commits the index.
STATE_GITIGNORE = "# memvault's derived data (index, locks, queues): never committed\n*\n"
LOCK_TIMEOUT = 120.0
# The write locks this thread holds (by lock file): taken again (an erase's index flush), it is
# already ours; a second flock on the same file would wait for ourselves.
_HELD = threading.local()


class LockBusyError(VaultError):
    """Another process holds the vault's write lock (and kept it longer than we would wait)."""


class Vault(EntryListing, EntryReading, CrashRecovery):
    """A vault folder: entries as markdown files, in a git repository."""

    def __init__(self, root: Path, git: VaultGit) -> None:
        self.root = root
        self.git = git
        self._paths: dict[str, PurePosixPath] | None = None
        self._intent_head: str | None = None  # HEAD when the open transaction started
        self.on_recovered = None  # callable(paths) told which files a recovery put back (the index follows)
        self.on_committing = None  # callable(paths) told which files a transaction is about to commit

    # -- opening -------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the git processes kept for reading (a long-lived process opens many vaults)."""
        self.git.close()

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
        attributes = vault.root / GITATTRIBUTES_FILE  # how `memvault sync` merges (vault.devices.merge)
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
        from memvault.vault.write.flock import LockTimeout, exclusive

        self.ensure_state_dir()
        path = str((self.state_dir / "write.lock").resolve())
        held = _HELD.__dict__.setdefault("paths", set())
        if path in held:  # re-entered by this thread: other threads and processes still wait
            yield
            return
        try:
            with exclusive(path, wait):
                held.add(path)
                try:
                    yield
                finally:
                    held.discard(path)
        except LockTimeout:
            raise LockBusyError(f"another memvault process has held the vault lock for {wait:.0f} s") from None

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
        """Temporary files of atomic writes anywhere in the vault (entries, core files, the journal,
        .memvault/'s state files; not .git) last modified more than `older_than` s ago, or whose
        writer is gone (atomic.writer_gone)."""
        import time

        limit = time.time() - older_than
        found = []
        for folder, folders, names in os.walk(self.root):
            folders[:] = [name for name in folders if name != ".git"]
            for name in names:
                if not is_temp_name(name):
                    continue  # the name first: a Path per file was half of this walk at 100k files
                path = Path(folder, name)
                try:
                    if path.lstat().st_mtime < limit or writer_gone(name):
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

    def check_new_folder(self, rel: PurePosixPath) -> None:
        """Before writing `rel`: a conversation folder it would create must be portable."""
        layout.check_new_conversation(rel.parts[1], self.conversations())
