"""`memvault doctor`: each problem made on purpose in a temporary vault, detected, and repaired by
`--fix` where the fix is safe (real MiniLM model, real index, real git)."""

import subprocess
import uuid

import pytest

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.vault.format.layout import relative_path
from memvault.vault.format.markdown import render
from tests.support.cli import Cli

FACTS = ["Alice drinks green tea every morning", "Bob repairs old bicycles", "Chen is learning the violin"]


@pytest.fixture
def vault(tmp_path):
    return tmp_path / "vault"


@pytest.fixture
def memvault(vault):
    mv = Memvault.open(settings_module.load(None, {"vault.path": str(vault)}), create=True)
    for text in FACTS:
        mv.add_verbatim(text, "c1")
    yield mv
    mv.close()


@pytest.fixture
def indexed(memvault):
    memvault.reindex()
    memvault.close()
    return memvault


def doctor(vault, *args, env=None):
    """(exit code, {check name: check}, fixed lines) of `memvault doctor --json`."""
    result = Cli(vault)("doctor", "--json", *args, env=env)
    data = result.json()
    assert data["ok"] == (result.exit_code == 0)
    return result.exit_code, {c["name"]: c for c in data["checks"]}, data["fixed"]


def status(checks):
    return {name: check["status"] for name, check in checks.items()}


def git(vault, *args):
    return subprocess.run(["git", *args], cwd=vault, capture_output=True, text=True, check=True).stdout


def path_of(memvault, text):
    return next(memvault.vault.root / rel for rel, e in memvault.list().entries if e.text == text)


def test_healthy_vault_is_all_ok_and_llm_not_configured_is_said(indexed, vault):
    code, checks, fixed = doctor(vault)
    assert code == 0 and fixed == []
    assert {s for n, s in status(checks).items() if n not in ("reranker", "llm")} == {"ok"}
    assert checks["llm"]["status"] == "skip" and "not configured" in checks["llm"]["detail"]
    assert checks["reranker"]["status"] == "skip" and "not configured" in checks["reranker"]["detail"]
    assert checks["index sync"]["detail"].startswith("3 file(s) indexed")
    assert checks["embedder"]["detail"].startswith("minilm")


def test_no_llm_check_skips_the_call(indexed, vault):
    env = {"MEMVAULT_LLM_MODEL": "openai/never-called", "MEMVAULT_LLM_API_BASE": "http://127.0.0.1:9/v1"}
    code, checks, _ = doctor(vault, "--no-llm-check", env=env)
    assert code == 0 and checks["llm"]["status"] == "skip" and "--no-llm-check" in checks["llm"]["detail"]


@pytest.mark.slow  # imports litellm (seconds)
def test_unreachable_llm_fails_with_one_clear_line(indexed, vault):
    env = {"MEMVAULT_LLM_MODEL": "openai/tiny", "MEMVAULT_LLM_API_BASE": "http://127.0.0.1:9/v1",
           "MEMVAULT_LLM_API_KEY": "x", "MEMVAULT_LLM_MAX_RETRIES": "0"}
    code, checks, _ = doctor(vault, env=env)
    assert code == 1 and checks["llm"]["status"] == "fail"
    assert "openai/tiny" in checks["llm"]["detail"] and "\n" not in checks["llm"]["detail"]


def test_missing_index_is_reported_without_creating_it_and_built_by_fix(memvault, vault):
    index_file = vault / ".memvault" / "index.sqlite"
    code, checks, _ = doctor(vault)
    assert code == 0 and checks["index"]["status"] == "warn" and not index_file.exists()
    code, checks, fixed = doctor(vault, "--fix")
    assert code == 0 and index_file.exists() and "3 added" in fixed[0]
    assert (checks["index"]["status"], checks["index sync"]["status"]) == ("ok", "ok")


def test_hand_edit_shows_stale_index_and_uncommitted_file_and_fix_commits_and_reindexes(indexed, vault):
    path = path_of(indexed, FACTS[0])
    path.write_text(path.read_text().replace("green tea", "black coffee"))
    rel = str(path.relative_to(vault))
    code, checks, _ = doctor(vault)
    assert code == 0
    assert checks["index sync"]["status"] == "warn" and "1 changed since indexed" in checks["index sync"]["detail"]
    assert checks["uncommitted files"]["status"] == "warn" and checks["uncommitted files"]["paths"] == [rel]
    code, checks, fixed = doctor(vault, "--fix")
    assert code == 0 and len(fixed) == 2
    assert status(checks)["uncommitted files"] == status(checks)["index sync"] == "ok"
    assert git(vault, "status", "--porcelain") == ""
    assert git(vault, "log", "-1", "--format=%s").startswith("memvault doctor: commit 1 entry file")
    hits = Cli(vault)("search", "black coffee", "--json").json()
    assert hits[0]["text"] == "Alice drinks black coffee every morning"


