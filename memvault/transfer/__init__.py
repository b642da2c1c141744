"""Import and export: other systems' conversations and memories in, a vault out as JSONL.

`import_source` reads a ChatGPT or Claude export, a mem0 store, agent-cli memory folders or memvault's
own JSONL, and writes it through the facade's `import_entries` (the gate every add passes), one commit
per conversation (runner.py: resumable and idempotent). `export_jsonl` writes every entry file as a line (jsonl.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from memvault.errors import UsageError
from memvault.transfer.runner import Importer, ImportReport

if TYPE_CHECKING:
    from memvault.core import Memvault

FORMATS = ("chatgpt", "claude", "mem0", "agent-cli", "jsonl")


def detect(path: Path, limit: int) -> tuple[str, Any]:
    """The format of `path`, from what it holds (both chat exports are a `conversations.json`), and
    the JSON read to tell it (None when the format showed without it): the import reads it no more."""
    from memvault.transfer import agentcli, chatgpt, claude, mem0
    from memvault.transfer.source_files import read_export

    if str(path) == "-" or path.suffix == ".jsonl":
        return "jsonl", None
    if not path.exists():
        raise UsageError(f"no such file or folder: {path}")
    if path.is_dir() and agentcli.entries_folder(path) is not None:
        return "agent-cli", None
    if mem0.is_history_db(path):
        return "mem0", None
    data = read_export(path, "known export", limit)
    for name, looks_like in (("chatgpt", chatgpt.looks_like), ("claude", claude.looks_like),
                             ("mem0", mem0.looks_like_dump)):
        if looks_like(data):
            return name, data
    raise UsageError(f"cannot tell the format of {path}: pass --format ({', '.join(FORMATS)})")


def import_source(memvault: Memvault, paths: list[str], fmt: str = "auto", conversation: str | None = None,
                  llm=None, prompt: str | None = None,
                  on_progress: Callable[[int, int, str], None] | None = None) -> ImportReport:
    """Import `paths` (one source; for mem0, its history database and/or get_all dump) into the vault.
    `llm`: curate the user turns of chat exports into facts as they come in (`--curate`)."""
    from memvault.vault.format.layout import check_conversation_id

    if not paths:
        raise UsageError("nothing to import: give a file or folder")
    sources = [Path(p).expanduser() for p in paths]
    fmt, read = detect(sources[0], memvault.settings.limits.max_import_bytes) if fmt == "auto" else (fmt, None)
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r} (expected auto, {', '.join(FORMATS)})")
    if len(sources) > 1 and fmt != "mem0":
        raise UsageError("several paths are one source only for mem0 (its history.db and a get_all dump)")
    if conversation is not None:
        conversation = check_conversation_id(conversation)
    notes: list[str] = []
    workspace: dict = {}  # core files and journal days a memvault export carries
    batches, key = read_batches(memvault, fmt, sources, conversation, notes, read, workspace)
    if llm is not None and not any(batch.curatable for batch in batches):
        raise UsageError(f"--curate turns chat turns into facts; a {fmt} source holds no chat turns to curate")
    importer = Importer(memvault, key, fmt, llm, prompt, on_progress)
    report = importer.run(batches, len(batches))
    if workspace:
        _, kept = memvault.restore_workspace(workspace)
        notes.extend(kept)
    report.notes[:0] = notes
    return report


def read_batches(memvault: Memvault, fmt: str, sources: list[Path], conversation: str | None,
                 notes: list[str], read: Any = None, workspace: dict | None = None) -> tuple[list, str]:
    """The source's batches, and the key its progress file is named by (the format and the sources).
    `read`: the first source's JSON when `detect` has parsed it already; `workspace` receives the
    core files and journal days of a memvault export."""
    from memvault.transfer import agentcli, chatgpt, claude, jsonl, mem0

    identity = "\0".join(str(source.resolve()) for source in sources)
    if fmt == "jsonl":
        text = jsonl.read_source(str(sources[0]))
        stdin = str(sources[0]) == "-"
        if stdin:  # the same text piped twice is the same source
            identity = hashlib.sha256(text.encode("utf-8")).hexdigest()
        batches = jsonl.batches(memvault, text, "standard input" if stdin else str(sources[0]), conversation,
                                workspace)
    elif fmt == "mem0":
        batches = mem0.batches(memvault, sources, conversation, notes, read)
    elif fmt == "agent-cli":
        batches = agentcli.batches(memvault, sources[0], conversation, notes)
    else:
        module = {"chatgpt": chatgpt, "claude": claude}[fmt]
        batches = module.batches(memvault, sources[0], conversation, notes, read)
    return batches, hashlib.sha256(f"{fmt}\0{conversation}\0{identity}".encode()).hexdigest()[:24]


def export_jsonl(memvault: Memvault, out: TextIO) -> tuple[int, list[str]]:
    """Write every entry file of the vault to `out` as JSONL; returns how many, and the files skipped."""
    from memvault.transfer.jsonl import export_lines

    skipped: list[str] = []
    count = 0
    for line in export_lines(memvault, skipped):
        out.write(line)
        count += 1
    return count, skipped
