"""The JSON-lines files under .memvault/ (index journal, curation queue, transaction intent) after a
crash or damage: a torn or garbled line never stops a command, never swallows the next record, and a
transaction's intent never acts outside the vault. Real files, real git, the real CLI."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest

from memvault.curate.queue import CurationQueue
from memvault.index import journal
from memvault.vault.format import jsonlines
from tests.support.cli import Cli

GARBAGE = [b"\xff\xfe not utf-8\n", b"[1, 2, 3]\n", b"{\"path\": 5}\n", b"{\"id\": \"x\", \"pa"]


@pytest.fixture
def cli(tmp_path) -> Cli:
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    cli.ok("add", "The heron nests by the old mill", "--no-llm")
    return cli


def head(vault: Path) -> str:
    return subprocess.run(["git", "-C", str(vault), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()


def test_a_torn_last_line_never_swallows_the_next_record(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_bytes(b'{"id": "a", "path": null}\n{"id": "b", "pa')  # a crash in the middle of a write
    jsonlines.append(path, [{"id": "c", "path": None}])
    assert [record["id"] for record in jsonlines.read(path)] == ["a", "c"]


@pytest.mark.parametrize("garbage", GARBAGE)
def test_garbage_in_the_journal_leaves_search_reindex_and_doctor_working(cli, garbage):
    with open(cli.vault / ".memvault" / journal.FILE_NAME, "ab") as handle:
        handle.write(garbage)
    [hit] = cli.ok("search", "heron", "--json").json()
    assert hit["text"] == "The heron nests by the old mill"
    cli.ok("reindex")
    assert cli("doctor", "--no-llm-check").exit_code == 0
    cli.ok("add", "A second memory after the damage", "--no-llm")
    assert len(cli.ok("search", "second memory after the damage", "--json").json()) >= 1


@pytest.mark.parametrize("garbage", GARBAGE)
def test_garbage_in_the_curation_queue_loses_no_queued_turn(tmp_path, garbage):
    queue = CurationQueue(tmp_path)
    queue.add("turn-1", "chat", {}, [{"role": "user", "content": "first"}])
    with open(queue.path, "ab") as handle:
        handle.write(garbage)
    queue.add("turn-2", "chat", {}, [{"role": "user", "content": "second"}])
    queue.done("turn-1")
    assert [record["turn"] for record in queue.pending()] == ["turn-2"]
    assert [record["turn"] for record in queue.compact()] == ["turn-2"]


@pytest.mark.parametrize("garbage", GARBAGE)
def test_a_garbled_intent_file_never_blocks_the_next_write(cli, garbage):
    intent = cli.vault / ".memvault" / "transaction.jsonl"
    intent.write_bytes(json.dumps({"head": head(cli.vault)}).encode() + b"\n" + garbage)
    cli.ok("add", "Written after a garbled intent file", "--no-llm")
    assert not intent.exists()
    assert cli("doctor", "--no-llm-check").exit_code == 0


def test_an_intent_file_never_acts_through_a_symbolic_link(cli, tmp_path):
    outside = tmp_path / "outside" / "facts"
    outside.mkdir(parents=True)
    victim = outside / "victim.md"
    victim.write_text("not memvault's to delete")
    (cli.vault / "entries" / "evil").symlink_to(tmp_path / "outside")
    before = base64.b64encode(b"overwritten").decode()
    records = [{"head": head(cli.vault)}, {"path": "entries/evil/facts/victim.md", "before": None},
               {"path": "entries/evil/facts/other.md", "before": before}]
    (cli.vault / ".memvault" / "transaction.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    cli("add", "Written after a hostile intent file", "--no-llm")
    assert victim.read_text() == "not memvault's to delete"
    assert not (outside / "other.md").exists()
    assert not (cli.vault / ".memvault" / "transaction.jsonl").exists()  # never left to block every write
