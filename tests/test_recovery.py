"""Crashes and recovery (issue 11, items 2, 3, 4 and 15): a `kill -9` at the worst moment, then the
next ordinary command, which must find and mend what the crash left. Real processes killed with
SIGKILL, real git, the real MiniLM model and index, a real server over HTTP (fake LLM on loopback)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.vault.format.entry import Entry
from memvault.vault.format.layout import relative_path
from memvault.vault.format.markdown import render
from tests.support.cli import Cli
from tests.support.crash import FactUpstream, ServeProcess, git, indexed_ids
from tests.support.upstream import serving


def open_core(vault: Path, create: bool = True, **flags) -> Memvault:
    return Memvault.open(settings_module.load(None, {"vault.path": str(vault), **flags}), create=create)


def fill(vault: Path, count: int, prefix: str = "memory") -> list[Entry]:
    """`count` memories in one commit (the library, no model: the index is built later)."""
    core = open_core(vault)
    entries = [Entry(f"{prefix} {i} about the word w{i}x", conversation_id=f"c{i % 7}") for i in range(count)]
    core.add_entries(entries, f"{count} memories")
    core.close()
    (vault / ".memvault" / "pending.jsonl").unlink(missing_ok=True)  # as if never journalled: a build does it
    return entries


def run_python(code: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout)


KILL_AFTER_FIRST_BATCHES = """
    import os, signal, sys
    from memvault import settings
    from memvault.core import Memvault

    core = Memvault.open(settings.load(None, {{"vault.path": {vault!r}, "embedder.batch_size": "16"}}))

    def progress(done, total):  # called once a batch is committed to the index: die there, as kill -9 would
        if done >= 48:
            os.kill(os.getpid(), signal.SIGKILL)

    core.on_progress = progress
    {call}
