"""Erase: memories removed from the work tree, every commit, every pack and every derived store, with
one erasure record left in the log (docs/architecture.md, "Erasure"). The rewrite itself is
`vault/forget/erase.py`; this module decides what goes, purges the index and state, and writes the record."""

from __future__ import annotations

import getpass
import json
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from memvault.errors import UsageError
from memvault.vault.forget import erase, state_purge
from memvault.vault.forget import intent as erase_intent
from memvault.vault.forget import record as erasure_record
from memvault.vault.format import layout
from memvault.vault.format.entry import format_time, now
from memvault.vault.git import rewrites

if TYPE_CHECKING:
    from memvault.core.base import Storage
    from memvault.core.turns import TurnWriting


@dataclass
class Erasure:
    """What an erase did (or, dry, would do). Never the erased content: counts, ids, paths, commits."""

    kind: str
    dry_run: bool
    ids: list[str] = field(default_factory=list)
    roles: dict[str, int] = field(default_factory=dict)
    about: list[str] = field(default_factory=list)  # ids erased as facts about the --user, not from them
    files: list[str] = field(default_factory=list)  # paths removed from every commit
    scrubbed: list[str] = field(default_factory=list)  # paths whose quotes of it were taken out
    commits: int = 0  # commits that held it
    commit_ids: list[str] = field(default_factory=list)  # which (before the rewrite)
    rewritten: int = 0  # commits whose id changed
    state_files: list[str] = field(default_factory=list)  # .memvault/ files that held it
    index_rows: int = 0
    past_indexes: int = 0
    blobs: int = 0
    resummarised: list[str] = field(default_factory=list)  # summaries the LLM wrote again from what remains
    kept_scrubbed: list[str] = field(default_factory=list)  # "path: why" the LLM's new summary was refused
    record: str | None = None  # the erasure record's commit
    finished: int = 0  # memories of an earlier erase a kill cut short, finished first
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Erasing:
    """`erase`: the GDPR-grade delete, for every surface (CLI, REST, API, MCP)."""

    def __init__(self, storage: Storage, turns: TurnWriting) -> None:
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper
        self.turns = turns

    def erase(self, ids: tuple[str, ...] | list[str] = (), conversation: str | None = None, user: str | None = None,
              matching: str | None = None, regex: bool = False, dry_run: bool = False, reason: str = "",
              who: str | None = None) -> Erasure:
        """Erase what the criteria name (ids or id prefixes, a conversation, a user's scope, a text) from
        the present and every commit. Irreversible; `dry_run` only says what it would touch."""
        started = time.monotonic()
        if sum(bool(x) for x in (ids, conversation, user, matching)) != 1:
            raise UsageError("erase needs exactly one of: ids, --conversation, --user, --matching")
        if matching is not None and not matching.strip():
            raise UsageError("--matching needs a non-empty text")
        if regex:
            import re

            try:
                re.compile(matching or "")
            except re.error as exc:
                raise UsageError(f"--matching is not a regular expression: {exc}") from None
        full_ids = tuple(self.resolve_ids(ids))
        criteria = erase.Criteria(ids=full_ids, conversation=conversation, user=user, matching=matching, regex=regex)
        erase.check_erasable(self.vault.git)
        if self.has_index():  # journalled writes indexed: the index's rows are what it holds (none built)
            with self.keeper.caught_up():
                pass
        with self.locks():
            self.vault.git.check_state()
            self.vault.recover_interrupted()
            finished = 0 if dry_run else self.finish_interrupted_erase()
            from concurrent.futures import ThreadPoolExecutor

            folders = self.vault.conversation_folders(conversation) if conversation else ()
            # git's walk of the work tree (seconds at 1M files) runs while the history is read: one serves
            # both the leftover turns and the check that nothing is left uncommitted.
            with ThreadPoolExecutor(1) as pool:
                status = pool.submit(self.vault.git.status)
                selection = erase.select(self.vault.root, criteria, folders)
                pending = status.result()
            if not dry_run and pending and self.turns.commit_leftover_turns(pending):
                pending = self.vault.git.status()  # a proxy's turn files not yet committed are history too
                selection = erase.select(self.vault.root, criteria, folders)
            if pending and not dry_run:
                raise UsageError(f"the vault has uncommitted changes ({pending[0][1]}...): commit or remove them, "
                                 "then erase (the history rewrite resets the work tree)")
            hit = self.erased_hit(selection, user)
            result = Erasure(criteria.kind, dry_run, sorted(selection.ids), dict(selection.roles),
                             sorted(selection.about), sorted(selection.paths), sorted(selection.scrubbed),
                             selection.commits, selection.commit_ids, finished=finished)
            result.state_files = [str(p.relative_to(self.vault.state_dir)) for p in self.state_hits(hit)]
            result.index_rows = self.index_rows(selection.ids)
            past = self.vault.state_dir / state_purge.PAST_INDEXES
            result.past_indexes = len(list(past.glob("*"))) if past.is_dir() else 0
            if dry_run or not (selection.paths or selection.scrubbed or result.state_files):
                result.seconds = round(time.monotonic() - started, 3)
                return result
            blobs = selection.blobs
            result.blobs = len(blobs)
            # The state is purged first: it needs the erased texts, which the intent never holds.
            self.purge_state(hit)
            erase_intent.start(self.vault.state_dir, selection.ids, blobs, record_message(result, blobs, reason, who),
                               asdict(criteria), selection.paths | selection.scrubbed)
            erase_intent.reached("rewriting")
            result.rewritten = self.rewrite_history(selection)
            llm = self.storage.llm()
            if llm is not None and selection.scrubbed:
                from memvault.core.erased_summaries import resummarise

                result.resummarised, result.kept_scrubbed = resummarise(self.vault, llm, sorted(selection.scrubbed),
                                                                        selection.scrubber())
            erase_intent.reached("rewritten")
            result.record = self.finish_erase(selection)
        result.seconds = round(time.monotonic() - started, 3)
        return result

    def finish_interrupted_erase(self) -> int:
        """Finish an erase a kill cut short after its history rewrite (`doctor --fix`, the next erase);
        how many memories it erased (0: none was pending)."""
        intent = erase_intent.pending(self.vault.state_dir)
        if intent is None:
            return 0
        with self.locks():
            return len(intent["ids"]) if self.finish_erase() else 0

    def finish_erase(self, selection: erase.Selection | None = None) -> str | None:
        """The steps after the rewrite, each safe to run again: the erasure record committed (once),
        git's reflogs, packs and loose objects cleaned, the index and past indexes purged; then the
        intent is removed. Returns the record's commit (None: no erase to finish, or its rewrite never
        landed). `selection`: the erase's own, its rewrite just done in this process; without it (an
        erase a kill cut short) the rewrite is checked first and the work tree put back."""
        state_dir = self.vault.state_dir
        intent = erase_intent.pending(state_dir)
        if intent is None:
            return None
        blobs = set(intent["blobs"])
        with self.locks():
            if selection is None and erase.reachable_objects(self.vault.root, "--all") & blobs:
                if not isinstance(intent.get("criteria"), dict):  # an older intent: nothing to select again
                    erase_intent.done(state_dir)
                    return None
                self.erase_again(erase.Criteria(**{**intent["criteria"], "ids": tuple(intent["criteria"]["ids"])}))
            if selection is None:
                erase.put_back_erased_files(self.vault.root, blobs)  # a reset the kill cut short
            last = self.vault.git.run("log", "-1", "--format=%B") if self.vault.git.head_sha() else ""
            if last.strip() != intent["message"].strip():
                self.commit_record(intent["message"])
            erase_intent.reached("recorded")
            erase.clean_git(self.vault.root)
            # Once git is cleaned, an object still there is reachable (or in git's index): the rewrite
            # left it, so every commit is rewritten (a kill's finish checked before its record instead).
            if selection is not None and erase.present_objects(self.vault.root, blobs):
                self.rewrite_history(selection, whole=True)
                erase.clean_git(self.vault.root)
            shutil.rmtree(state_dir / state_purge.PAST_INDEXES, ignore_errors=True)  # one built meanwhile
            self.purge_index(set(intent["ids"]), intent.get("paths"))
            erase_intent.done(state_dir)
            return self.vault.git.head_sha()

    def commit_record(self, message: str) -> None:
        """The erasure record: an empty commit on HEAD, made with plumbing (`git commit` refreshes git's
        index first: 5 s at a million files); by `git commit` when the rewrite left no commit at all."""
        git = self.vault.git
        head = git.head_sha()
        if head is None:
            git.run("commit", "--allow-empty", "-q", "-F", "-", input=message)
            return
        record = git.run("commit-tree", f"{head}^{{tree}}", "-p", head, "-F", "-", input=message).strip()
        git.run("update-ref", "-m", "memvault erase: the erasure record", "HEAD", record, head)

    def rewrite_history(self, selection: erase.Selection, whole: bool = False) -> int:
        """The rewrite (from the oldest commit the selection touches on, or of every commit: `whole`),
        its commit map kept, the intent's criteria dropped once it landed; how many commits changed id."""
        mapping = erase.rewrite(self.vault.root, selection, whole=whole)
        rewrites.save_commit_map(self.vault.state_dir, mapping)  # before clean_git drops filter-repo's
        erase_intent.landed(self.vault.state_dir)
        self.vault.forget_paths()
        return len(mapping)

    def erase_again(self, criteria: erase.Criteria) -> None:
        """An erase killed before its rewrite landed (history as it was), or one whose rewrite left an
        erased blob reachable: its selection made again from the criteria the intent holds, the state
        purged again, and every commit rewritten."""
        if self.vault.git.status():
            raise UsageError("an erase a crash cut short must run its history rewrite again, and the vault has "
                             "uncommitted changes: commit or remove them, then run `memvault doctor --fix`")
        folders = self.vault.conversation_folders(criteria.conversation) if criteria.conversation else ()
        selection = erase.select(self.vault.root, criteria, folders)
        self.purge_state(self.erased_hit(selection, criteria.user))
        self.rewrite_history(selection, whole=True)  # also when a rewrite of part of history left something

    def resolve_ids(self, ids) -> list[str]:
        """Full ids for ids or prefixes, as `rm` resolves them (the same errors: no such memory, an
        ambiguous prefix), before anything is touched; a memory only history holds still counts, and so
        does one an erase a kill cut short was erasing (this erase finishes that one first)."""
        from memvault.errors import NotFoundError

        found, past = [], None
        for prefix in ids:
            try:
                found.append(self.indexed_id(prefix) or self.vault.resolve(prefix)[1].id)
            except NotFoundError:
                if past is None:
                    cut_short = erase_intent.pending(self.vault.state_dir) or {}
                    past = erase.history_ids(self.vault.root) | set(cut_short.get("ids", []))
                found.append(erase.resolve_in(past, layout.check_id_text(prefix)))
        return found

    def indexed_id(self, memory_id: str) -> str | None:
        """A whole id the index holds, whose file is where the index says: found without listing every
        file, as `Vault.resolve` must for a prefix (20 s at a million memories). None: ask `resolve`."""
        from pathlib import PurePosixPath

        from memvault.errors import MemvaultError

        if not self.has_index():
            return None
        row = self.keeper.current().by_id(memory_id)
        if row is None or not layout.is_entry_path(PurePosixPath(row["path"])):  # core files are no memories
            return None
        try:
            entry = self.vault.read(PurePosixPath(row["path"]))
        except (MemvaultError, OSError):
            return None  # moved or broken since it was indexed
        return memory_id if entry.id == memory_id and not entry.deleted else None

    @staticmethod
    def erased_hit(selection: erase.Selection, user: str | None):
        """Whether a state record (as JSON text) holds something erased: a quote, an id, the user's scope."""
        scrubber = selection.scrubber()
        ids = tuple(selection.ids)
        scope = json.dumps({"user_id": user})[1:-1] if user else None

        def hit(text: str) -> bool:
            return scrubber.matches(text) or any(i in text for i in ids) or bool(scope and scope in text)

        return hit

    def state_hits(self, hit) -> list:
        return state_purge.hit_files(self.vault.state_dir, hit)

    def purge_state(self, hit) -> None:
        """State records `hit` is true of, and past indexes (rebuilt on demand), gone. With the write lock held."""
        state_purge.purge_state(self.vault.state_dir, hit)
        shutil.rmtree(self.vault.state_dir / state_purge.PAST_INDEXES, ignore_errors=True)

    def forget_erased_elsewhere(self, ids: set[str], texts: set[str]) -> None:
        """A sync adopted another device's erase (vault/devices/adopt.py): this device's derived stores
        drop the memories it held, as the erasing device's did."""
        selection = erase.Selection(ids=set(ids), texts=set(texts))
        with self.vault.lock():
            self.purge_state(self.erased_hit(selection, None))
        self.purge_index(selection.ids)

    @contextmanager
    def locks(self) -> Iterator[None]:
        """The index's lock, then the vault's: the order the index keeper takes them in (a reindex from the
        server's file watcher holds the index and waits for the vault). An erase that took the vault's
        first and then reached for the index waited out the vault lock's timeout (120 s) instead."""
        with self.keeper.lock, self.vault.lock():
            yield

    def has_index(self) -> bool:
        from memvault.index.store import FILE_NAME

        return (self.vault.state_dir / FILE_NAME).exists()

    def index_rows(self, ids: set[str]) -> int:
        if not ids or not self.has_index():
            return 0
        store = self.keeper.current()
        return sum(1 for memory_id in ids if store.by_id(memory_id) is not None)

    def purge_index(self, ids: set[str], paths: list[str] | None = None) -> None:
        """The index follows the files (rows of erased memories dropped, the erase's `paths` read again:
        its removed and scrubbed files; every file when not known), then is purged in place
        (`IndexStore.purge`: no byte of what it dropped left in the file, its WAL or the snapshot)."""
        if not self.has_index():
            return
        self.keeper.current().remove(ids)
        if paths is None:
            self.keeper.reindex()
        else:
            self.reindex_paths(paths)
        self.keeper.current().purge()

    def reindex_paths(self, paths: list[str]) -> None:
        """The index catches up with these files (removed ones dropped, scrubbed ones read again) without
        a walk of every file; all are compared when one is not an entry file (a core file, the journal)."""
        from pathlib import PurePosixPath

        from memvault.errors import MemvaultError
        from memvault.index.keeper import journal_items

        rels = [PurePosixPath(path) for path in paths]
        items = journal_items(self.vault.root, frozenset(rels))
        if items is None:
            self.keeper.reindex()
            return
        for rel in rels:  # a summary is indexed, though a burst of the watcher's leaves it out
            if rel.name == layout.SUMMARY_FILE and (self.vault.root / rel).is_file():
                try:
                    items.append((self.vault.read(rel).id, str(rel)))
                except MemvaultError:
                    continue  # broken: the next full sync reports it
        if items:
            self.keeper.index_now(items, self.keeper.live_texts([rel for _, rel in items if rel]))

