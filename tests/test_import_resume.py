"""An import killed (SIGKILL, a real process) part-way and run again finishes with every conversation
exactly once, one commit each; run once more it changes nothing. With `--curate`, facts come in the
same commit as their conversation's turns, and a second run asks the LLM nothing."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path, PurePosixPath

import pytest

from memvault.core import Memvault
from memvault.settings import Settings
from memvault.transfer import import_source
from memvault.vault.format import layout
from tests.support.cli import Cli, run_memvault
from tests.support.exports import write_chatgpt_export
from tests.support.scripted_llm import ScriptedLLM

CONVERSATIONS = 40
TURNS = 4


def git(vault: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=vault, capture_output=True, text=True, check=True).stdout


def import_commits(vault: Path) -> list[str]:
    return [line for line in git(vault, "log", "--format=%s").splitlines() if line.startswith("memvault import")]


def state_lines(vault: Path) -> int:
    folder = vault / ".memvault" / "imports"
    return sum(len(p.read_text().splitlines()) for p in folder.glob("*.jsonl")) if folder.exists() else 0


@pytest.mark.timeout(180)
def test_an_import_killed_part_way_resumes_and_a_second_run_changes_nothing(tmp_path):
    export = write_chatgpt_export(tmp_path / "conversations.json", CONVERSATIONS, TURNS)
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    process = subprocess.Popen([sys.executable, "-m", "memvault", "import", str(export), "--vault", str(cli.vault)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=os.environ.copy())
    deadline = time.monotonic() + 120
    while state_lines(cli.vault) < 3 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, "the import ended before it could be killed"
    done_before = len(import_commits(cli.vault))
    assert 3 <= done_before < CONVERSATIONS

    resumed = run_memvault("import", str(export), "--vault", str(cli.vault), "--json")
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["unchanged"] >= done_before and report["imported"] == CONVERSATIONS - report["unchanged"]
    rows = cli.ok("list", "--json").json()
    assert len(rows) == CONVERSATIONS * TURNS and len({row["id"] for row in rows}) == len(rows)
    assert len(import_commits(cli.vault)) == CONVERSATIONS  # one per conversation, none twice
    assert len({row["conversation_id"] for row in rows}) == CONVERSATIONS
    # Nothing half-written is left: at most the temporary file of an atomic write the kill cut short
    # (never read as an entry; the next import removes it once a minute old, as `serve` and `doctor` do).
    left = git(cli.vault, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert all(line.startswith("?? ") and line.endswith(".tmp") for line in left), left
    subprocess.run(["git", "fsck", "--no-progress"], cwd=cli.vault, check=True, capture_output=True)
    assert not list((cli.vault / ".memvault").glob("transaction.jsonl"))

    head = git(cli.vault, "rev-parse", "HEAD")
    again = json.loads(run_memvault("import", str(export), "--vault", str(cli.vault), "--json").stdout)
    assert (again["imported"], again["entries"], again["unchanged"]) == (0, 0, CONVERSATIONS)
    assert git(cli.vault, "rev-parse", "HEAD") == head


KILL_BEFORE_COMMIT = """
import os, signal, sys
from memvault.vault.git.repository import VaultGit
commit, count = VaultGit.commit, [0]
def dying_commit(self, paths, message):
    count[0] += 1
    if count[0] == int(os.environ["KILL_AT_COMMIT"]):  # this conversation's files are written: die now
        os.kill(os.getpid(), signal.SIGKILL)
    return commit(self, paths, message)
