"""After an erase's rewrite, with an LLM: each summary and session summary the erase scrubbed is
written again from what remains (memvault/curate/resummary.py guards the answer); without an LLM, or
when the answer is refused, the scrubbed one (the quoting sentences removed) stays. Only the present
version is re-written: past versions in history keep their sentence-removed text."""

from __future__ import annotations

from pathlib import PurePosixPath

from memvault.curate import resummary
from memvault.errors import EntryFormatError
from memvault.text.redact import redact
from memvault.vault.forget.scrub import Scrubber
from memvault.vault.format.atomic import atomic_write
from memvault.vault.format.entry import Entry, now
from memvault.vault.format.markdown import render
from memvault.vault.git.log import format_message
from memvault.vault.write.store import Vault

MAX_FACTS = 200  # the most recent facts a conversation's summary is re-written from (a prompt stays small)


def resummarise(vault: Vault, llm, paths: list[str], erased: Scrubber) -> tuple[list[str], list[str]]:
    """(paths re-written, "path: why kept scrubbed" lines). Call with the vault's write lock held:
    the re-written files are committed here, before the erasure record."""
    written, refused = [], []
    entries = [(rel, item) for rel, item in vault.iter_entries() if isinstance(item, Entry)]
    for path in sorted(paths):
        rel = PurePosixPath(path)
        try:
            entry = vault.read(rel) if (vault.root / rel).is_file() else None
        except EntryFormatError:
            entry = None
        if entry is None or entry.role not in ("summary", "session"):
            continue
        try:
            if entry.role == "summary":
                text, why = resummary.conversation_summary(llm, facts_of(entries, entry.conversation_id),
                                                           entry.conversation_id, erased)
            else:
                text, why = resummary.session_summary(llm, session_turns(entries, entry), erased)
        except Exception as exc:  # noqa: BLE001 - past its rewrite an erase must reach its record: the scrubbed one stays
            text, why = None, f"re-summarising failed ({type(exc).__name__})"
        if text is None:
            refused.append(f"{path}: {why}")
            continue
        atomic_write(vault.root / rel, render(entry.replace(text=redact(text), updated_at=now())).encode("utf-8"))
        written.append(path)
    if written:
        vault.git.commit(written, format_message(f"memvault erase: {len(written)} summaries re-written without the "
                                                 "erased text", "erase", None, []))
    return written, refused


def facts_of(entries: list[tuple[PurePosixPath, Entry]], conversation: str) -> list[str]:
    facts = sorted((e for _, e in entries if e.role == "memory" and e.conversation_id == conversation),
                   key=lambda e: e.created_at)
    return [e.text for e in facts[-MAX_FACTS:]]


def session_turns(entries: list[tuple[PurePosixPath, Entry]], session: Entry) -> list[str]:
    """The conversation's user turns of the session: after the one summarised before it, up to it."""
    same = [e for _, e in entries if e.conversation_id == session.conversation_id]
    earlier = [e.created_at for e in same if e.role == "session" and e.created_at < session.created_at]
    start = max(earlier, default=None)
    return [e.text for e in sorted(same, key=lambda e: e.created_at) if e.role == "user"
            and e.created_at <= session.created_at and (start is None or e.created_at > start)]