def memories(count: int) -> str:
    """"1 memory", "2 memories": the words an erase reports its count in."""
    return f"{count} memory" if count == 1 else f"{count} memories"


def record_message(result: Erasure, blobs: set[str], reason: str, who: str | None) -> str:
    """The erasure record: what kind, how many, when, by whom, why; the erased blobs' ids (so a clone's
    pull can drop them); never the content."""
    counts = ", ".join(f"{role}: {n}" for role, n in sorted(result.roles.items())) or "quotes only"
    lines = [f"memvault erase: {memories(sum(result.roles.values()))} by {result.kind} ({counts})", "",
             f"Memvault-Erased-Kind: {result.kind}",
             f"Memvault-Erased-Count: {sum(result.roles.values())}",
             f"Memvault-Erased-Files: {len(result.files)}",
             f"Memvault-Erased-Scrubbed: {len(result.scrubbed)}",
             f"Memvault-Erased-At: {format_time(now())}",
             f"Memvault-Erased-By: {who or default_who()}"]
    if reason:
        lines.append(f"Memvault-Erased-Reason: {' '.join(reason.split())[:200]}")
    lines += [f"{erasure_record.RECORD_TRAILER}: {sha}" for sha in sorted(blobs)]
    lines.append("Memvault-Operation: erase")
    return "\n".join(lines) + "\n"


def default_who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
