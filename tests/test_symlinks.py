"""Nothing is read or written through a symbolic link under entries/ (docs/architecture.md, Trust boundaries): a link
is reported (reindex, list, doctor), never indexed, never returned, never written through."""

from __future__ import annotations

import os
import time
from pathlib import Path, PurePosixPath

import httpx
import pytest

from memvault.api import Memory
from memvault.errors import UnsafePathError
from memvault.server.run import running
from memvault.vault.format.atomic import atomic_write
from memvault.vault.format.entry import Entry
from memvault.vault.write.store import Vault
from tests.support.cli import Cli
from tests.support.server import server_settings

pytestmark = pytest.mark.timeout(300)
SECRET = "root:x:0:0:the-secret-zebra-password:/root:/bin/bash"
STAMPED = "20250101T000000000Z__0b5e7a3c-1111-4222-8333-944455556666.md"


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder beside the vault, holding what a link must never reveal."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "passwd").write_text(SECRET + "\n")
    (folder / STAMPED).write_text(f"---\nrole: memory\n---\n{SECRET}\n")
    return folder


def facts_dir(vault: Path, conversation: str = "default") -> Path:
    folder = vault / "entries" / conversation / "facts"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_a_linked_file_is_reported_and_never_indexed(tmp_path, outside):
    vault = tmp_path / "vault"
    cli = Cli(vault)
    cli.ok("init")
    cli.ok("add", "the zebra lives in the savanna")
    os.symlink(outside / "passwd", facts_dir(vault) / STAMPED)
    os.symlink(outside / STAMPED, facts_dir(vault) / "hand-named.md")
    reindex = cli("reindex", "--json")
    assert reindex.exit_code == 1
    broken = {item["path"]: item["reason"] for item in reindex.json()["broken"]}
    assert set(broken) == {f"entries/default/facts/{STAMPED}", "entries/default/facts/hand-named.md"}
    assert all("symbolic link" in reason for reason in broken.values())
    found = cli.ok("search", "zebra password", "--json").stdout
    assert "secret" not in found and "savanna" in found
    listed = cli("list")
    assert "secret" not in listed.stdout and "symbolic link" in listed.stderr
    assert "symbolic link" in cli("doctor").stdout


def test_a_linked_folder_is_reported_and_never_entered(tmp_path, outside):
    vault = tmp_path / "vault"
    cli = Cli(vault)
    cli.ok("init")
    cli.ok("add", "the zebra lives in the savanna")
    conversation = outside / "conv"
    (conversation / "facts").mkdir(parents=True)
    (conversation / "facts" / STAMPED).write_text(f"---\nrole: memory\n---\n{SECRET}\n")
    os.symlink(conversation, vault / "entries" / "evil")  # a whole conversation
    os.symlink(conversation / "facts", vault / "entries" / "default" / "turns")  # a kind folder
    (vault / "entries" / "default" / "facts" / "2025").mkdir(parents=True, exist_ok=True)
    os.symlink(conversation / "facts", vault / "entries" / "default" / "facts" / "2025" / "01")  # a day folder's month
    broken = {item["path"] for item in cli("reindex", "--json").json()["broken"]}
    assert broken == {"entries/evil", "entries/default/turns", "entries/default/facts/2025/01"}
    assert "secret" not in cli.ok("search", "zebra password", "--json").stdout


def test_a_link_inside_the_vault_is_refused_too(tmp_path):
    vault = tmp_path / "vault"
    cli = Cli(vault)
    cli.ok("init")
    cli.ok("add", "the zebra lives in the savanna")
    (target,) = facts_dir(vault).iterdir()
    os.symlink(target, facts_dir(vault, "other") / "copy.md")
    broken = {item["path"]: item["reason"] for item in cli("reindex", "--json").json()["broken"]}
    assert list(broken) == ["entries/other/facts/copy.md"] and "symbolic link" in broken["entries/other/facts/copy.md"]


def test_nothing_is_written_through_a_linked_folder(tmp_path, outside):
    vault_dir = tmp_path / "vault"
    vault = Vault.init(vault_dir)
    (vault_dir / "entries" / "work").mkdir(parents=True)
    os.symlink(outside, vault_dir / "entries" / "work" / "facts")
    before = sorted(p.name for p in outside.iterdir())
    with pytest.raises(UnsafePathError, match="symbolic link"):
        with vault.transaction("add", "memvault add") as tx:
            tx.write(Entry(text="written outside?", conversation_id="work"), "ADD")
    with pytest.raises(UnsafePathError, match="symbolic link"):
        vault.write_new([Entry(text="written outside?", conversation_id="work")])
    assert sorted(p.name for p in outside.iterdir()) == before
    with pytest.raises(UnsafePathError):
        atomic_write(vault_dir / "entries" / "work" / "facts" / "x.md", b"x")
    with pytest.raises(UnsafePathError, match="symbolic link"):
        with vault.transaction("gc", "memvault gc") as tx:
            tx.purge(PurePosixPath("entries/work/facts/passwd"), "0b5e7a3c-1111-4222-8333-944455556666")
    assert sorted(p.name for p in outside.iterdir()) == before


def test_the_api_and_the_server_watcher_never_return_a_linked_file(tmp_path, outside):
    vault = tmp_path / "vault"
    with Memory(vault=vault) as memory:
        memory.add("the zebra lives in the savanna", user_id="alice", infer=False)
    folder = facts_dir(vault, "user-alice")
    with running(server_settings(vault)) as url:
        os.symlink(outside / STAMPED, folder / STAMPED)  # seen by the watcher, then by every search
        time.sleep(2)  # the watcher's debounce, then its sync
        reply = httpx.get(url + "/v1/memories/search/", params={"query": "zebra password", "user_id": "alice",
                                                               "threshold": 0}, timeout=120)
        assert reply.status_code == 200 and "secret" not in reply.text
    with Memory(vault=vault) as memory:
        assert "secret" not in str(memory.search("zebra password", user_id="alice", threshold=0))
        assert memory.get("0b5e7a3c-1111-4222-8333-944455556666") is None