VaultGit.commit = dying_commit
from memvault.cli.app import app
app(sys.argv[1:])
"""


def test_a_conversation_written_but_not_committed_when_killed_is_undone_then_imported_whole(tmp_path):
    export = write_chatgpt_export(tmp_path / "conversations.json", 6, TURNS)
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    killed = subprocess.run([sys.executable, "-c", KILL_BEFORE_COMMIT, "import", str(export), "--vault",
                             str(cli.vault)], env={**os.environ, "KILL_AT_COMMIT": "3"}, capture_output=True)
    assert killed.returncode == -signal.SIGKILL
    assert len(import_commits(cli.vault)) == 2
    assert git(cli.vault, "status", "--porcelain")  # the third conversation's files, uncommitted
    report = json.loads(run_memvault("import", str(export), "--vault", str(cli.vault), "--json").stdout)
    assert (report["imported"], report["unchanged"]) == (4, 2)
    assert len(import_commits(cli.vault)) == 6 and git(cli.vault, "status", "--porcelain") == ""
    assert len(cli.ok("list", "--json").json()) == 6 * TURNS


FIXTURE = Path(__file__).parent / "fixtures" / "chatgpt" / "conversations.json"


def curating_llm() -> ScriptedLLM:
    """Extraction answers by message; reconciliation adds; the summary is one line."""
    return ScriptedLLM([
        # the summary prompt quotes the facts
        ("Previous summary:", "The user is flying to Lisbon in May and is vegetarian."),
        ("I'm vegetarian", '{"facts": ["The user is vegetarian."]}'),
        ("flying to Lisbon", '{"facts": ["The user is flying to Lisbon in May.", "The user is vegetarian."]}'),
        ("plays the cello", '{"facts": ["The user\'s sister Ana plays the cello."]}'),
    ], default='{"facts": []}')


def test_curate_adds_facts_in_the_conversations_own_commit_and_a_second_run_asks_nothing(tmp_path):
    settings = Settings()
    settings.vault.path = str(tmp_path / "vault")
    memvault = Memvault.open(settings, create=True)
    llm = curating_llm()
    report = import_source(memvault, [str(FIXTURE)], llm=llm)
    assert (report.imported, report.turns) == (2, 6)
    stored = [entry for _, entry in memvault.list(role="memory").entries]
    facts = {entry.text: entry for entry in stored}
    # the answer for the Lisbon conversation's first user turn also claims "vegetarian", which that turn
    # does not say: dropped (curate.grounding); the second turn says it, and it is stored from there, once
    assert len(stored) == 3 and set(facts) == {"The user is flying to Lisbon in May.", "The user is vegetarian.",
                          "The user's sister Ana plays the cello."}
    assert report.facts == 3
    turn = memvault.get(facts["The user is vegetarian."].source)[1]
    assert (turn.role, turn.text) == ("user", "I'm vegetarian. Here is a photo of the hotel.")
    assert facts["The user is vegetarian."].metadata["imported_from"] == "chatgpt"
    # turns, facts and the rolling summary of a conversation: one commit
    shown = git(memvault.vault.root, "show", "--name-only", "--format=%s", "HEAD~1").splitlines()
    assert shown[0] == "memvault import: 4 entries of 'Trip to Lisbon'"
    folders = sorted({layout.kind_of(PurePosixPath(path)) for path in shown[2:] if path})  # day folders or not
    assert folders == ["facts", "summaries", "turns/assistant", "turns/user"]
    summary = memvault.vault.summary(turn.conversation_id)
    assert summary.text == "The user is flying to Lisbon in May and is vegetarian."
    asked = len(llm.calls)
    again = import_source(memvault, [str(FIXTURE)], llm=llm)
    assert (again.imported, again.entries, len(llm.calls)) == (0, 0, asked)


def test_curate_without_an_llm_is_refused(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    result = cli("import", str(FIXTURE), "--curate")
    assert result.exit_code == 2 and "--curate needs an LLM" in result.stderr


def test_the_temporary_file_of_a_write_a_kill_cut_short_is_removed_once_a_minute_old(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    folder = cli.vault / "entries/old/turns/user"
    folder.mkdir(parents=True)
    stale, fresh = folder / ".20250101T000000000Z__x.md.abcd.tmp", folder / ".20250101T000000000Z__y.md.efgh.tmp"
    stale.write_text("half")
    fresh.write_text("half")
    os.utime(stale, (time.time() - 120, time.time() - 120))
    cli.ok("import", str(FIXTURE))
    assert not stale.exists() and fresh.exists()  # a younger one may be a write under way
