"""`list -n N`: the newest N entries, found from the times in file names without reading every file."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memvault.core import Memvault
from memvault.settings import Settings
from memvault.vault.format.entry import Entry

START = datetime(2025, 1, 1, tzinfo=UTC)


def vault_with(tmp_path, entries: list[Entry]) -> Memvault:
    settings = Settings()
    settings.vault.path = str(tmp_path / "vault")
    core = Memvault.open(settings, create=True)
    core.add_entries(entries, "seed")
    return core


def texts(listing) -> list[str]:
    return [entry.text for _, entry in listing.entries]


def test_the_newest_n_match_a_full_listing_whatever_the_filter(tmp_path):
    entries = [Entry(f"fact {i}", role="memory" if i % 3 else "user", conversation_id=f"c{i % 2}",
                     created_at=START + timedelta(hours=i)) for i in range(30)]
    core = vault_with(tmp_path, entries)
    for conversation, role, limit in [(None, None, 5), ("c1", None, 4), (None, "user", 3), ("c0", "user", 50)]:
        full = texts(core.list(conversation, role))
        assert texts(core.list(conversation, role, limit=limit)) == full[-limit:], (conversation, role, limit)


def test_a_hand_named_file_is_read_and_placed_by_its_front_matter(tmp_path):
    core = vault_with(tmp_path, [Entry(f"fact {i}", created_at=START + timedelta(days=i)) for i in range(5)])
    facts = core.vault.root / "entries" / "default" / "facts"
    (facts / "my-note.md").write_text("---\ncreated_at: 2030-01-01T00:00:00+00:00\n---\nwritten by hand\n")
    (facts / "old-note.md").write_text("---\ncreated_at: 2001-01-01T00:00:00+00:00\n---\nan old one\n")
    assert texts(core.list(limit=2)) == ["fact 4", "written by hand"]


def test_only_the_newest_files_are_read(tmp_path):
    core = vault_with(tmp_path, [Entry(f"fact {i}", created_at=START + timedelta(days=i)) for i in range(5)])
    oldest = sorted((core.vault.root / "entries" / "default" / "facts").rglob("*.md"))[0]
    oldest.write_text("---\ncreated_at: [unclosed\n---\nbroken\n")
    assert [str(p.path) for p in core.list().broken] == [str(oldest.relative_to(core.vault.root))]
    newest = core.list(limit=2)
    assert texts(newest) == ["fact 3", "fact 4"] and newest.broken == []  # the broken old file was never opened
