"""A memory's ADD / UPDATE / DELETE events, read back from git: the files are the audit trail.

Each event's record carries mem0's history field names (`old_memory`, `new_memory`, `created_at`:
when the memory was made, `updated_at`: when this event happened, `is_deleted`, `actor_id`, `role`)
and the spec's (`old_value`, `new_value`, `timestamp`: when this event happened)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePosixPath

from memvault.errors import EntryFormatError
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry
from memvault.vault.format.markdown import parse
from memvault.vault.git.log import Commit
from memvault.vault.git.repository import VaultGit


@dataclass
class Event:
    memory_id: str
    event: str  # ADD | UPDATE | DELETE | RESTORE | PURGE
    old_memory: str | None
    new_memory: str | None
    time: datetime
    commit: str
    subject: str
    replaced_by: str | None = None
    entry: Entry | None = None  # the memory as this event left it (before it, for a DELETE)

    @property
    def moment(self) -> datetime:
        """When the event happened, to the millisecond the file keeps (the commit's time, to the
        second, when the file does not say)."""
        entry = self.entry
        if entry is not None:
            if self.event == "ADD":
                return entry.created_at
            if self.event == "UPDATE" and not self.replaced_by:
                return entry.updated_at or self.time
            if self.event == "DELETE" and entry.deleted_at:
                return entry.deleted_at
        return self.time

    @property
    def is_deleted(self) -> bool:
        return self.event in ("DELETE", "PURGE") or bool(self.replaced_by)

    @property
    def record_id(self) -> str:
        """A UUID, as mem0's history records have, derived from the commit and the memory: the same
        event has the same id on every read (the commit itself stays a field of its own)."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"memvault-history:{self.commit}:{self.memory_id}"))

    def to_dict(self) -> dict:
        entry = self.entry
        return {"id": self.record_id, "memory_id": self.memory_id, "event": self.event,
                "old_memory": self.old_memory, "new_memory": self.new_memory,
                "created_at": (entry.created_at if entry else self.time).isoformat(),
                "updated_at": self.moment.isoformat(), "is_deleted": self.is_deleted,
                "actor_id": entry.actor_id if entry else None,
                "role": entry.metadata.get("role") if entry and isinstance(entry.metadata.get("role"), str) else None,
                "old_value": self.old_memory, "new_value": self.new_memory, "timestamp": self.moment.isoformat(),
                "commit": self.commit, "subject": self.subject, "replaced_by": self.replaced_by}


def memory_events(git: VaultGit, memory_id: str, path: PurePosixPath | None = None) -> list[Event]:
    """Events of one memory, oldest first, from every commit that touched its file: any file named
    '*__<id>.md', and `path` (its file now, whatever its name: agent-cli's summary.md). A summary's
    tombstone was its conversation's summary.md until deleted: that file's commits count too, while
    it held this id."""
    pattern = f":(glob){git.repo_path(layout.ENTRIES)}/**/*__{glob_escape(memory_id)}.md"
    home = summary_home(path)
    exact = [f":(literal){git.repo_path(str(known))}" for known in (path, home) if known is not None]
    events: list[Event] = []
    commits = list(reversed(git.log(pathspecs=[pattern, *exact], follow_changes=True)))
    texts = Texts(git)  # every text the events show, read at once
    texts.fetch(pair for commit in commits for _, rel, old_rel in commit.changes
                for pair in ((commit.sha, rel), (commit.sha + "^", old_rel or rel)))
    for commit in commits:
        for status, rel, old_rel in commit.changes:
            if not (ours(rel, memory_id, path) or ours(old_rel or "", memory_id, path)):
                if home is None or str(home) not in (rel, old_rel):
                    continue
                event = _event(texts, commit, memory_id, status, rel, old_rel)
                if event and event.entry is not None and event.entry.id == memory_id:  # another summary: not ours
                    events.append(event)
                continue
            event = _event(texts, commit, memory_id, status, rel, old_rel)
            if event:
                events.append(event)
    return events


def summary_home(path: PurePosixPath | None) -> PurePosixPath | None:
    """The summary.md a summary's tombstone was moved from (entries/<conversation>/summaries/), or None."""
    if path is None or not layout.is_deleted_path(path) or layout.kind_of(path) != layout.KIND_DIRS["summary"]:
        return None
    return PurePosixPath(layout.ENTRIES, layout.conversation_folder_of(path), layout.KIND_DIRS["summary"],
                         layout.SUMMARY_FILE)


def ours(rel: str, memory_id: str, path: PurePosixPath | None) -> bool:
    return rel.endswith(f"__{memory_id}.md") or (path is not None and rel == str(path))


