"""How the suite shares the machine's cores (scripts/test runs pytest-xdist; conftest hands it `Scheduler`).

A file goes to one worker whole (its module-scoped fixtures, a server, a model, a vault, are built once),
as with `--dist loadfile`, except: the files that use the session's local LLM server all go to one worker
together (one model server, never two at once), and the SPREAD files (crash tests: each test builds its
own vaults) go test by test to whichever worker is free. `check` fails the run when these lists no longer
match the fixtures the files use. `order` puts the costliest work first, so no long file starts last.

(xdist's own `--dist loadgroup` marks are ignored under pytest 9.2: it renames `item._nodeid`, which
pytest no longer reads. Hence a scheduler of our own.)
"""

from __future__ import annotations

from collections import defaultdict

import pytest

LOCAL_LLM = "local-llm"
LOCAL_LLM_FILES = {
    "test_bounded_answers.py", "test_e2e_local_llm.py", "test_erase_resummary.py", "test_grounding.py",
    "test_incognito.py", "test_local_llm.py", "test_one_rule_set.py", "test_server_proxy.py", "test_sessions.py",
}
SPREAD = {
    "test_torture.py", "test_erase_interrupted.py", "test_stop_signals.py",
    "test_races.py", "test_sync_devices_sim.py", "test_erase_sync.py", "test_sync_devices.py",
}
# Seconds of the files that take 15 s or more, run one by one in one process (main ac5f0f9, load 8-10, so
# about three times a quiet machine's; the files sped up since are given their new cost). Only the order
# of the work depends on them: without them, a long file that is not marked slow can start last and run
# alone at the end. Other tests marked `slow` count SLOW seconds each, the rest nothing.
SECONDS = {
    "test_torture.py": 300, "test_recovery.py": 249, "test_sessions.py": 233, "test_e2e_local_llm.py": 227,
    "test_sync_devices_sim.py": 139, "test_incognito.py": 132, "test_sync_devices.py": 108,
    "test_review_neighbours.py": 86, "test_refusals_visible.py": 84, "test_local_llm.py": 84,
    "test_erase_sync_crash.py": 56, "test_sync.py": 51, "test_agentcli_proxy.py": 48, "test_one_rule_set.py": 44,
    "test_erase_interrupted.py": 44, "test_mem0_cases.py": 42, "test_extras.py": 40, "test_import_resume.py": 34,
    "test_review_layers.py": 34, "test_review_import.py": 32, "test_state_files.py": 28,
    "test_erase_surfaces.py": 28, "test_pull.py": 27, "test_search_speed.py": 27, "test_erase_sync.py": 26,
    "test_sync_trust.py": 26, "test_grounding.py": 26, "test_fuzz.py": 25, "test_chat_tmux.py": 24,
    "test_erase_resummary.py": 24, "test_policy.py": 24, "test_bounded_answers.py": 24, "test_mcp.py": 22,
    "test_secret_doors.py": 22, "test_bad_input.py": 21, "test_mcp_workspace.py": 21, "test_export.py": 21,
    "test_import_chatgpt.py": 19, "test_races.py": 19, "test_kept_both.py": 19, "test_cli_shell.py": 19,
    "test_completion.py": 19, "test_prompt_budget.py": 18, "test_server_auth.py": 18, "test_erase.py": 18,
    "test_cli_entries.py": 17, "test_rules.py": 17, "test_memory_follows.py": 17, "test_server_hardening.py": 17,
    "test_stop_signals.py": 17, "test_chat_repl.py": 16, "test_import_mem0.py": 16, "test_http_hostile.py": 15,
}
SLOW = 20


def scope(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, the local LLM's group, or itself (SPREAD)."""
    path = nodeid.split("::", 1)[0]
    name = path.rsplit("/", 1)[-1]
    if name in LOCAL_LLM_FILES:
        return LOCAL_LLM
    return nodeid if name in SPREAD else path


def make_scheduler(config: pytest.Config, log):
    from xdist.scheduler import LoadScopeScheduling

    class Scheduler(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope(nodeid)

    return Scheduler(config, log)


def check(items: list[pytest.Item]) -> None:
    """The lists above against what the files' tests really use (a new local-LLM test, a module fixture
    in a SPREAD file): a usage error naming the file, before anything runs."""
    for item in items:
        name = item.path.name
        if "local_llm" in getattr(item, "fixturenames", ()) and name not in LOCAL_LLM_FILES:
            raise pytest.UsageError(f"{name} uses local_llm: add it to LOCAL_LLM_FILES in tests/support/scheduling.py")
        if name in SPREAD and {f.scope for f in _fixtures(item)} & {"module", "package", "class"}:
            raise pytest.UsageError(f"{name} has a module-scoped fixture: take it out of SPREAD in "
                                    "tests/support/scheduling.py")


def order(items: list[pytest.Item]) -> None:
    """Costliest work units first (a group's cost is its files'; a spread file's is shared by its tests),
    each keeping its tests in their own order."""
    per_file: dict[str, int] = defaultdict(int)
    for item in items:
        per_file[item.path.name] += 1
    units: dict[str, float] = defaultdict(float)
    for item in items:
        if item.path.name in SECONDS:
            units[scope(item.nodeid)] += SECONDS[item.path.name] / per_file[item.path.name]
        elif item.get_closest_marker("slow"):
            units[scope(item.nodeid)] += SLOW
    items.sort(key=lambda item: -units[scope(item.nodeid)])  # stable: ties keep the collection's order


def _fixtures(item: pytest.Item):
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [definition for definitions in info.name2fixturedefs.values() for definition in definitions]
