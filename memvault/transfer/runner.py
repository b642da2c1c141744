"""Bringing another system's memories in, whatever its format: one commit per conversation, resumable
after an interruption, and idempotent.

Each format module turns its source into `Batch`es (one per conversation, holding entries whose ids are
derived from the source's own ids, so the same message always becomes the same entry). The runner
writes each batch in one transaction of the vault (one commit), leaving out every entry the vault
already holds. So a second run changes nothing, and a run that was killed is resumed by running it
again: the transaction it was in is undone by the next writer (store.py), the batches it committed are
found by their ids. A small progress file under `.memvault/imports/` lets the next run skip those
batches without looking at their entries, and says how far the killed run got.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO

from memvault.errors import EntryFormatError, MemvaultError, UsageError
from memvault.settings import LimitsSettings
from memvault.vault import jsonlines, layout
from memvault.vault.entry import Entry

if TYPE_CHECKING:
    from datetime import datetime

    from memvault.core import Memvault
    from memvault.curate.llm import LLM

STATE_FOLDER = "imports"
# What a curated fact keeps of its turn's metadata: where it came from (the turn itself is `source`).
FACT_METADATA = ("imported_from", "source_conversation", "title")
CONTEXT_MESSAGES = 6  # earlier turns the curation of a user turn sees (to resolve "she", "there")


@dataclass
class Item:
    """One entry to bring in, with (for a JSONL line that carries it) its file's exact bytes and place."""

    entry: Entry
    data: bytes | None = None
    rel: PurePosixPath | None = None

    @property
    def path(self) -> PurePosixPath:
        return self.rel or layout.relative_path(self.entry)


@dataclass
class Batch:
    """One conversation of the source: committed whole, or not at all."""

    key: str  # the source's own id for it (the progress file names it)
    conversation: str  # the vault conversation it goes into
    title: str
    items: list[Item]
    curatable: bool = False  # chat turns an LLM may turn into facts (`--curate`)

    def digest(self) -> str:
        """Changes when the source's conversation does (a message added since the last import)."""
        hashed = hashlib.sha256()
        for item in self.items:
            hashed.update(f"{item.entry.id}:{item.entry.hash}:{item.path}\n".encode())
            if item.data is not None:
                hashed.update(hashlib.sha256(item.data).digest())
        return hashed.hexdigest()[:32]


@dataclass
class ImportReport:
    format: str
    conversations: int = 0  # in the source
    imported: int = 0  # conversations committed by this run
    unchanged: int = 0  # conversations with nothing new
    entries: int = 0  # files written
    turns: int = 0  # of them, turns
    facts: int = 0  # facts curated from the turns (--curate)
    present: int = 0  # entries left out because the vault holds them already
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def new_items(batch: Batch, held_ids: set[str], held_paths: set[str],
              given: set[str] | None = None) -> tuple[list[Item], int]:
    """The batch's items the vault does not hold yet, and how many repeat an id (or a file) given
    earlier in the batch, or in an earlier batch of this import (`given`, updated here): those are
    left out, for two files with one id would make it ambiguous."""
    new: list[Item] = []
    ids: set[str] = set()
    paths: set[str] = set()
    given = set() if given is None else given
    repeated = 0
    for item in batch.items:
        memory_id, path = item.entry.id, str(item.path)
        if memory_id in ids or path in paths or memory_id in given:
            repeated += 1
            continue
        given.add(memory_id)
        if memory_id in held_ids or path in held_paths:
            continue
        ids.add(memory_id)
        paths.add(path)
        new.append(item)
    return new, repeated


def stable_id(*parts: str) -> str:
    """The id an imported entry gets: the same source ids always give the same UUID."""
    import uuid

    return str(uuid.uuid5(uuid.NAMESPACE_URL, "memvault-import:" + "\x1f".join(parts)))


