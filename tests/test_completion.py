"""Shell completion in a real bash: completions/memvault.bash sourced, COMP_WORDS set, the completion
function called, COMPREPLY read back. Ids and conversation names come from the vault's file names."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memvault import settings as settings_module
from memvault.cli.completion import MAX_CANDIDATES, memory_files, narrow
from memvault.core import Memvault

ROOT = Path(__file__).resolve().parent.parent
BASH_SCRIPT = ROOT / "completions" / "memvault.bash"


def make_vault(path: Path, facts: dict[str, str]) -> tuple[Memvault, dict[str, str]]:
    """A vault with one fact per (text: conversation); returns it and text -> id."""
    memvault = Memvault.open(settings_module.load(None, {"vault.path": str(path)}), create=True)
    return memvault, {text: memvault.add_verbatim(text, conversation).id for text, conversation in facts.items()}


@pytest.fixture
def vault(tmp_path):
    memvault, ids = make_vault(tmp_path / "vault", {"Alice drinks tea": "work", "Bob rides a bike": "home",
                                                    "Chen plays the violin": "home"})
    memvault.delete([ids["Chen plays the violin"]])
    return memvault.vault.root, ids


def bash_complete(*words: str, env: dict | None = None) -> list[str]:
    """COMPREPLY for the command line `words` (the last word is the one being completed)."""
    script = "\n".join([
        f"source {shlex.quote(str(BASH_SCRIPT))}",
        f"COMP_WORDS=({' '.join(shlex.quote(w) for w in words)})",
        f"COMP_CWORD={len(words) - 1}",
        "_memvault_completion memvault",
        'printf "%s\\n" "${COMPREPLY[@]}"',
    ])
    full_env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **(env or {})}
    done = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True, text=True, env=full_env,
                          timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return [line for line in done.stdout.splitlines() if line]


def test_memory_id_prefix_completes_to_the_full_id(vault):
    root, ids = vault
    alice = ids["Alice drinks tea"]
    assert bash_complete("memvault", "show", alice[:3], env={"MEMVAULT_VAULT": str(root)}) == sorted(
        i for i in ids.values() if i.startswith(alice[:3]))
    assert alice in bash_complete("memvault", "edit", alice[:3], env={"MEMVAULT_VAULT": str(root)})


def test_show_and_history_offer_deleted_memories_edit_and_rm_do_not(vault):
    root, ids = vault
    env = {"MEMVAULT_VAULT": str(root)}
    everything, live = sorted(ids.values()), sorted(i for t, i in ids.items() if t != "Chen plays the violin")
    assert bash_complete("memvault", "show", "", env=env) == everything
    assert bash_complete("memvault", "history", "", env=env) == everything
    assert bash_complete("memvault", "edit", "", env=env) == live
    assert bash_complete("memvault", "rm", live[0], "", env=env) == live  # every position of a list argument


def test_rules_and_session_summaries_complete_with_their_kind(tmp_path):
    """Every kind of entry folder completes (a rule's id once gave a KeyError and a traceback on the TAB)."""
    memvault, ids = make_vault(tmp_path / "vault", {"Dana sings": "work"})
    rule = memvault.add_rule("Always answer in French", "work").rule.id
    root = memvault.vault.root
    session = root / "entries" / "work" / "sessions" / "20240102T030405000Z__0b3c2a1e-1111-4222-8333-444455556666.md"
    session.parent.mkdir(parents=True)
    session.write_text("---\nid: 0b3c2a1e-1111-4222-8333-444455556666\n---\nA session\n")
    env = {"MEMVAULT_VAULT": str(root)}
    assert bash_complete("memvault", "show", "", env=env) == sorted([ids["Dana sings"], rule, session.stem[-36:]])
    found = memory_files(str(root), include_deleted=True)
    assert (found[rule][1], found[session.stem[-36:]][1]) == ("rule", "session summary")


def test_conversation_names_complete_for_every_command_with_the_option(vault):
    root, _ = vault
    env = {"MEMVAULT_VAULT": str(root)}
    assert bash_complete("memvault", "list", "-c", "w", env=env) == ["work"]
    assert bash_complete("memvault", "search", "--conversation", "", env=env) == ["home", "work"]
    assert bash_complete("memvault", "add", "-c", "", env=env) == ["home", "work"]


def test_vault_flag_wins_over_the_environment_and_the_default_vault_is_used_without_either(vault, tmp_path):
    root, ids = vault
    _, other_ids = make_vault(tmp_path / "other", {"Dana sings": "choir"})
    assert bash_complete("memvault", "show", "--vault", str(tmp_path / "other"), "",
                         env={"MEMVAULT_VAULT": str(root)}) == list(other_ids.values())
    default = settings_module.default_vault_path()  # under this test's own XDG_DATA_HOME
    _, default_ids = make_vault(default, {"Eve paints": "art"})
    assert bash_complete("memvault", "show", "") == list(default_ids.values())
    assert bash_complete("memvault", "list", "-c", "") == ["art"]


def test_commands_and_options_complete_from_the_live_command_tree():
    assert bash_complete("memvault", "do") == ["doctor"]
    assert "--no-llm-check" in bash_complete("memvault", "doctor", "--")
    assert sorted(bash_complete("memvault", "config", "s")) == ["set", "show"]


def test_a_broken_config_gives_no_candidates_and_no_traceback(vault, tmp_path):
    root, _ = vault
    bad = tmp_path / "bad.toml"
    bad.write_text("this is [not toml")
    assert bash_complete("memvault", "show", "", env={"MEMVAULT_VAULT": str(root), "MEMVAULT_CONFIG": str(bad)}) == []


PROBE = """
import json, sys
from memvault.cli.app import app
try:
    app(prog_name="memvault")
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""
HEAVY = ["git", "yaml", "frontmatter", "apsw", "sqlite_vec", "onnxruntime", "numpy", "tokenizers", "litellm",
         "rich", "typer.rich_utils", "memvault.index.store", "memvault.core"]


def test_a_completion_request_reads_file_names_only(vault):
    root, ids = vault
    env = {**os.environ, "MEMVAULT_VAULT": str(root), "_MEMVAULT_COMPLETE": "complete_bash",
           "COMP_WORDS": "memvault show ", "COMP_CWORD": "2"}
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60)
    assert sorted(done.stdout.split()) == sorted(ids.values())
    loaded = set(json.loads(done.stderr.strip().splitlines()[-1]))
    assert [m for m in HEAVY if m in loaded] == []


def test_many_matches_become_distinct_prefixes_that_keep_every_id_reachable():
    ids = [f"{i:032x}" for i in range(0, 16**4, 7)]  # 9363 hex strings
    shown = narrow(ids, "")
    assert 1 < len(shown) <= MAX_CANDIDATES
    assert all(any(i.startswith(p) for p in shown) for i in ids)
    assert narrow(ids, ids[5]) == [ids[5]]
    assert narrow(ids, "zz") == []
