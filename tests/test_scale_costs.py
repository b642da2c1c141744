"""What a no-change reindex costs grows with the files only as a stat each: no object per unchanged file."""

import os

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.index import catchup as sync
from memvault.vault.format.entry import Entry


def test_a_no_change_scan_keeps_only_the_names_of_unchanged_files(tmp_path, monkeypatch):
    core = Memvault.open(settings_module.load(None, {"vault.path": str(tmp_path / "v")}), create=True)
    core.add_entries([Entry(f"memory {i}", conversation_id=f"c{i % 3}") for i in range(30)], "30 memories")
    for path in (tmp_path / "v" / "entries").rglob("*.md"):  # written long ago, so their stats are trusted
        os.utime(path, ns=(10**18, 10**18))
    core.reindex()  # hashes them once (same bytes) and records their stats
    made = []
    monkeypatch.setattr(sync, "ScannedFile", lambda *a, **kw: made.append(a))
    indexed = core.index().files()
    snapshot = sync.scan(core.vault, indexed)
    assert made == [] and len(snapshot.unchanged) == 30
    plan = sync.diff(snapshot, indexed)
    assert plan.is_empty and plan.unchanged == 30 and not plan.removed
    core.close()


def old_stats(root) -> None:
    """Every file under the vault's entries/ and core/, as if written long ago (their stats are trusted)."""
    for folder in ("entries", "core"):
        for path in (root / folder).rglob("*.md"):
            os.utime(path, ns=(10**18, 10**18))


def test_a_no_change_reindex_compares_stamps_and_loads_no_whole_row(tmp_path, monkeypatch):
    from memvault.index.store import IndexStore

    root = tmp_path / "v"
    core = Memvault.open(settings_module.load(None, {"vault.path": str(root)}), create=True)
    core.add_entries([Entry(f"memory {i}", conversation_id=f"c{i % 3}") for i in range(30)], "30 memories")
    core.update_core("USER", "Alice, a tea drinker.")  # a workspace file is compared by its stamp too
    old_stats(root)
    core.reindex()  # builds the index, recording the files' stats
    loads = []
    whole_rows = IndexStore.files
    monkeypatch.setattr(IndexStore, "files", lambda self: loads.append(1) or whole_rows(self))
    report = core.reindex()
    assert (report.unchanged, report.added, report.updated, report.removed, loads) == (31, 0, 0, 0, [])

    # A change of any kind is still found, by the whole comparison: an edit, a removal, a new file.
    core.close()
    files = sorted((root / "entries").rglob("*.md"))
    files[0].write_text(files[0].read_text() + "Edited by hand.\n")
    files[1].unlink()
    core = Memvault.open(settings_module.load(None, {"vault.path": str(root)}))
    core.add_entries([Entry("one more memory", conversation_id="c9")], "one more")  # journalled: no index open
    report = core.reindex()
    assert (report.added, report.updated, report.removed, report.unchanged, len(loads)) == (1, 1, 1, 29, 1)
    core.close()