def chat_turn(fmt: str, chat_id: str, name: str, title: str, message_id: str, role: str, text: str,
              created: datetime) -> Item:
    """One message of an exported chat as a turn of conversation `name`: its id derived from the
    source's ids (a re-import finds it again), the source named in metadata (FACT_METADATA reads it)."""
    return Item(Entry(text=text, role=role, conversation_id=name, id=stable_id(fmt, chat_id, message_id),
                      created_at=created, metadata={"imported_from": fmt, "source_conversation": chat_id,
                                                    "source_message": message_id, "title": title}))


def mapped_id(fmt: str, value: str, metadata: dict | None = None, key: str = "") -> str:
    """A source's id as memvault's: the id itself when it is a UUID (so sources and replacements still
    point at it), else a stable one derived from it, the original then kept in `metadata[key]`."""
    if layout.UUID_SHAPE.match(value.lower()):
        return value.lower()
    if metadata is not None:
        metadata[key] = value
    return stable_id(fmt, value)


IMPORT_LIMIT = LimitsSettings.max_import_bytes
IMPORT_SETTING = "limits.max_import_bytes"
CHUNK = 1 << 20


@contextmanager
def open_regular(path: Path) -> Iterator[BinaryIO]:
    """`path` opened for reading if it is a regular file, checked on the open descriptor (a FIFO would
    block the import forever, a device would never end); anything else is a one-line error."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO's open must not wait
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except OSError as exc:
        raise MemvaultError(f"cannot read {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"{path} is not a regular file (a folder, a pipe, a device?): memvault reads only files")
        os.set_blocking(fd, True)
        yield handle


def read_bytes(path: Path, limit: int = IMPORT_LIMIT) -> bytes:
    """A source file's bytes (a regular file only: open_regular), at most `limit` bytes
    (limits.max_import_bytes); anything else is a one-line error."""
    with open_regular(path) as handle:
        try:
            return capped(handle, limit, path)
        except OSError as exc:
            raise MemvaultError(f"cannot read {path}: {exc.strerror or exc}") from None


def capped(handle, limit: int, path: Path) -> bytes:
    """All of `handle`'s bytes, read a chunk at a time; past `limit` a one-line UsageError naming the
    setting (before more than one chunk beyond it is held)."""
    chunks, size = [], 0
    while True:
        chunk = handle.read(min(CHUNK, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise UsageError(f"{path} holds more than {IMPORT_SETTING} ({limit:,} bytes) once read or unzipped: "
                             f"raise the setting if the source is genuine")


def conversation_name(prefix: str, title: str, source_id: str) -> str:
    """A readable, stable, portable folder name: 'chatgpt-trip-to-lisbon-1a2b3c4d'."""
    import re
    import unicodedata

    words = unicodedata.normalize("NFKC", title or "").lower()
    words = re.sub(r"[^\w]+", "-", words, flags=re.UNICODE).strip("-_")[:40].strip("-_")
    tail = re.sub(r"[^0-9a-zA-Z]+", "", source_id)[:8].lower() or hashlib.sha256(source_id.encode()).hexdigest()[:8]
    return layout.check_conversation("-".join(part for part in (prefix, words, tail) if part))


class Importer:
    """Writes batches into a vault (see the module docstring). `llm`: curate new user turns into facts."""

    def __init__(self, memvault: Memvault, source_key: str, fmt: str, llm: LLM | None = None,
                 prompt: str | None = None, on_progress: Callable[[int, int, str], None] | None = None) -> None:
        self.memvault = memvault
        self.vault = memvault.vault
        self.llm = llm
        self.prompt = prompt
        self.on_progress = on_progress
        self.report = ImportReport(fmt)
        self.state_path = self.vault.state_dir / STATE_FOLDER / f"{source_key}.jsonl"

    def run(self, batches: Iterable[Batch], total: int) -> ImportReport:
        started = time.monotonic()
        self.report.conversations = total
        with self.vault.lock():  # a killed import's half-written conversation is undone first
            self.vault.recover_interrupted()
            self.vault.remove_temp_files()  # those a minute old: a younger one may be a write under way
        done = {record.get("key"): record.get("digest") for record in jsonlines.read(self.state_path)}
        held_ids, held_paths = self.held()
        given: set[str] = set()  # ids the source gave in this run: a second one is noted, not merged silently
        for number, batch in enumerate(batches, start=1):
            if self.on_progress:
                self.on_progress(number - 1, total, batch.title)
            digest = batch.digest()
            if done.get(batch.key) == digest:
                self.report.unchanged += 1
                continue
            new, repeated = new_items(batch, held_ids, held_paths, given)
            self.report.present += len(batch.items) - len(new) - repeated
            if repeated:
                self.report.notes.append(f"{batch.title}: left out {repeated} entr{'y' if repeated == 1 else 'ies'} "
                                         "whose id the source gives twice (the first is kept)")
            written = self.write(batch, new) if new else 0
            held_ids.update(item.entry.id for item in new)
            held_paths.update(str(item.path) for item in new)
            self.report.present += len(new) - written
            if written:
                self.report.imported += 1
            else:
                self.report.unchanged += 1
            jsonlines.append(self.state_path, [{"key": batch.key, "digest": digest}], mode=0o600, sync=True)
        if self.on_progress:
            self.on_progress(total, total, "")
        self.report.seconds = time.monotonic() - started
        return self.report

    def held(self) -> tuple[set[str], set[str]]:
        """The ids and paths of every entry file in the vault (tombstones too: a deleted memory stays
        deleted, never comes back with the next import)."""
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

    def write(self, batch: Batch, new: list[Item]) -> int:
        """Write the batch's new items in one commit; returns how many were written (an import of the
        same source running beside this one may have written some since `held` looked)."""
        plans = self.curate(batch, new) if self.llm is not None and batch.curatable else []
        subject = f"memvault import: {len(new)} entr{'y' if len(new) == 1 else 'ies'} of {batch.title!r}"[:200]
        with self.vault.transaction("import", subject, batch.conversation) as tx:
            new = [item for item in new if not (self.vault.root / item.path).exists()]  # under the lock now
            for item in new:
                if item.data is not None:
                    tx.write_exact(item.path, item.data, item.entry)
                else:
                    tx.write(item.entry, event="ADD")
            written = {item.entry.id for item in new}
            plans = [(plan, turn) for plan, turn in plans if turn.id in written]
            facts = self.apply_curation(tx, batch, plans) if plans else 0
        self.memvault.keeper.record(tx.changes)
        self.report.entries += len(new)
        self.report.turns += sum(1 for item in new if item.entry.role in ("user", "assistant"))
        self.report.facts += facts
        return len(new)

    # -- curation (--curate) -------------------------------------------------------------------------
    def curate(self, batch: Batch, new: list[Item]) -> list[tuple[Any, Entry]]:
        """Ask the LLM what each new user turn teaches, in order, before the vault is locked; each
        turn sees the turns before it. Facts planned for an earlier turn count as stored, so a repeat
        later in the same conversation is not stored twice."""
        from memvault.curate.ingest import StoredFacts, plan_curation
        from memvault.vault.entry import text_hash

        new_ids = {item.entry.id for item in new}
        previous = self.vault.summary(batch.conversation)
        summary = previous.text if previous else None
        planned: set[str] = set()
        plans = []
        chat: list[dict] = []
        for item in batch.items:
            entry = item.entry
            chat.append({"role": entry.role, "content": entry.text})
            if entry.role != "user" or entry.id not in new_ids:
                continue
            stored = StoredFacts(lambda fact, entry=entry: self.neighbours(fact, entry), set(planned))
            plan = plan_curation(self.llm, chat[-CONTEXT_MESSAGES:], batch.conversation, stored, summary, self.prompt)
            planned.update(text_hash(d.new_text) for d in plan.plan.changes if d.new_text)
            summary = plan.summary or summary
            plans.append((plan, entry))
            self.report.notes.extend(f"{batch.title}: {note}" for note in plan.notes)
        return plans

    def neighbours(self, fact: str, turn: Entry) -> list[tuple[str, str]]:
        hits = self.memvault.search(fact, turn.conversation_id, turn.scopes, {"role": "memory"}, top_k=5,
                                    score_threshold=0.0, recency_weight=0.0, mmr_lambda=1.0, include_global=False)
        return [(hit.id, hit.text) for hit in hits]

    def apply_curation(self, tx, batch: Batch, plans: list[tuple[Any, Entry]]) -> int:
        """Write every turn's planned facts into the open transaction; the rolling summary once, last."""
        from memvault.curate.ingest import CurationPlan, Placement, apply_curation
        from memvault.curate.reconcile import Plan

        facts = 0
        summary = None
        for plan, turn in plans:
            summary = plan.summary or summary
            kept = {key: turn.metadata[key] for key in FACT_METADATA if key in turn.metadata}
            place = Placement(batch.conversation, turn.scopes, kept, source=turn.id)
            events = apply_curation(tx, dataclasses.replace(plan, summary=None), place, self.memvault.live_entry, None)
            facts += sum(1 for event in events if event.event in ("ADD", "UPDATE"))
        if summary:
            apply_curation(tx, CurationPlan([], Plan(), summary), Placement(batch.conversation),
                           self.memvault.live_entry, self.vault.summary(batch.conversation))
        return facts


