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
# Seconds of the slowest files, measured in one process (issue 35: a whole run on main d22a9d1); only the
# order of the work depends on them. Other tests marked `slow` count SLOW seconds each, the rest nothing.
SECONDS = {
    "test_erase_sync_crash.py": 250,  # all its kill points; a run now takes a few (crash_points)
}
SLOW = 10


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
