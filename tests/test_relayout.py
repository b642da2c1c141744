"""A vault made by the last release with one folder per kind, moved into day folders in place.

tests/fixtures/release_vault/vault.bundle was written by memvault at 0854122 (make_vault.py beside it
says how): facts in three conversations, chat turns, two UPDATEs and a DELETE over six dated commits.
MANIFEST.json names each memory and what the vault held at each commit. Each test clones it and
drives the real CLI (or the facade), real git, the real embedder for search.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path, PurePosixPath

import pytest

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.vault.format import layout
from memvault.vault.write import relayout as relayout_module
from tests.support.cli import Cli

FIXTURE = Path(__file__).parent / "fixtures" / "release_vault"
MANIFEST = json.loads((FIXTURE / "MANIFEST.json").read_text())
MEMORIES = MANIFEST["memories"]
DEPLOY = MEMORIES["The deploy runs on Fridays"]["id"]
SISTER = MEMORIES["My sister is called Maria"]["id"]


def git(root: Path, *args: str) -> str:
    person = ["-c", "user.name=A Person", "-c", "user.email=person@example.org"]
    return subprocess.run(["git", "-C", str(root), *person, *args], capture_output=True, text=True,
                          check=True).stdout


def released(tmp_path: Path, name: str = "vault") -> Cli:
    root = tmp_path / name
    subprocess.run(["git", "clone", "-q", str(FIXTURE / "vault.bundle"), str(root)], check=True)
    git(root, "remote", "remove", "origin")
    return Cli(root)


def entry_paths(root: Path) -> list[str]:
    return sorted(line for line in git(root, "ls-files", "entries").splitlines())


def flat_leftovers(root: Path) -> list[str]:
    """Entry files of a dated kind still in the kind folder itself."""
    return [rel for rel in entry_paths(root) if layout.dated_path(PurePosixPath(rel)) is not None]


def live_ids(cli: Cli) -> set[str]:
    return {row["id"] for row in cli.ok("list", "--json", "--limit", "1000").json()}


def as_of_views(cli: Cli) -> list[dict]:
    """What `show --as-of` and `search --as-of` gave at each moment the fixture recorded."""
    views = []
    for moment in MANIFEST["moments"]:
        shown = {}
        for text, memory in MEMORIES.items():
            result = cli("show", memory["id"], "--as-of", moment["commit"], "--json")
            shown[text] = result.json()["text"] if result.exit_code == 0 else None
        hits = cli.ok("search", "deploy", "--as-of", moment["time"], "--json", "-k", "20").json()
        views.append({"shown": shown, "searched": sorted(hit["id"] for hit in hits)})
    return views


def test_release_vault_moves_in_one_commit_of_renames_and_reads_as_before(tmp_path):
    cli = released(tmp_path)
    root = cli.vault
    files_before = entry_paths(root)
    assert flat_leftovers(root) == files_before  # the release kept every file in its kind folder
    ids_before = live_ids(cli)
    views_before = as_of_views(cli)
    head_before = git(root, "rev-parse", "HEAD").strip()

    cli.ok("init")  # the format migrations run at init, clone and each sync

    assert flat_leftovers(root) == []
    moves = git(root, "log", "--format=", "--name-status", "-M", f"{head_before}..HEAD",
                "--grep", "day folders").splitlines()
    assert len(moves) == len(files_before) and all(line.startswith("R100\t") for line in moves)
    assert {line.split("\t")[1] for line in moves} == set(files_before)
    assert all(layout.is_day_parts(PurePosixPath(line.split("\t")[2]).parts[-4:-1]) for line in moves)
    assert git(root, "status", "--porcelain") == ""

    assert live_ids(cli) == ids_before
    for text, memory in MEMORIES.items():
        result = cli("show", memory["id"], "--json")
        if memory.get("deleted"):
            assert result.exit_code != 0 or result.json().get("deleted_at")
            continue
        assert result.exit_code == 0, result.stderr
        assert result.json()["text"] == memory.get("now", text)
        hits = cli.ok("search", memory.get("now", text), "--json", "-k", "3").json()
        assert memory["id"] in [hit["id"] for hit in hits]
    history = cli.ok("history", DEPLOY, "--json").json()
    assert [(e["event"], e["new_memory"]) for e in history] == [
        ("ADD", "The deploy runs on Fridays"), ("UPDATE", "The deploy runs on Thursdays"),
        ("UPDATE", "The deploy runs on Thursdays after the standup")]
    assert [e["event"] for e in cli.ok("history", SISTER, "--json").json()] == ["ADD", "DELETE"]
    moved = next(line.split("\t")[2] for line in moves if DEPLOY in line)
    assert len(git(root, "log", "--follow", "--format=%h", "--", moved).split()) == 4  # add, 2 updates, the move
    assert as_of_views(cli) == views_before

    head = git(root, "rev-parse", "HEAD")
    cli.ok("init")
    assert git(root, "rev-parse", "HEAD") == head  # nothing left to move: no commit


def open_vault(root: Path) -> Memvault:
    return Memvault.open(settings_module.load(None, {"vault.path": str(root)}))


@pytest.mark.parametrize("next_run", ["sync", "proxy start"])
def test_a_migration_killed_half_way_loses_nothing_and_the_next_run_finishes_it(tmp_path, monkeypatch, next_run):
    cli = released(tmp_path)
    root = cli.vault
    ids = live_ids(cli)
    files = entry_paths(root)
    real_place, placed = relayout_module.place, []

    def killed_after_three(*args):
        if len(placed) == 7:
            raise KeyboardInterrupt  # Ctrl-C between two moves: the user turn moved, the assistant's not
        placed.append(args)
        return real_place(*args)

    monkeypatch.setattr(relayout_module, "place", killed_after_three)
    memvault = open_vault(root)
    with pytest.raises(KeyboardInterrupt):
        memvault.ensure_merge_setup()
    memvault.close()
    monkeypatch.setattr(relayout_module, "place", real_place)
    assert (root / ".memvault" / relayout_module.INTENT_FILE).exists()
    assert len(flat_leftovers(root)) == len(files)  # nothing committed yet: git still has them flat
    assert live_ids(cli) == ids  # seven files in day folders, one flat: all read, once each

    memvault = open_vault(root)
    if next_run == "sync":
        assert memvault.ensure_merge_setup()
    else:  # the proxy commits the turn files a stop left: the moved one is no new turn
        assert memvault.commit_leftover_turns() == 0
    memvault.close()
    user_turn = MEMORIES["Can you remind me when we deploy?"]["id"]
    assert [e["event"] for e in cli.ok("history", user_turn, "--json").json()] == ["ADD"]
    assert flat_leftovers(root) == [] and len(entry_paths(root)) == len(files)
    assert git(root, "status", "--porcelain") == ""
    assert not (root / ".memvault" / relayout_module.INTENT_FILE).exists()
    statuses = git(root, "show", "--format=", "--name-status", "-M", "HEAD").splitlines()
    assert len(statuses) == len(files) and all(line.startswith("R100\t") for line in statuses)
    assert live_ids(cli) == ids


def test_a_file_with_uncommitted_changes_stays_until_it_is_committed(tmp_path):
    cli = released(tmp_path)
    root = cli.vault
    edited = next(rel for rel in entry_paths(root) if SISTER not in rel and "/facts/" in rel)
    (root / edited).write_text((root / edited).read_text().replace("Utrecht", "Utrecht, near the canal"))
    cli.ok("init")
    assert flat_leftovers(root) == [edited]
    assert "near the canal" in (root / edited).read_text()  # a person's change untouched
    assert git(root, "status", "--porcelain").strip() == f"M {edited}"
    assert "Utrecht, near the canal" in cli.ok("list", "--json").stdout  # read where it is
    git(root, "commit", "-qam", "by hand")
    cli.ok("init")
    assert flat_leftovers(root) == []
    assert "Utrecht, near the canal" in cli.ok("list", "--json").stdout


def test_sync_with_a_clone_still_on_the_old_layout_loses_nothing(tmp_path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(FIXTURE / "vault.bundle"), str(remote)], check=True)
    laptop = Cli(tmp_path / "laptop")
    Cli(tmp_path / "unused").ok("clone", str(remote), str(laptop.vault))  # this release: moves at clone
    assert flat_leftovers(laptop.vault) == []
    laptop.ok("sync")
    old = tmp_path / "old"  # a device still on the release: its files stay flat (plain git stands for it)
    subprocess.run(["git", "clone", "-q", str(remote), str(old)], check=True)
    git(old, "reset", "-q", "--hard", "HEAD~1")  # it had not fetched the move yet
    utrecht = next(rel for rel in entry_paths(old) if MEMORIES["I live in Utrecht"]["id"] in rel)
    (old / utrecht).write_text((old / utrecht).read_text().replace("I live in Utrecht", "I live in Leiden now"))
    git(old, "commit", "-qam", "edited on the old device")
    git(old, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")  # its edit follows the rename
    assert not (old / utrecht).exists()
    moved = next(rel for rel in entry_paths(old) if MEMORIES["I live in Utrecht"]["id"] in rel)
    assert "Leiden now" in (old / moved).read_text()
    written = PurePosixPath(utrecht).parent / "20260321T080000000Z__0f0e0d0c-0000-4000-8000-000000000001.md"
    (old / written).write_text((old / moved).read_text().replace(MEMORIES["I live in Utrecht"]["id"],
                               "0f0e0d0c-0000-4000-8000-000000000001").replace("Leiden now", "Leiden by the river"))
    git(old, "add", str(written))
    git(old, "commit", "-qm", "written flat after the other device moved")
    git(old, "push", "-q", "origin", "main")

    laptop.ok("sync")
    rows = {row["id"]: row["text"] for row in laptop.ok("list", "--json").json()}
    assert rows[MEMORIES["I live in Utrecht"]["id"]] == "I live in Leiden now"
    assert rows["0f0e0d0c-0000-4000-8000-000000000001"] == "I live in Leiden by the river"
    assert set(rows) >= {m["id"] for m in MEMORIES.values() if not m.get("deleted")}
    laptop.ok("sync")  # the next migration moves what the old device wrote
    assert flat_leftovers(laptop.vault) == []
    assert rows == {row["id"]: row["text"] for row in laptop.ok("list", "--json").json()}


def test_erase_finds_a_memory_under_both_layouts_in_history(tmp_path):
    cli = released(tmp_path)
    root = cli.vault
    cli.ok("init")
    alice = MEMORIES["Alice prefers tea over coffee"]["id"]
    assert len(git(root, "log", "--all", "--format=%h", "--", f"*__{alice}.md").split()) == 2  # added, moved
    cli.ok("erase", alice, "--yes")
    assert git(root, "log", "--all", "--format=%h", "--", f"*__{alice}.md").strip() == ""
    assert "tea over coffee" not in git(root, "log", "--all", "-p")
    assert live_ids(cli) == {m["id"] for m in MEMORIES.values() if not m.get("deleted")} - {alice}


def test_new_entries_go_in_day_folders_and_a_hand_written_flat_file_is_read(tmp_path):
    cli = released(tmp_path)
    root = cli.vault
    added = cli.ok("add", "--no-llm", "The boiler is serviced in May", "--json").json()
    memory_id = added["results"][0]["id"]
    path = next(p for p in entry_paths(root) if memory_id in p)
    assert layout.is_day_parts(PurePosixPath(path).parts[-4:-1])
    by_hand = root / "entries" / "default" / "facts" / "note.md"
    by_hand.write_text("---\nid: note-1\nrole: memory\nconversation_id: default\n---\nThe cat is called Mo\n")
    assert "note-1" in live_ids(cli)
    turn_id = "0f0e0d0c-0000-4000-8000-000000000002"
    day = root / "entries" / "work" / "turns" / "user" / "2026" / "03" / "21"
    day.mkdir(parents=True)
    (day / f"20260321T080000000Z__{turn_id}.md").write_text("---\n---\nWhen is the standup?\n")  # all from its place
    shutil.rmtree(root / ".memvault", ignore_errors=True)
    rows = {row["id"]: row for row in cli.ok("list", "--json", "--limit", "1000").json()}
    assert {"note-1", memory_id, turn_id} <= set(rows)
    assert (rows[turn_id]["role"], rows[turn_id]["conversation_id"]) == ("user", "work")


def two_devices(tmp_path: Path) -> tuple[Cli, Path]:
    """A remote holding the release vault; a clone made by this memvault (moved into day folders at
    `clone`, not pushed yet), and a plain git clone standing for a device still on the release."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(FIXTURE / "vault.bundle"), str(remote)], check=True)
    laptop = Cli(tmp_path / "laptop")
    Cli(tmp_path / "unused").ok("clone", str(remote), str(laptop.vault))
    old = tmp_path / "old"
    subprocess.run(["git", "clone", "-q", str(remote), str(old)], check=True)
    return laptop, old


