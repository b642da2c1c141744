"""Erasure records stay (memvault/vault/history_filter.py): a later erase keeps every earlier record,
trailers and all, though their commit ids change."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.vault import erasure_record
from memvault.vault.entry import Entry

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


def test_erase_commits_show_in_memvault_log_and_the_log_page(tmp_path):
    from fastapi.testclient import TestClient

    from memvault.ui.app import create_app
    from tests.support.cli import Cli
    from tests.support.server import isolated_env
    from tests.support.ui import settings_for

    root = tmp_path / "vault"
    cli = Cli(root)
    cli.ok("init")
    cli.ok("add", "Kestrel Marsh-7719 nests on the tower")
    cli.ok("add", "Heron fishes at dawn")
    cli.ok("erase", "--matching", "Kestrel", "-y")
    cli.ok("erase", "--matching", "Heron", "-y")
    erased = cli.ok("log", "-o", "erase", "--json").json()
    assert [c["operation"] for c in erased] == ["erase", "erase"]
    assert all(c["subject"].startswith("memvault erase: 1 memory by matching") for c in erased)
    assert [c["operation"] for c in cli.ok("log", "--json").json()][:2] == ["erase", "erase"]
    with isolated_env(tmp_path / "home"), TestClient(create_app(settings_for(root)),
                                                     base_url="http://127.0.0.1") as client:
        page = client.get("/ui/log?operation=erase").text
    assert page.count("memvault erase: 1 memory by matching") == 2
    assert "Kestrel" not in page and "Marsh-7719" not in page  # kind and count, never the content


def test_erase_by_ids_resolves_them_as_rm_does(tmp_path):
    """An unknown id, a plain text, an ambiguous prefix: rm's one-line error, exit 1, nothing touched.
    A memory only history holds is still found by its prefix."""
    from tests.support.cli import Cli

    root = tmp_path / "vault"
    m = Memvault.open(settings_module.load(None, {"vault.path": str(root)}), create=True)
    try:
        m.add_entries([Entry(id="6a000000-0000-4000-8000-000000000001", text="From A number 1"),
                       Entry(id="6b000000-0000-4000-8000-000000000002", text="From B number 1")])
        # a fixed id: a random one begins with "7" or "6" one time in eight and the prefixes below would match it
        gone = m.add_entries([Entry(id="7c000000-0000-4000-8000-000000000003",
                                    text="Only history holds this one now")])[0]
    finally:
        m.close()
    path = next(root.rglob(f"*__{gone.id}.md"))
    subprocess.run(["git", "-C", str(root), "rm", "-q", str(path)], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "by hand"],
                   check=True)
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    cli = Cli(root)
    for args, message in [(("zz",), "no memory with id zz"), (("From B number 1",), "no memory with id From B"),
                          (("8",), "no memory with id 8"), (("6",), "id prefix 6 is ambiguous: 2 memories"),
                          (("6a", "zz"), "no memory with id zz")]:
        result = cli("erase", *args, "-y")
        assert (result.exit_code, result.stderr.count("\n")) == (1, 1), (args, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr
    assert cli("rm", "zz").stderr == cli("erase", "zz", "-y").stderr
    assert subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout == head
    assert cli.ok("erase", gone.id[:6], "-y", "--json").json()["ids"] == [gone.id]
    assert cli.ok("erase", "6b", "-y", "--json").json()["ids"] == ["6b000000-0000-4000-8000-000000000002"]
