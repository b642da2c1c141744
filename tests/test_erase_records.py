"""Erasure records stay (memvault/vault/history_filter.py): a later erase keeps every earlier record,
trailers and all, though their commit ids change."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.vault import erasure_record

pytestmark = pytest.mark.timeout(300)


def records(root: Path) -> list[tuple[str, str, list[str]]]:
    """(kind, count, erased blob ids) of every erasure record in `git log`, newest first."""
    out = subprocess.run(["git", "-C", str(root), "log", "--format=%(trailers:key=Memvault-Erased-Kind,valueonly,"
                          "separator=)|%(trailers:key=Memvault-Erased-Count,valueonly,separator=)|"
                          "%(trailers:key=Memvault-Erased-Blob,valueonly,separator=%x20)"],
                         capture_output=True, check=True, text=True).stdout
    return [(kind, count, blobs.split()) for kind, count, blobs in (line.split("|") for line in out.splitlines())
            if kind]


def test_three_erases_keep_all_three_records(tmp_path):
    root = tmp_path / "vault"
    m = Memvault.open(settings_module.load(None, {"vault.path": str(root)}), create=True)
    try:
        added = [m.add_verbatim(text) for text in ("one kestrel", "two heron", "three heron", "four owl")]
        first = m.erase(ids=[added[0].id])
        second = m.erase(matching="heron")
        third = m.erase(matching="owl")
        found = records(root)
        assert [(kind, count) for kind, count, _ in found] == [("matching", "1"), ("matching", "2"), ("id", "1")]
        assert [len(blobs) for _, _, blobs in found] == [third.blobs, second.blobs, first.blobs]
        assert all(blobs for _, _, blobs in found)
        # what sync reads: every record's blobs, the earliest's too
        assert erasure_record.erased(root, "HEAD").blobs == {b for _, _, blobs in found for b in blobs}
        assert [e.text for _, e in m.list().entries if e.role == "memory"] == []
    finally:
        m.close()