def test_an_edit_made_on_the_old_layout_merges_into_the_moved_file(tmp_path):
    laptop, old = two_devices(tmp_path)
    work = next(rel for rel in entry_paths(old) if MEMORIES["The staging database is Postgres 15"]["id"] in rel)
    (old / work).write_text((old / work).read_text().replace("Postgres 15", "Postgres 16"))
    git(old, "commit", "-qam", "edited on the old layout")
    git(old, "push", "-q", "origin", "main")

    laptop.ok("sync")  # its move and their edit of the same file meet in the merge
    rows = {row["id"]: row["text"] for row in laptop.ok("list", "--json").json()}
    assert rows[MEMORIES["The staging database is Postgres 15"]["id"]] == "The staging database is Postgres 16"
    assert flat_leftovers(laptop.vault) == []
    assert git(laptop.vault, "status", "--porcelain") == ""
    assert set(rows) == {m["id"] for m in MEMORIES.values() if not m.get("deleted")}


def delete_as_the_release_did(root: Path, rel: str) -> None:
    """What the release's `memvault rm` did: the file moved to deleted/ with deleted_at in front matter."""
    parts = PurePosixPath(rel).parts
    tomb = PurePosixPath(parts[0], parts[1], layout.DELETED, *parts[2:])
    (root / tomb).parent.mkdir(parents=True, exist_ok=True)
    text = (root / rel).read_text()
    (root / tomb).write_text(text.replace("\ncreated_at:", "\ndeleted_at: '2026-03-25T10:00:00.000Z'\ncreated_at:", 1))
    (root / rel).unlink()
    git(root, "add", "-A", "entries")
    git(root, "commit", "-qm", "deleted on the old layout")


