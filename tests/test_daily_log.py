"""The daily log journal/<YYYY-MM-DD>.md: a dated block of what a session learned, written inside the
caller's transaction, deduplicated past 2,000 characters, never past 8,000, indexed, printed by
`memvault journal`; written by the session end (chat exit, idle, shutdown, cron) in its one commit."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memvault import settings as settings_module
from memvault.converse import MemoryChat
from memvault.core import Memvault
from memvault.core.workspace import JOURNAL_DEDUP_CHARS, JOURNAL_FULL, JOURNAL_MAX_CHARS, journal_text
from memvault.curate.ingest import MemoryEvent
from memvault.vault.format.entry import Entry
from tests.support.cli import Cli
from tests.support.scripted_llm import ScriptedLLM

NOON = datetime(2026, 11, 23, 12, 30, tzinfo=timezone.utc)
EVENTS = [MemoryEvent("ADD", "11111111-aaaa-4aaa-8aaa-aaaaaaaaaaaa", None, "Alice adopted a cat named Miso"),
          MemoryEvent("UPDATE", "22222222-bbbb-4bbb-8bbb-bbbbbbbbbbbb", "Alice lives in Rome", "Alice lives in Lisbon"),
          MemoryEvent("DELETE", "33333333-cccc-4ccc-8ccc-cccccccccccc", "Alice has a dog", None),
          MemoryEvent("NONE", "44444444-dddd-4ddd-8ddd-dddddddddddd", "Alice likes tea", "Alice likes tea")]


def git(vault: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(vault), *args], capture_output=True, text=True, check=True).stdout


def log(memvault, events, title):
    """One dated block in a commit of its own, as a session end writes it inside its transaction."""
    with memvault.vault.transaction("journal", f"memvault journal: {title}") as tx:
        memvault.log_day(tx, events, title)
    memvault.keeper.record(tx.changes)


@pytest.fixture
def memvault(tmp_path):
    m = Memvault.open(settings_module.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    yield m
    m.close()


def test_log_day_appends_a_dated_block_in_the_callers_commit(memvault):
    fact = Entry("Alice adopted a cat named Miso")
    with memvault.vault.transaction("session", "memvault session end: default", "default") as tx:
        tx.write(fact, event="ADD")
        written = memvault.log_day(tx, EVENTS, "chat in default", when=NOON)
    memvault.keeper.record(tx.changes)
    assert str(written) == "journal/2026-11-23.md"
    text = (memvault.vault.root / written).read_text(encoding="utf-8")
    assert text == ("# 2026-11-23\n\n## 12:30 UTC · chat in default\n"
                    "- added: Alice adopted a cat named Miso [11111111]\n"
                    "- updated: Alice lives in Lisbon (was: Alice lives in Rome) [22222222]\n"
                    "- deleted: Alice has a dog [33333333]\n")  # NONE is not something learned
    files = git(memvault.vault.root, "show", "--name-only", "--format=%s", "HEAD").split("\n")
    assert files[0] == "memvault session end: default"
    assert "journal/2026-11-23.md" in files and any(f.startswith("entries/default/facts/") for f in files)
    # Nothing learned, nothing written.
    with memvault.vault.transaction("session", "nothing") as tx:
        assert memvault.log_day(tx, [EVENTS[3]], "quiet", when=NOON) is None
        tx.write(Entry("x"), event="ADD")  # (a commit needs a change)
    assert "journal" not in git(memvault.vault.root, "show", "--name-only", "--format=", "HEAD")


def test_a_day_is_deduplicated_past_2000_characters_and_capped_at_8000():
    block = "## 10:00 UTC · chat in default\n" + "".join(f"- added: fact number {i} of the day\n" for i in range(40))
    once = journal_text(None, "2026-11-23", block)
    assert len(once) < JOURNAL_DEDUP_CHARS < 2 * len(once)  # the second block passes the mark
    twice = journal_text(once, "2026-11-23", block.replace("10:00", "11:00"))
    assert twice.count("- added: fact number 7 of the day\n") == 1  # the repeated lines went...
    assert "## 10:00 UTC" in twice and "## 11:00 UTC" in twice  # ...the dated headings stay
    small = journal_text(None, "2026-11-23", "## 09:00 UTC · x\n- added: same\n")
    assert journal_text(small, "2026-11-23", "## 09:05 UTC · x\n- added: same\n").count("- added: same") == 2
    day = None
    for hour in range(200):  # a runaway day: distinct lines, far more than the cap
        block = f"## {hour % 24:02d}:00 UTC · run {hour}\n- added: fact {hour} " + "z" * 80 + "\n"
        day = journal_text(day, "2026-11-23", block)
    assert len(day) <= JOURNAL_MAX_CHARS and day.rstrip("\n").endswith(JOURNAL_FULL)
    assert journal_text(day, "2026-11-23", "## 23:59 UTC · late\n- added: more\n") == day  # full: unchanged


def test_journal_command_prints_a_day_and_search_finds_it(memvault):
    log(memvault, EVENTS, "chat in default")
    cli = Cli(memvault.vault.root)
    today = datetime.now(timezone.utc).date().isoformat()
    printed = cli.ok("journal").stdout
    assert printed.startswith(f"# {today}\n") and "- added: Alice adopted a cat named Miso" in printed
    assert cli.ok("journal", today, "--json").json()["text"] == printed.rstrip("\n") + "\n"
    assert "Nothing logged on 2020-01-01" in cli.ok("journal", "2020-01-01").stderr
    bad = cli("journal", "2026-13-45")
    assert bad.exit_code != 0 and "invalid date" in bad.stderr and "Traceback" not in bad.stderr
    hits = cli.ok("search", "cat named Miso", "--json").json()
    assert any(hit["role"] == "journal" and "Miso" in hit["text"] for hit in hits)


def test_a_chat_session_logs_what_it_learned_when_it_ends(memvault):
    """What the turns stored (through the write policy) and what the end promoted go into today's log,
    in the session end's one commit."""
    llm = ScriptedLLM([("Latest user message", json.dumps(["The user started cello lessons"])),
                       ("Previous summary:", "Alice plays music.")], default="ok")
    chat = MemoryChat(memvault, "music")
    history = [{"role": "user", "content": "I started cello lessons this week"}]
    turn = chat.persist(chat.prepare(history), history[0]["content"], "Nice!")
    chat.curate(turn, history, llm, background=False)
    assert not chat.errors
    head = git(memvault.vault.root, "rev-parse", "HEAD").strip()
    memvault.end_session("music", llm)
    _, text = memvault.journal()
    assert "· session in music\n- added: The user started cello lessons [" in text
    assert git(memvault.vault.root, "log", "-1", "--format=%s").startswith("memvault session end: music")
    assert git(memvault.vault.root, "rev-list", "--count", f"{head}..HEAD").strip() == "1"
    assert memvault.end_session("music", llm) is None  # ended once: a second end adds nothing
    assert memvault.journal()[1] == text