def test_uncommitted_file_with_a_non_ascii_path_is_named_as_it_is_and_committed_by_fix(indexed, vault):
    folder = vault / "entries" / "café-журнал" / "facts"  # git quotes such paths unless asked not to
    folder.mkdir(parents=True)
    (folder / "note.md").write_text("Zoë bakes bread on Sundays\n")
    code, checks, _ = doctor(vault)
    assert checks["uncommitted files"]["paths"] == ["entries/café-журнал/facts/note.md"]
    code, checks, _ = doctor(vault, "--fix")
    assert status(checks)["uncommitted files"] == "ok" and git(vault, "status", "--porcelain") == ""


def test_broken_file_fails_and_fix_leaves_it_alone(indexed, vault):
    broken = vault / "entries" / "c1" / "facts" / f"20240101T000000000Z__{uuid.uuid4()}.md"
    content = "---\nid: [unclosed\n---\nsomething\n"
    broken.write_text(content)
    code, checks, _ = doctor(vault)
    assert code == 1 and checks["entry files"]["status"] == "fail"
    assert checks["entry files"]["paths"] == [str(broken.relative_to(vault))]
    assert "left for you" in checks["uncommitted files"]["detail"] and checks["uncommitted files"]["repair"] is None
    code, checks, fixed = doctor(vault, "--fix")
    assert code == 1 and checks["entry files"]["status"] == "fail" and fixed == []
    assert broken.read_text() == content and "?? " in git(vault, "status", "--porcelain")


def test_orphan_index_row_after_a_hand_deletion_is_dropped_but_the_deletion_is_not_committed(indexed, vault):
    path = path_of(indexed, FACTS[1])
    path.unlink()
    code, checks, _ = doctor(vault)
    assert code == 0 and "1 row(s) whose file is gone" in checks["index sync"]["detail"]
    assert "deleted by hand" in checks["uncommitted files"]["detail"]
    code, checks, fixed = doctor(vault, "--fix")
    assert code == 0 and checks["index sync"]["status"] == "ok" and "1 removed" in fixed[0]
    assert checks["uncommitted files"]["status"] == "warn"  # the person decides: restore or commit
    assert git(vault, "status", "--porcelain").startswith(" D ")


def test_interrupted_soft_delete_is_committed_because_the_memory_lives_on_as_a_tombstone(indexed, vault):
    _, entry = next((rel, e) for rel, e in indexed.list().entries if e.text == FACTS[2])
    live = vault / relative_path(entry)
    tombstone = entry.replace(deleted_at=entry.created_at, replaced_by=None)
    (vault / relative_path(tombstone)).parent.mkdir(parents=True)
    (vault / relative_path(tombstone)).write_text(render(tombstone))
    live.unlink()  # what a crash between writing and committing a delete leaves
    code, checks, _ = doctor(vault)
    assert sorted(checks["uncommitted files"]["paths"]) == sorted(
        [str(relative_path(entry)), str(relative_path(tombstone))])
    code, checks, _ = doctor(vault, "--fix")
    assert code == 0 and checks["uncommitted files"]["status"] == "ok" and git(vault, "status", "--porcelain") == ""


def test_dangling_replaced_by_is_a_warning(indexed, vault):
    _, entry = indexed.list().entries[0]
    with indexed.vault.transaction("delete", "test: replace by nothing") as tx:
        tx.soft_delete(entry, replaced_by=str(uuid.uuid4()))
    code, checks, _ = doctor(vault)
    assert code == 0 and checks["tombstones"]["status"] == "warn" and "replaced_by" in checks["tombstones"]["detail"]


def test_detached_head_fails_and_is_left_to_the_person(indexed, vault):
    git(vault, "checkout", "-q", "--detach")
    code, checks, _ = doctor(vault, "--fix")
    assert code == 1 and checks["git state"]["status"] == "fail" and "detached HEAD" in checks["git state"]["detail"]
    assert git(vault, "rev-parse", "--abbrev-ref", "HEAD").strip() == "HEAD"


