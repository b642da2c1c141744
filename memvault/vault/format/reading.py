"""Reading a vault's files safely: never through a symbolic link, never past limits.max_file_bytes,
never a file holding git's conflict markers. An entry file reads as an Entry, a workspace file
(core/, journal/) as an entry of its own role in `global`.

`EntryReading` is one part of `Vault` (vault.write.store).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath

from memvault.errors import EntryFormatError
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry, now
from memvault.vault.format.markdown import parse

# What git writes into a file it could not merge: such a file is two versions at once, never a memory.
CONFLICT_MARKER = re.compile(r"^<<<<<<< .*\n(?:.*\n)*?=======\n(?:.*\n)*?>>>>>>> ", re.MULTILINE)
# limits.max_file_bytes' default (settings.LimitsSettings says the same; core sets the configured one):
# written here, since the vault imports nothing above it.
MAX_FILE_BYTES = 1_048_576
# Memvault reads and writes nothing through a symbolic link under entries/ (docs/architecture.md, Trust boundaries):
# a link may point anywhere (/etc/passwd, another user's files), and even one that stays inside the
# vault would make one file two entries. Links are reported, never followed.
LINK_REASON = "a symbolic link: memvault does not follow links (replace it with the file itself)"


class EntryReading:
    """Reads of single files, and of every entry a listing names."""

    max_file_bytes = MAX_FILE_BYTES  # limits.max_file_bytes: a larger entry file is broken, not read

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

    def defaults_for(self, rel: PurePosixPath, path: Path) -> dict:
        try:
            created = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc)
        except OSError:
            created = None
        return layout.entry_defaults(rel, created)

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

    def summary(self, conversation: str) -> Entry | None:
        for folder in self.conversation_folders(conversation):
            rel = PurePosixPath(layout.ENTRIES, folder, "summaries", layout.SUMMARY_FILE)
            if (self.root / rel).exists():
                return self.read(rel)
        return None

    def linked_part(self, rel: PurePosixPath) -> PurePosixPath | None:
        """The first part of `rel` (from the vault root down) that is a symbolic link, or None."""
        path = self.root
        for depth, part in enumerate(rel.parts, start=1):
            path = path / part
            if path.is_symlink():
                return PurePosixPath(*rel.parts[:depth])
        return None


def too_large(limit: int) -> str:
    return f"larger than limits.max_file_bytes ({limit:,} bytes): not read"
