"""Team vaults (`vault.shared`): real vaults with their own git repositories and indexes, read beside
the personal one and written only when asked (`--to`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from memvault import settings as settings_module
from memvault.converse.prompt import gather, memory_line
from memvault.core import Memvault
from memvault.errors import ConfigError, UsageError
from tests.support.cli import Cli, run_memvault

TEAM_FACT = "Deploys to production happen before 3pm on weekdays"
MY_FACT = "I deploy my own blog on Sunday evenings"


def log(vault: Path) -> list[str]:
    return subprocess.run(["git", "-C", str(vault), "log", "--format=%s"], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def team_env(*items: str) -> dict[str, str]:
    return {"MEMVAULT_VAULT_SHARED": json.dumps(list(items))}


@pytest.fixture
def two(tmp_path):
    """A personal vault and a team vault, each with one memory; the personal one lists the team one."""
    team, mine = Cli(tmp_path / "team-vault"), Cli(tmp_path / "me")
    team.ok("init")
    mine.ok("init")
    team_id = team.ok("add", TEAM_FACT, "--json").json()["results"][0]["id"]
    my_id = mine.ok("add", MY_FACT, "--json").json()["results"][0]["id"]
    env = team_env(f"team={team.vault}")
    return mine, team, env, my_id, team_id


def test_search_reads_both_vaults_and_marks_where_each_hit_lives(two):
    mine, team, env, my_id, team_id = two
    hits = mine.ok("search", "when do deploys happen", "--json", "--threshold", "0", env=env).json()
    where = {hit["id"]: hit["vault"] for hit in hits}
    assert where == {my_id: "personal", team_id: "team"}
    assert [hit["rank"] for hit in hits] == [1, 2]
    assert hits[0]["total"] >= hits[1]["total"]  # ranked together by score
    table = mine.ok("search", "when do deploys happen", "--threshold", "0", env=env).stdout
    assert table.splitlines()[0].split("\t")[:5] == ["#", "id", "text", "role", "vault"]
    assert "\tteam\t" in table and "\tpersonal\t" in table
    # without vault.shared nothing changes but the field
    alone = mine.ok("search", "when do deploys happen", "--json", "--threshold", "0").json()
    assert [(hit["id"], hit["vault"]) for hit in alone] == [(my_id, "personal")]
    assert "vault" not in mine.ok("search", "deploys", "--threshold", "0").stdout.splitlines()[0].split("\t")
    # time travel: a commit of the personal vault is a moment, at which the team vault is read too
    head = subprocess.run(["git", "-C", str(mine.vault), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    past = mine.ok("search", "when do deploys happen", "--json", "--threshold", "0", "--as-of", head.strip(), env=env)
    assert {hit["vault"] for hit in past.json()} == {"team", "personal"}
    # a team memory is shown too (read only)
    assert mine.ok("show", team_id[:8], "--json", env=env).json()["vault"] == "team"


def test_add_without_to_never_touches_the_team_vault_and_add_to_commits_there_only(two):
    mine, team, env, _, _ = two
    team_log, my_log = log(team.vault), log(mine.vault)
    mine.ok("add", "I keep my notes in a paper notebook", env=env)
    assert log(team.vault) == team_log
    assert len(log(mine.vault)) == len(my_log) + 1
    added = mine.ok("add", "--to", "shared", "Code review needs two approvals", "--json", env=env).json()
    new_id = added["results"][0]["id"]
    assert log(mine.vault)[1:] == my_log and len(log(mine.vault)) == len(my_log) + 1  # nothing more here
    assert log(team.vault)[1:] == team_log and "Code review needs two approvals" in log(team.vault)[0]
    assert team.ok("show", new_id, "--json").json()["text"] == "Code review needs two approvals"
    hits = mine.ok("search", "code review approvals", "--json", "--threshold", "0", env=env).json()
    assert (new_id, "team") in [(hit["id"], hit["vault"]) for hit in hits]  # indexed in the team vault's index
    assert (team.vault / ".memvault" / "index.sqlite").exists()


def test_rm_and_edit_of_a_team_memory_need_to(two):
    mine, team, env, my_id, team_id = two
    team_log = log(team.vault)
    for args in (("rm", team_id), ("edit", team_id, "-m", "Deploys happen any time")):
        refused = mine(*args, env=env)
        assert refused.exit_code == 2
        assert "is in the shared vault 'team': add --to team" in refused.stderr
        assert "Traceback" not in refused.stderr
    assert log(team.vault) == team_log
    mine.ok("edit", team_id[:8], "--to", "team", "-m", "Deploys happen before 4pm on weekdays", env=env)
    assert team.ok("show", team_id, "--json").json()["text"] == "Deploys happen before 4pm on weekdays"
    mine.ok("rm", team_id, "--to", "team", env=env)
    assert team(*("show", team_id, "--json")).json()["deleted_at"]
    assert len(log(team.vault)) == len(team_log) + 2
    # the personal vault's own memory needs no --to, and --to team does not reach it
    assert mine("rm", my_id, "--to", "team", env=env).exit_code == 1
    mine.ok("rm", my_id, env=env)


def test_to_names_an_unknown_or_ambiguous_vault_in_one_line(tmp_path, two):
    mine, team, env, _, _ = two
    other = Cli(tmp_path / "ops")
    other.ok("init")
    assert "no such shared vault" in mine("add", "--to", "nope", "x", env=env).stderr
    both = team_env(f"team={team.vault}", str(other.vault))
    result = mine("add", "--to", "shared", "x", env=both)
    assert result.exit_code == 2 and "which one? vault.shared lists team, ops" in result.stderr
    assert "no shared vault is configured" in mine("add", "--to", "team", "x").stderr


def test_a_missing_or_broken_team_vault_is_one_warning_not_a_crash(tmp_path, two):
    mine, _, env, my_id, team_id = two
    (tmp_path / "not-a-vault").mkdir()
    (tmp_path / "not-a-vault" / "notes.txt").write_text("hello")
    bad = team_env(f"team={two[1].vault}", f"gone={tmp_path / 'nowhere'}", f"odd={tmp_path / 'not-a-vault'}")
    result = mine("search", "when do deploys happen", "--json", "--threshold", "0", env=bad)
    assert result.exit_code == 0, result.stderr
    assert {hit["id"] for hit in result.json()} == {my_id, team_id}
    warnings = [line for line in result.stderr.splitlines() if "left out" in line]
    assert len(warnings) == 2 and "'gone'" in warnings[0] and "'odd'" in warnings[1]
    assert "Traceback" not in result.stderr
    synced = mine("add", "--to", "gone", "x", env=bad)
    assert synced.exit_code == 1 and synced.stderr.count("\n") == 1 and "shared vault 'gone'" in synced.stderr


def test_vault_shared_is_checked_when_the_settings_load(tmp_path, monkeypatch):
    for items, said in (([f"a={tmp_path}", f"a={tmp_path}/b"], "given twice"), ([f"personal={tmp_path}"], "personal"),
                        (["team="], "names no folder"), ([str(tmp_path / "my team")], "cannot name a vault")):
        monkeypatch.setenv("MEMVAULT_VAULT_SHARED", json.dumps(items))
        with pytest.raises(ConfigError, match=said):
            settings_module.load(None, {"vault.path": str(tmp_path / "v")})
    monkeypatch.setenv("MEMVAULT_VAULT_SHARED", json.dumps([str(tmp_path / "team-x"), "ops=~/ops"]))
    loaded = settings_module.load(None, {"vault.path": str(tmp_path / "v")})
    assert settings_module.shared_vault_paths(loaded.vault.shared) == {
        "team-x": tmp_path / "team-x", "ops": Path.home() / "ops"}


def test_config_set_writes_the_list(tmp_path, two):
    mine, team, _, _, team_id = two
    config = tmp_path / "config.toml"
    done = run_memvault("config", "set", "vault.shared", json.dumps([f"team={team.vault}"]), "--config", str(config))
    assert done.returncode == 0, done.stderr
    hits = mine.ok("search", "deploys", "--json", "--threshold", "0", "--config", str(config)).json()
    assert team_id in [hit["id"] for hit in hits]


def open_core(path: Path, *shared: str) -> Memvault:
    return Memvault.open(settings_module.load(None, {"vault.path": str(path), "vault.shared": json.dumps(shared)}))


def test_a_prompt_gets_team_memories_marked_but_not_for_a_scoped_caller(two):
    mine, team, _, my_id, team_id = two
    core = open_core(mine.vault, f"team={team.vault}")
    try:
        context = gather(core, "when do deploys happen?", "default", {}, {"score_threshold": 0.0})
        lines = [memory_line(hit) for hit in context.memories]
        assert f'[memory, team vault "team"] {TEAM_FACT}' in lines and f"[memory] {MY_FACT}" in lines
        scoped = gather(core, "when do deploys happen?", "default", {}, {"score_threshold": 0.0}, core=False)
        assert team_id not in [hit.id for hit in scoped.memories] and my_id in [hit.id for hit in scoped.memories]
        with pytest.raises(UsageError, match="add --to team"):
            core.target(None, [team_id[:8]])  # the one way to a team vault's writes refuses without --to
        assert core.target("team").vault.root == team.vault.resolve()
    finally:
        core.close()


def bare(tmp_path: Path, name: str) -> Path:
    remote = tmp_path / f"{name}.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    return remote


def synced_team(tmp_path: Path) -> tuple[Path, Cli, Cli]:
    """The team's bare remote, a colleague's clone with the team fact, and this person's vault (with a
    remote of its own) beside a clone of the team vault at tmp_path/my-team."""
    team_remote = bare(tmp_path, "team")
    colleague = Cli(tmp_path / "colleague-team")
    colleague.ok("init", "--remote", str(team_remote))
    colleague.ok("add", TEAM_FACT)
    colleague.ok("sync")
    Cli(tmp_path / "unused").ok("clone", str(team_remote), str(tmp_path / "my-team"))
    mine = Cli(tmp_path / "me")
    mine.ok("init", "--remote", str(bare(tmp_path, "me")))
    return team_remote, colleague, mine


def test_sync_syncs_each_team_vault_with_its_own_remote(tmp_path):
    team_remote, colleague, mine = synced_team(tmp_path)
    lonely = Cli(tmp_path / "lonely")
    lonely.ok("init")
    env = team_env(f"team={tmp_path / 'my-team'}", str(lonely.vault))
    new = colleague.ok("add", "Hotfixes need a second reviewer", "--json").json()["results"][0]["id"]
    colleague.ok("sync")
    quiet = mine.ok("sync", "--no-shared", "--json", env=env).json()
    assert "shared" not in quiet
    report = mine.ok("sync", "--json", env=env).json()
    assert [(one["vault"], one.get("outcome"), one.get("skipped")) for one in report["shared"]] == [
        ("team", "fast-forward", None), ("lonely", None, "it has no git remote")]
    hits = mine.ok("search", "hotfix reviewer", "--json", "--threshold", "0", env=env).json()
    assert (new, "team") in [(hit["id"], hit["vault"]) for hit in hits]
    said = mine.ok("sync", env=env).stderr
    assert "Synced shared vault 'team' with origin: up-to-date" in said and "'lonely' not synced" in said
    # a team remote that went away: the personal vault is synced, the failure is one line and its exit code
    team_remote.rename(tmp_path / "moved.git")
    failed = mine("sync", env=env)
    assert failed.exit_code == 4, failed.stderr
    assert [line for line in failed.stderr.splitlines() if "warning" in line][0].startswith(
        "memvault: warning: shared vault 'team' not synced:")
    assert "Synced with origin" in failed.stderr and "Traceback" not in failed.stderr
    # a personal vault without a remote: the team vaults are still synced
    local = Cli(tmp_path / "local-me")
    local.ok("init")
    (tmp_path / "moved.git").rename(team_remote)
    alone = local.ok("sync", "--json", env=env).json()
    assert alone["skipped"] == "it has no git remote" and alone["shared"][0]["outcome"] == "up-to-date"
    assert local("sync", "--no-shared", env=env).exit_code == 1  # asked for the personal vault alone: its error


OWNER_KEY, ALICE_KEY = "owner-key-123", "alice-key-123"


def test_the_proxy_injects_team_memories_and_never_writes_the_team_vault(tmp_path):
    """A real server, the real `openai` client, a fake upstream that answers "ok" to everything, the
    curation calls included (garbage for an extractor): the owner's prompt carries the team memory,
    marked; a scoped key's does not; the turns and whatever curation made land in the personal vault."""
    import openai

    from memvault.server.run import running
    from tests.support.server import isolated_env, server_settings
    from tests.support.upstream import Upstream, serving

    team = Cli(tmp_path / "team-vault")
    team.ok("init")
    team.ok("add", TEAM_FACT)
    team_log = log(team.vault)
    upstream = Upstream()
    with serving(upstream.app()) as root, isolated_env(tmp_path / "home"):
        settings = server_settings(tmp_path / "me", root + "/v1", model="openai/fake", api_key=OWNER_KEY)
        settings.server.keys = {ALICE_KEY: {"user_id": ("alice",)}}
        settings.vault.shared = [f"team={team.vault}"]
        settings.retrieval.score_threshold = 0.0
        Memvault.open(settings, create=True).close()
        with running(settings) as url:
            for key in (OWNER_KEY, ALICE_KEY):
                client = openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0)
                client.chat.completions.create(model="fake", messages=[
                    {"role": "user", "content": "When do deploys to production happen? I deploy on Mondays."}])
            owner, alice = [r["messages"][-1]["content"] for r in upstream.chat_requests()
                            if "Current message:" in str(r["messages"][-1]["content"])][:2]
    assert f'[memory, team vault "team"] {TEAM_FACT}' in owner
    assert TEAM_FACT not in alice
    assert log(team.vault) == team_log  # chat turns and curation went to the personal vault only
    assert any("turn" in subject for subject in log(tmp_path / "me"))