"""


# -- item 2: an interrupted index build is known on disk and finished by the next command -----------------
@pytest.mark.parametrize("call", ["core.reindex(full=True)", "core.index()"], ids=["reindex-full", "initial-build"])
def test_a_build_killed_midway_is_finished_by_the_next_search(tmp_path, call):
    vault = tmp_path / "vault"
    entries = fill(vault, 150)
    if call.startswith("core.reindex"):
        open_core(vault).reindex()  # a complete index first: the full rebuild then empties and refills it
        assert len(indexed_ids(vault)) == 150
    killed = run_python(KILL_AFTER_FIRST_BATCHES.format(vault=str(vault), call=call))
    assert killed.returncode == -9, killed.stderr
    assert 0 < len(indexed_ids(vault)) < 150  # the crash left a partial index

    found = Cli(vault)("search", "--json", "memory 149 about the word w149x")  # the next ordinary command
    assert found.exit_code == 0, found.stderr
    assert entries[149].id in {hit["id"] for hit in found.json()}
    assert indexed_ids(vault) == {e.id for e in entries}
    doctor = Cli(vault)("doctor", "--json", "--no-llm-check").json()
    assert {c["name"]: c["status"] for c in doctor["checks"]}["index sync"] == "ok"


def test_doctor_reports_an_interrupted_build(tmp_path):
    vault = tmp_path / "vault"
    fill(vault, 60)
    killed = run_python(KILL_AFTER_FIRST_BATCHES.format(vault=str(vault), call="core.index()"))
    assert killed.returncode == -9
    checks = {c["name"]: c for c in Cli(vault)("doctor", "--json", "--no-llm-check").json()["checks"]}
    assert checks["index sync"]["status"] == "warn" and "interrupted" in checks["index sync"]["detail"]


# -- a transaction killed between its writes and its commit is undone by the next write ----------------------
def test_a_write_killed_before_its_commit_is_undone_by_the_next_write(tmp_path):
    vault = tmp_path / "vault"
    core = open_core(vault)
    kept = core.add_verbatim("committed and acknowledged")
    core.close()
    killed = run_python(f"""
        import os, signal
        from memvault import settings
        from memvault.core import Memvault
        from memvault.vault.format.entry import Entry

        core = Memvault.open(settings.load(None, {{"vault.path": {str(vault)!r}}}))
        live = core.get({kept.id!r})[1]
        with core.vault.transaction("gc", "killed midway") as tx:
            tx.soft_delete(live)  # tombstone written, live file removed
            tx.write(Entry("never acknowledged"), event="ADD")
            os.kill(os.getpid(), signal.SIGKILL)  # before the commit
    """)
    assert killed.returncode == -9
    assert git(vault, "status", "--porcelain", "--untracked-files=all")  # the crash left half a change

    assert Cli(vault)("add", "--no-llm", "the next write").exit_code == 0
    assert not git(vault, "status", "--porcelain", "--untracked-files=all")
    texts = [e.text for _, e in open_core(vault).list().entries]
    assert sorted(texts) == ["committed and acknowledged", "the next write"]
    found = Cli(vault)("search", "--json", "committed and acknowledged").json()
    assert kept.id in {hit["id"] for hit in found}
    checks = Cli(vault)("doctor", "--json", "--no-llm-check").json()["checks"]
    assert [c["name"] for c in checks if c["status"] not in ("ok", "skip")] == []


# -- item 3: after kill -9 of serve: no temp file as an entry, every turn committed, curation resumed -------
def turn_file(vault: Path, text: str, conversation: str = "crash") -> tuple[Entry, Path]:
    entry = Entry(text, role="user", conversation_id=conversation)
    path = vault / relative_path(entry)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(entry), encoding="utf-8")
    return entry, path


def test_a_restart_commits_staged_and_untracked_turns_and_never_temp_files(tmp_path):
    vault = tmp_path / "vault"
    open_core(vault).close()
    untracked, _ = turn_file(vault, "written, not yet added")
    staged, staged_path = turn_file(vault, "added, not yet committed")
    git(vault, "add", str(staged_path))  # the stop came between `git add` and `git commit`
    temp_entry, _ = turn_file(vault, "an atomic write cut short")
    old_temp = vault / relative_path(temp_entry)
    old_temp = old_temp.rename(old_temp.with_name(f".{old_temp.name}.k3j2h1.tmp"))
    an_hour_ago = time.time() - 3600
    os.utime(old_temp, (an_hour_ago, an_hour_ago))
    young_temp = old_temp.with_name(f".{relative_path(untracked).name}.x9y8z7.tmp")
    young_temp.write_text(render(untracked), encoding="utf-8")

    ServeProcess(vault).stop()  # it answered /health: start-up did the recovery
    tracked = git(vault, "ls-files").split()
    assert str(relative_path(untracked)) in tracked and str(relative_path(staged)) in tracked
    assert not [path for path in tracked if path.endswith(".tmp")]
    assert not git(vault, "diff", "--cached", "--name-only")  # nothing left staged
    assert not old_temp.exists()  # a crash's leftover, removed
    assert young_temp.exists() and str(young_temp.relative_to(vault)) not in tracked  # maybe a write under way
    checks = {c["name"]: c for c in Cli(vault)("doctor", "--json", "--no-llm-check").json()["checks"]}
    assert checks["uncommitted files"]["status"] == "ok"  # a temp file is never an uncommitted entry
    core = open_core(vault)
    assert {e.text for _, e in core.list(role="user").entries} == {"written, not yet added",
                                                                  "added, not yet committed"}
    core.close()


@pytest.mark.slow
def test_curation_interrupted_by_kill_9_resumes_after_the_restart(tmp_path):
    vault = tmp_path / "vault"
    upstream = FactUpstream(delay=60.0)  # curation hangs in the LLM call: the kill finds it in flight
    with serving(upstream.app()) as root:
        server = ServeProcess(vault, root + "/v1")
        try:
            said = ["Alice keeps bees on the roof", "Bob sails on Sundays"]
            for text in said:
                assert server.chat(text).status_code == 200
            deadline = time.monotonic() + 60
            while upstream.extractions < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert upstream.extractions >= 1
        finally:
            server.kill()
        assert "The user said" not in "".join(git(vault, "log", "--format=%B"))  # nothing curated yet

        upstream.delay = 0.0
        server = ServeProcess(vault, root + "/v1")
        try:
            deadline = time.monotonic() + 90
            facts: set[str] = set()
            while time.monotonic() < deadline and len(facts) < 2:
                found = Cli(vault)("list", "--json", "--role", "memory")
                facts = {m["text"] for m in found.json()} if found.exit_code == 0 else set()
                time.sleep(0.5)
        finally:
            log = server.stop()
    assert facts == {f"The user said: {text}." for text in said}, log
    from memvault.server.turns import CurationQueue

    assert CurationQueue(vault / ".memvault").pending() == []
    assert not git(vault, "status", "--porcelain")


def test_a_curation_killed_before_its_commit_is_done_again_not_struck_off_for_its_half_written_fact(tmp_path):
    """A second Ctrl-C (or kill -9) cut a queued turn's curation after its fact file was written, before the
    commit. The next start must undo that file before it asks whether the turn's facts are stored: the
    index, caught up from the files, would say yes, the turn would be struck off, and the next write's
    recovery would then remove the only trace of its fact (a CI run of the torture test: curated 28/29)."""
    vault = tmp_path / "vault"
    said = "Alice keeps bees on the roof"
    core = open_core(vault)
    core.ensure_core()  # as a served vault has them: the start writes nothing before it resumes curation
    turn = Entry(said, role="user", conversation_id="bees")
    core.commit_turns(core.write_turns([turn]), "a turn")
    core.close()
    from memvault.curate.queue import CurationQueue

    CurationQueue(vault / ".memvault").add(turn.id, "bees", {}, [{"role": "user", "content": said}])
    killed = run_python(f"""
        import os, signal
        from memvault import settings
        from memvault.core import Memvault
        from memvault.vault.format.entry import Entry

        core = Memvault.open(settings.load(None, {{"vault.path": {str(vault)!r}}}))
        with core.vault.transaction("add", "a curation killed midway") as tx:
            tx.write(Entry("The user keeps half a fact.", role="memory", source={turn.id!r}), event="ADD")
            os.kill(os.getpid(), signal.SIGKILL)  # before the commit
    """)
    assert killed.returncode == -9

    with serving(FactUpstream().app()) as root:
        server = ServeProcess(vault, root + "/v1")
        try:
            deadline = time.monotonic() + 60
            while CurationQueue(vault / ".memvault").pending() and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            log = server.stop()
    core = open_core(vault)
    assert {e.text for _, e in core.list(role="memory").entries} == {f"The user said: {said}."}, log
    core.close()
    assert not git(vault, "status", "--porcelain")


# -- item 4: large transactions, and a failed commit leaves git's index as it was --------------------------
@pytest.mark.slow
def test_thousands_of_paths_in_one_transaction_commit_and_gc_evicts_them(tmp_path):
    vault = tmp_path / "vault"
    fill(vault, 3000)  # one commit with 3,000 paths and 3,000 event trailers
    assert len(git(vault, "ls-files", "entries").split()) == 3000
    core = open_core(vault)
    plan = core.gc(max_entries=10, git_gc=False)  # 2,990 renames into deleted/: 5,980 paths, 2,990 trailers
    core.close()
    assert len(plan.evict) == 3000 - 7 * 10  # 10 kept in each of the 7 conversations
    assert git(vault, "log", "-1", "--format=%s").startswith("memvault gc: evicted")
    assert git(vault, "log", "-1", "--format=%B").count("Memvault-Event: EVICT") == len(plan.evict)
    assert not git(vault, "status", "--porcelain")


def test_a_failed_commit_restores_the_files_and_git_index(tmp_path):
    vault = tmp_path / "vault"
    fill(vault, 40)
    core = open_core(vault)
    git(vault, "config", "user.name", "")  # a commit git refuses after the paths are staged (empty ident)
    git(vault, "config", "user.email", "someone@example.org")
    result = Cli(vault)("gc", "--max-entries", "2")
    assert result.exit_code == 1 and "git commit failed" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not git(vault, "status", "--porcelain", "--untracked-files=all")  # no staged renames, no files moved
    assert len(core.list().entries) == 40
    core.close()


# -- item 15: a vault inside someone else's repository ------------------------------------------------------
@pytest.fixture
def project(tmp_path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q")
    (project / "README").write_text("someone else's project\n")
    git(project, "add", "README")
    git(project, "-c", "user.name=p", "-c", "user.email=p@p", "commit", "-qm", "their work")
    return project


def test_init_inside_another_repository_makes_its_own(project):
    vault = project / "notes" / "vault"
    result = Cli(vault)("init", str(vault))
    assert result.exit_code == 0
    assert f"owngitrepositoryat{vault}" in "".join(result.stderr.split())  # (the terminal wraps long lines)
    assert (vault / ".git").is_dir()
    assert Cli(vault)("add", "--no-llm", "a private memory").exit_code == 0
    assert git(project, "log", "--format=%s").splitlines() == ["their work"]  # never into their history
    assert "a private memory" in git(vault, "log", "-1", "--format=%s")
    checks = {c["name"]: c for c in Cli(vault)("doctor", "--json", "--no-llm-check").json()["checks"]}
    assert f"own git repository at {vault}" in checks["git state"]["detail"]


def test_init_with_use_enclosing_repo_commits_there_and_says_so(project):
    vault = project / "memory"
    result = Cli(vault)("init", str(vault), "--use-enclosing-repo", "--json")
    assert result.exit_code == 0
    assert result.json() == {"vault": str(vault), "repository": str(project), "enclosing_repository": True}
    assert not (vault / ".git").exists()
    assert Cli(vault)("add", "--no-llm", "shared with the notes").exit_code == 0
    assert "shared with the notes" in git(project, "log", "-1", "--format=%s")
    # An existing vault inside a repository keeps it, whether opened or initialised again.
    again = Cli(vault)("init", str(vault), "--json").json()
    assert again["repository"] == str(project) and not (vault / ".git").exists()
    checks = {c["name"]: c for c in Cli(vault)("doctor", "--json", "--no-llm-check").json()["checks"]}
    assert f"enclosing git repository at {project}" in checks["git state"]["detail"]


def test_the_temp_file_walk_makes_a_path_only_for_temporary_names(tmp_path, monkeypatch):
    from memvault.vault.write import store

    vault = tmp_path / "vault"
    fill(vault, 12)
    stale = next((vault / "entries").rglob("*.md")).with_name(".cut-short.md.4242-abc.tmp")
    stale.write_text("half a write")
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    core = open_core(vault, create=False)
    made = []
    monkeypatch.setattr(store, "Path", lambda *parts: made.append(parts) or Path(*parts))
    assert core.vault.temp_files(older_than=60) == [stale]
    assert len(made) == 1  # one per temporary file, not one per file of the vault
    core.close()