def test_index_of_another_model_is_detected_and_rebuilt(indexed, vault):
    import apsw

    conn = apsw.Connection(str(vault / ".memvault" / "index.sqlite"))
    conn.execute("UPDATE meta SET value = 'other-model:384' WHERE key = 'embedder'")
    conn.close()
    code, checks, _ = doctor(vault)
    assert code == 0 and checks["index model"]["status"] == "warn"
    assert "other-model:384" in checks["index model"]["detail"]
    code, checks, fixed = doctor(vault, "--fix")
    assert fixed[0].startswith("rebuilt the index") and "3 embedded" in fixed[0]
    assert checks["index model"]["status"] == "ok"


def test_corrupt_index_fails_is_left_untouched_and_is_rebuilt_by_fix(indexed, vault):
    index_file = vault / ".memvault" / "index.sqlite"
    for suffix in ("-wal", "-shm"):
        (vault / ".memvault" / f"index.sqlite{suffix}").unlink(missing_ok=True)
    index_file.write_bytes(b"not a database at all" * 100)
    code, checks, _ = doctor(vault)
    assert code == 1 and checks["index"]["status"] == "fail"
    assert index_file.read_bytes().startswith(b"not a database")
    code, checks, _ = doctor(vault, "--fix")
    assert code == 0 and checks["index"]["status"] == checks["index sync"]["status"] == "ok"
    assert (vault / ".memvault" / "index.sqlite.broken").exists()


def test_missing_vault_fails_with_the_way_out(tmp_path):
    code, checks, _ = doctor(tmp_path / "nowhere", "--no-llm-check")
    assert code == 1 and checks["vault"]["status"] == "fail" and "memvault init" in checks["vault"]["fix"]


def test_table_output_for_people(indexed, vault):
    result = Cli(vault)("doctor", "--no-llm-check")
    assert result.exit_code == 0
    assert all(word in result.stdout for word in ("check", "status", "index sync", "embedder"))


def test_writes_waiting_in_the_journal_are_not_reported_as_an_index_out_of_step(indexed, vault):
    """`add` and `rm` journal their changes for the next search (no model load): doctor right after
    them is ok, and says writes are waiting; a hand edit is still reported."""
    cli = Cli(vault)
    cli.ok("add", "Dana keeps bees on the roof", "-c", "c1", "--no-llm")
    [bob] = [e["id"] for e in cli.ok("list", "--json").json() if e["text"] == "Bob repairs old bicycles"]
    cli.ok("rm", bob)
    code, checks, _ = doctor(vault, "--no-llm-check")
    assert code == 0 and checks["index sync"]["status"] == "ok", checks["index sync"]
    assert "2 recent write(s) wait in the journal" in checks["index sync"]["detail"]
    path = next(p for p in (vault / "entries" / "c1" / "facts").rglob("*.md") if "Alice" in p.read_text())
    path.write_text(path.read_text().replace("Alice drinks green tea", "Alice drinks black tea"))
    _, checks, _ = doctor(vault, "--no-llm-check")
    assert checks["index sync"]["status"] == "warn" and "changed since indexed" in checks["index sync"]["detail"]


def test_markdown_outside_the_folders_memvault_reads_is_named_by_reindex_and_doctor(indexed, vault):
    """A hand file in entries/notes/ used to be ignored with "0 added" and no word of why."""
    stray = ["entries/notes/x.md", "entries/y.md", "entries/c1/turns/odd.md", "entries/c1/misc/deep/z.md"]
    read = ["entries/c1/facts/by-hand.md", "entries/c1/turns/user/said.md"]
    for rel in stray + read:
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(f"Written by hand at {rel}\n")
    reindexed = Cli(vault)("reindex")
    assert reindexed.exit_code == 0
    named = sorted(line.split("ignored ")[1].split(":")[0] for line in reindexed.stderr.splitlines()
                   if "ignored " in line)
    assert named == sorted(stray)
    assert "2 added" in reindexed.stderr  # the two in folders memvault reads
    _, checks, _ = doctor(vault)
    assert checks["stray files"]["status"] == "warn" and sorted(checks["stray files"]["paths"]) == sorted(stray)