@pytest.mark.parametrize("deleting", ["migrated", "old"])
def test_a_delete_on_one_layout_wins_over_an_edit_on_the_other(tmp_path, deleting):
    laptop, old = two_devices(tmp_path)
    memory_id = MEMORIES["The staging database is Postgres 15"]["id"]
    flat = next(rel for rel in entry_paths(old) if memory_id in rel)
    if deleting == "migrated":
        laptop.ok("rm", memory_id)
        (old / flat).write_text((old / flat).read_text().replace("Postgres 15", "Postgres 16"))
        git(old, "commit", "-qam", "edited on the old layout")
    else:
        laptop.ok("edit", memory_id, "--text", "The staging database is Postgres 16")
        delete_as_the_release_did(old, flat)
    git(old, "push", "-q", "origin", "main")

    laptop.ok("sync")
    assert memory_id not in live_ids(laptop)
    assert memory_id in {row["id"] for row in laptop.ok("list", "--deleted", "--json").json()}
    assert git(laptop.vault, "status", "--porcelain") == ""
    assert not [rel for rel in entry_paths(laptop.vault) if memory_id in rel and layout.DELETED not in rel]


def test_doctor_names_a_vault_not_moved_yet_and_its_fix_moves_it(tmp_path):
    """A person who never runs `init` or `sync` again learns of the move from doctor, and --fix makes it."""
    cli = released(tmp_path)
    waiting = flat_leftovers(cli.vault)
    line = next(c for c in cli("doctor", "--json").json()["checks"] if c["name"] == "layout")
    assert line["status"] == "warn" and f"{len(waiting)} entry file(s)" in line["detail"], line
    cli.ok("doctor", "--fix")
    assert flat_leftovers(cli.vault) == []
    assert git(cli.vault, "log", "-1", "--format=%s").strip() == relayout_module.SUBJECT
    line = next(c for c in cli("doctor", "--json").json()["checks"] if c["name"] == "layout")
    assert line["status"] == "ok", line