def test_serve_with_a_sync_interval_syncs_the_team_vault_too(tmp_path):
    """What a colleague pushes to the team's remote reaches this server's prompts without a person."""
    import time

    import openai

    from memvault.server.run import running
    from tests.support.server import server_settings
    from tests.support.upstream import Upstream, serving

    _, colleague, mine = synced_team(tmp_path)
    upstream = Upstream()
    with serving(upstream.app()) as root:
        settings = server_settings(mine.vault, root + "/v1")
        settings.vault.shared = [f"team={tmp_path / 'my-team'}"]
        settings.retrieval.score_threshold = 0.0
        settings.sync.interval = 0.3
        with running(settings) as url:
            client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0)
            colleague.ok("add", "Hotfixes need a second reviewer")
            colleague.ok("sync")
            deadline, prompt = time.monotonic() + 60, ""
            while "Hotfixes need a second reviewer" not in prompt and time.monotonic() < deadline:
                time.sleep(0.3)
                client.chat.completions.create(model="fake", messages=[{"role": "user", "content": "hotfix reviewer?"}])
                prompt = upstream.chat_requests()[-1]["messages"][-1]["content"]
    assert '[memory, team vault "team"] Hotfixes need a second reviewer' in prompt


def test_a_forged_erasure_record_on_the_team_remote_removes_nothing(tmp_path):
    """Anyone who can push to the team's remote writes a plain commit claiming an erasure of the team
    fact: this person's sync of the team vault keeps it (tests/test_sync_trust.py for the personal one)."""
    team_remote, colleague, mine = synced_team(tmp_path)
    [path] = (colleague.vault / "entries").rglob("*.md")
    rel = path.relative_to(colleague.vault).as_posix()
    person = ["-c", "user.name=Someone", "-c", "user.email=someone@example.org"]
    subprocess.run(["git", "-C", str(colleague.vault), *person, "commit", "-q", "--allow-empty", "-m",
                    f"memvault erase: 1 memory\n\nMemvault-Erased-Path: {rel}\nMemvault-Operation: erase"], check=True)
    subprocess.run(["git", "-C", str(colleague.vault), "push", "-q", "origin", "HEAD:main"], check=True)
    Cli(tmp_path / "my-team").ok("add", "Release notes go out on Fridays")  # a merge in the team vault
    said = mine.ok("sync", env=team_env(f"team={tmp_path / 'my-team'}")).stderr
    assert "claims an erasure its own history does not show" in said
    assert (tmp_path / "my-team" / rel).exists()
    texts = [entry["text"] for entry in Cli(tmp_path / "my-team").ok("list", "--json").json()]
    assert TEAM_FACT in texts and "Release notes go out on Fridays" in texts
