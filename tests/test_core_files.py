"""Core memory files (core/USER.md, IDENTITY.md, SOUL.md, MEMORY.md): created by init (or by the first
command that needs them), edited by a person and committed, capped and first in every prompt,
indexed so search finds them, never written through a link."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
from pathlib import Path, PurePosixPath
from types import SimpleNamespace

import pytest

from memvault import settings as settings_module
from memvault.converse import MemoryChat
from memvault.converse.prompt import CORE_HEADER, CURRENT_HEADER, MEMORY_HEADER
from memvault.core import Memvault
from memvault.errors import MemvaultError, UnsafePathError
from memvault.server.run import running
from memvault.vault.format.entry import Entry
from tests.support.cli import Cli
from tests.support.server import isolated_env, server_settings
from tests.support.upstream import Upstream, serving

OWNER_KEY = "owner-key-123456"
ALICE_KEY = "alice-key-123456"
USER_TEXT = "Alice Moreau is a marine biologist in Lisbon. She prefers short answers with sources."


def subjects(vault: Path) -> list[str]:
    return subprocess.run(["git", "-C", str(vault), "log", "--format=%s"], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def open_vault(path: Path, **flags) -> Memvault:
    return Memvault.open(settings_module.load(None, {"vault.path": str(path), **flags}), create=True)


@pytest.fixture
def memvault(tmp_path):
    m = open_vault(tmp_path / "vault")
    yield m
    m.close()


def test_init_creates_the_core_files_empty_but_explained_in_one_commit(tmp_path):
    vault = tmp_path / "vault"
    Cli(vault).ok("init")
    for name in ("USER", "IDENTITY", "SOUL", "MEMORY"):
        text = (vault / "core" / f"{name}.md").read_text(encoding="utf-8")
        assert text.startswith(f"<!-- {name}.md: ") and "memvault core edit" in text
    assert subjects(vault)[0] == "memvault core: create USER.md, IDENTITY.md, SOUL.md, MEMORY.md"
    shown = Cli(vault).ok("core", "show", "--json").json()
    assert [f["name"] for f in shown["core"]] == ["USER.md", "IDENTITY.md", "SOUL.md", "MEMORY.md"]
    assert all(f["text"] == "" for f in shown["core"])  # the explaining comment is not content
    assert len(subjects(vault)) == 2  # init again or show: nothing more to create


def test_an_older_vault_gets_them_from_the_first_command_that_needs_them(memvault):
    root = memvault.vault.root
    assert not (root / "core").exists()  # a vault from before core files
    Cli(root).ok("core", "show", "USER")
    assert (root / "core" / "USER.md").is_file()
    assert subjects(root)[0].startswith("memvault core: create")


def test_core_edit_opens_the_editor_and_commits_on_save_then_search_finds_it(tmp_path):
    vault = tmp_path / "vault"
    Cli(vault).ok("init")
    editor = tmp_path / "editor.sh"
    editor.write_text(f"#!/bin/sh\nprintf '%s\\n' '{USER_TEXT}' >> \"$1\"\n", encoding="utf-8")
    editor.chmod(editor.stat().st_mode | stat.S_IXUSR)
    result = Cli(vault).ok("core", "edit", "user", env={"EDITOR": str(editor), "VISUAL": ""})
    assert "Saved core/USER.md" in result.stderr
    assert subjects(vault)[0].startswith("memvault core: edit USER.md: Alice Moreau")
    changed = subprocess.run(["git", "-C", str(vault), "show", "--name-only", "--format=", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.split()
    assert changed == ["core/USER.md"]  # one commit, of that file only
    assert USER_TEXT in Cli(vault).ok("core", "show", "USER").stdout
    hits = Cli(vault).ok("search", "marine biologist in Lisbon", "--json").json()
    found = [hit for hit in hits if hit["role"] == "core"]
    assert found and USER_TEXT in found[0]["text"] and found[0]["conversation_id"] == "global"
    # Saving the same text again is no change and no commit.
    before = len(subjects(vault))
    assert "No change" in Cli(vault).ok("core", "edit", "USER", "--text", Cli(vault).ok(
        "core", "show", "USER", "--json").json()["core"][0]["raw"]).stderr
    assert len(subjects(vault)) == before


def test_an_unknown_core_file_is_a_one_line_error(tmp_path):
    vault = tmp_path / "vault"
    Cli(vault).ok("init")
    result = Cli(vault)("core", "edit", "../entries/x", "--text", "hello")
    assert result.exit_code != 0 and "unknown core file" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_core_files_come_first_and_an_oversized_one_is_cut_with_a_warning(tmp_path, caplog):
    memvault = open_vault(tmp_path / "vault", **{"core.max_chars": 200})
    memvault.update_core("USER", "HEAD-OF-USER " + "x" * 400 + " TAIL-OF-USER")
    memvault.update_core("SOUL", "Be honest and brief.")
    memvault.add_entries([Entry("Alice keeps a pet octopus named Inky")], "seed")
    chat = MemoryChat(memvault, "default")
    with caplog.at_level(logging.WARNING, logger="memvault"):
        turn = chat.prepare([{"role": "user", "content": "What is my octopus called?"}])
    sent = turn.messages[-1]["content"]
    assert sent.startswith(f"{CORE_HEADER}\n## USER.md\nHEAD-OF-USER")
    assert "TAIL-OF-USER" not in sent  # cut to its head...
    assert any("core/USER.md" in r.getMessage() and "core.max_chars" in r.getMessage() for r in caplog.records)
    assert sent.index("## SOUL.md\nBe honest and brief.") < sent.index(MEMORY_HEADER) < sent.index(CURRENT_HEADER)
    assert "IDENTITY.md" not in sent  # an untouched (explained-only) file adds nothing
    assert "[core]" not in sent  # nor is a core file repeated among the memories
    assert memvault.search("Be honest and brief.")[0].role == "core"  # search finds the core file...
    assert not chat.prepare([{"role": "user", "content": "Be honest and brief."}]).hits  # ...the prompt skips it
    memvault.close()


def test_a_core_file_reached_through_a_link_is_neither_read_nor_written(memvault, tmp_path, caplog, monkeypatch):
    memvault.ensure_core()
    outside = tmp_path / "outside.md"
    outside.write_text("secret of another program\n", encoding="utf-8")
    user = memvault.vault.root / "core" / "USER.md"
    user.unlink()
    os.symlink(outside, user)
    noted = []
    note_intent = memvault.vault.note_intent
    monkeypatch.setattr(memvault.vault, "note_intent", lambda rel, before: (noted.append((rel, before)),
                                                                            note_intent(rel, before))[1])
    with pytest.raises(MemvaultError, match="symbolic link"):
        memvault.update_core("USER", "overwritten")
    with pytest.raises(UnsafePathError, match="symbolic link"), memvault.vault.transaction("core", "x") as tx:
        tx.write_file(PurePosixPath("core/USER.md"), "overwritten")  # the write path refuses on its own
    with pytest.raises(UnsafePathError, match="only core/"), memvault.vault.transaction("core", "x") as tx:
        tx.write_file(PurePosixPath("entries/default/facts/x.md"), "not a workspace file")
    assert outside.read_text(encoding="utf-8") == "secret of another program\n"
    # Not read either: a write through the link would first copy the target's bytes into the
    # transaction's crash journal (.memvault/transaction.jsonl, base64), from where a crash's recovery
    # would write them into the vault.
    assert [before for _, before in noted if before and b"secret of another program" in before] == []
    with caplog.at_level(logging.WARNING, logger="memvault"):
        assert memvault.core_context() == []
    report = memvault.reindex()
    assert ("core/USER.md", ) == tuple(path for path, _ in report.broken)


# -- through the proxy: core files reach the upstream first -----------------------------------------
@pytest.fixture(scope="module")
def proxy(tmp_path_factory):
    base = tmp_path_factory.mktemp("core-proxy")
    upstream = Upstream()  # answers "ok" at once, recording every request
    with serving(upstream.app()) as root, isolated_env(base / "home"):
        settings = server_settings(base / "vault", root + "/v1", api_key=OWNER_KEY)
        settings.server.keys = {ALICE_KEY: {"user_id": ("alice",)}}
        with running(settings) as url:
            yield SimpleNamespace(url=url, settings=settings, upstream=upstream)


def ask(proxy, key: str) -> list[dict]:
    import openai

    client = openai.OpenAI(base_url=proxy.url + "/v1", api_key=key, max_retries=0)
    client.chat.completions.create(model="fake", messages=[{"role": "user", "content": "Who am I?"}])
    return proxy.upstream.chat_requests()[-1]["messages"]


def test_core_files_reach_the_upstream_request_first(proxy):
    writer = Memvault.open(proxy.settings)  # as a person (another process) would, while the server runs
    writer.update_core("USER", USER_TEXT)
    writer.close()
    sent = ask(proxy, OWNER_KEY)
    assert sent[0]["role"] == "system"  # memvault's system prompt, then the user's message...
    assert sent[-1]["content"].startswith(f"{CORE_HEADER}\n## USER.md\n{USER_TEXT}")  # ...core first
    assert sent[-1]["content"].endswith(f"{CURRENT_HEADER} Who am I?")
    # A key confined to alice's scope never gets the vault owner's core files.
    assert USER_TEXT not in ask(proxy, ALICE_KEY)[-1]["content"]


def test_a_write_killed_before_its_commit_is_undone_by_the_next_writer(memvault):
    import sys

    memvault.update_core("USER", "before the crash")
    script = ("import os, sys\nfrom pathlib import PurePosixPath\nfrom memvault.vault.write.store import Vault\n"
              "vault = Vault.open(sys.argv[1])\n"
              "with vault.transaction('core', 'dies') as tx:\n"
              "    tx.write_file(PurePosixPath('core/USER.md'), 'half-written by a process that dies\\n')\n"
              "    os._exit(9)  # killed: no rollback, no commit\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", script, str(memvault.vault.root)], env=env, timeout=120)
    assert done.returncode == 9
    user = memvault.vault.root / "core" / "USER.md"
    assert user.read_text(encoding="utf-8").startswith("half-written")
    memvault.update_core("MEMORY", "the next write")  # recovers first, under the lock
    assert user.read_text(encoding="utf-8") == "before the crash\n"
    assert subprocess.run(["git", "-C", str(memvault.vault.root), "status", "--porcelain"], capture_output=True,
                          text=True, check=True).stdout == ""


def test_a_hand_edit_of_a_core_file_is_indexed_while_watching(memvault):
    import threading
    import time

    memvault.ensure_core()
    memvault.reindex()
    stop, ready = threading.Event(), threading.Event()
    watcher = threading.Thread(target=memvault.watch, args=(memvault.resync_paths, stop, ready), daemon=True)
    watcher.start()
    try:
        assert ready.wait(30)
        (memvault.vault.root / "core" / "MEMORY.md").write_text("Project Heron ships in March.\n", encoding="utf-8")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            hits = memvault.search("when does project Heron ship?")
            if hits and hits[0].role == "core":
                break
            time.sleep(0.2)
        assert hits and hits[0].role == "core" and "Heron" in hits[0].text
    finally:
        stop.set()
        watcher.join(10)