def checked_text(memvault: Memvault, text: Any, where: str, notes: list[str]) -> str | None:
    """A source message's text as memvault stores it, or None (with a note) when it cannot be one:
    empty, or refused by the vault's rules (a NUL, a lone surrogate, longer than limits.max_text_chars).
    Nothing is cut or changed silently."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        return memvault.clean_text(text)
    except UsageError as exc:
        notes.append(f"{where}: left out: {exc}")
        return None


def epoch_time(value: Any) -> Any:
    """A time given as Unix seconds (ChatGPT), as an ISO string, or missing (None)."""
    from datetime import datetime, timezone

    from memvault.vault.entry import iso_time

    if value is None or value == "":
        return None
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            moment = datetime.fromtimestamp(float(value), timezone.utc)
        else:
            moment = iso_time(value)
    except (ValueError, OverflowError, OSError):
        return None
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


EXPORT_FILE = "conversations.json"


def read_export(path: Path, what: str, limit: int = IMPORT_LIMIT) -> Any:
    """The `conversations.json` of a chat export (ChatGPT's and Claude's are both named so): the file
    itself, the unzipped export folder holding it, or the export's .zip as downloaded. At most `limit`
    bytes are read or inflated (a zip bomb is stopped while it streams)."""
    import zipfile

    if path.is_dir():
        path = path / EXPORT_FILE
    data = read_bytes(path, limit)  # a regular file: is_zipfile would block on a FIFO
    try:
        if data[:4] == b"PK\x03\x04" or zipfile.is_zipfile(io.BytesIO(data)):
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                names = [n for n in archive.namelist() if PurePosixPath(n).name == EXPORT_FILE]
                if not names:
                    raise UsageError(f"{path} holds no {EXPORT_FILE}: is it a {what}?")
                with archive.open(min(names, key=len)) as member:
                    return json_of(capped(member, limit, path), path, what)
        return json_of(data, path, what)
    except (OSError, zipfile.BadZipFile, NotImplementedError, EOFError) as exc:
        raise MemvaultError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None


def json_of(data: bytes, path: Path, what: str) -> Any:
    import json

    try:
        return json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path} is not a {what} (not JSON: {str(exc).splitlines()[0][:120]})") from None
    except RecursionError:  # json.loads recurses once per level
        raise UsageError(f"{path} is not a {what} (nested too deeply)") from None