def glob_escape(text: str) -> str:
    """`text` matched literally inside a git glob pathspec (ids other than UUIDs may hold * ? [)."""
    return "".join(f"[{c}]" if c in "*?[]\\" else c for c in text)


class Texts:
    """Entry files' texts at commits. `fetch` reads many ahead through one `git cat-file --batch`
    (a memory's history, what changed between two moments): a `git show` per text cost a process
    each, most of such a page's time."""

    def __init__(self, git: VaultGit) -> None:
        self.git = git
        self.read: dict[tuple[str, str], str | None] = {}

    def fetch(self, wanted: Iterable[tuple[str, str | None]]) -> None:
        """Read these (commit, path) files ahead; a path absent at its commit reads as None."""
        from memvault.vault.git.timetravel import read_objects

        names = {f"{sha}:{self.git.repo_path(rel)}": (sha, rel) for sha, rel in wanted
                 if rel is not None and (sha, rel) not in self.read}
        for name, content in read_objects(self.git, list(names)).items():
            # as `git show` gave it: decoded, its last newline cut
            text = None if content is None else content.decode("utf-8", "replace")
            self.read[names[name]] = text[:-1] if text and text.endswith("\n") else text

    def body(self, sha: str, rel: str | None) -> tuple[str | None, Entry | None]:
        """(text, entry) of a file at a commit; entry None when it is not a readable entry."""
        if rel is None:
            return None, None
        if (sha, rel) not in self.read:
            self.fetch([(sha, rel)])
        content = self.read[(sha, rel)]
        if content is None:
            return None, None
        try:
            entry = parse(content, rel, {"id": "x", "role": "memory", "conversation_id": "x",
                                         "created_at": "2000-01-01"})
            return entry.text, entry
        except EntryFormatError:
            return content, None


def _event(texts: Texts, commit: Commit, memory_id: str, status: str, rel: str, old_rel: str | None) -> Event | None:
    deleted_now = layout.is_deleted_path(PurePosixPath(rel))
    base = dict(memory_id=memory_id, time=commit.time, commit=commit.sha, subject=commit.subject)
    if status == "A":
        text, entry = texts.body(commit.sha, rel)
        return None if deleted_now else Event(event="ADD", old_memory=None, new_memory=text, entry=entry, **base)
    if status == "M":
        old, _ = texts.body(commit.sha + "^", rel)
        new, entry = texts.body(commit.sha, rel)
        if old == new:
            return None  # only front matter changed
        return Event(event="UPDATE", old_memory=old, new_memory=new, entry=entry, **base)
    if status == "D":
        old, entry = texts.body(commit.sha + "^", rel)
        return Event(event="PURGE" if deleted_now else "DELETE", old_memory=old, new_memory=None, entry=entry, **base)
    if status == "R":
        old, _ = texts.body(commit.sha + "^", old_rel)
        new, entry = texts.body(commit.sha, rel)
        replaced_by = entry.replaced_by if entry else None
        was_deleted = layout.is_deleted_path(PurePosixPath(old_rel or ""))
        if deleted_now and not was_deleted:
            if replaced_by:  # an older vault's UPDATE: a new memory replaced this one
                return Event(event="UPDATE", old_memory=old,
                             new_memory=_replacement_text(texts, commit.sha, replaced_by),
                             replaced_by=replaced_by, entry=entry, **base)
            return Event(event="DELETE", old_memory=old, new_memory=None, entry=entry, **base)
        if was_deleted and not deleted_now:
            return Event(event="RESTORE", old_memory=None, new_memory=new, entry=entry, **base)
        return None if old == new else Event(event="UPDATE", old_memory=old, new_memory=new, entry=entry, **base)
    return None


def _replacement_text(texts: Texts, sha: str, replacement_id: str) -> str | None:
    for rel in texts.git.changed_paths(sha):
        if rel.endswith(f"__{replacement_id}.md"):
            return texts.body(sha, rel)[0]
    return None


def vault_log(git: VaultGit, limit: int = 20, operation: str | None = None,
              conversation: str | None = None) -> list[Commit]:
    """The vault's commits, newest first: with `operation` and `conversation`, only those whose
    trailers say exactly so (git narrows the search, the trailers decide); `limit` 0 for all."""
    from memvault.vault.git.log import TRAILER_PREFIX

    wanted = {"Operation": operation, "Conversation": conversation}
    wanted = {key: value for key, value in wanted.items() if value}
    grep = [f"{TRAILER_PREFIX}{key}: {value}" for key, value in wanted.items()]
    found = git.log(limit=None if grep else limit or None, grep=grep)
    found = [c for c in found if all(value in c.trailers.get(key, []) for key, value in wanted.items())]
    return found[:limit] if limit else found
