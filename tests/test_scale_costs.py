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
