"""How the suite shares the machine's cores (scripts/test runs pytest-xdist with `--dist loadgroup`).

xdist's loadgroup hands out tests one by one, except those of one `xdist_group`, which go to one worker
together. `group` names the groups: every test of a file that builds a module-scoped fixture (a server,
a model, a vault) goes with its file, so the fixture is built once; every test that uses the session's
local LLM server goes to one worker ("local-llm"), so one model server runs, never two at once; the
other tests (most crash tests: each builds its own vaults) spread over both workers one by one.

`order` puts the costliest units first, so no long file starts last while the other worker idles.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

LOCAL_LLM = "local-llm"

# Seconds of the slowest files, measured in one process (issue 35: a whole run on main d22a9d1); only the
# order of the work depends on them. Other tests marked `slow` count SLOW seconds each, the rest nothing.
SECONDS = {
    "test_erase_sync_crash.py": 250,  # all its kill points; a run now takes a few (crash_points)
}
SLOW = 10


def group(items: list[pytest.Item]) -> None:
    """Mark each test with the xdist_group its file's shared fixtures call for (see the module doc)."""
    files: dict[Path, list[pytest.Item]] = defaultdict(list)
    for item in items:
        files[item.path].append(item)
    for path, tests in files.items():
        scopes = {fixture.scope for item in tests for fixture in _fixtures(item)}
        if any("local_llm" in getattr(item, "fixturenames", ()) for item in tests):
            name = LOCAL_LLM
        elif scopes & {"module", "package", "class"}:
            name = path.name
        else:
            continue
        for item in tests:
            item.add_marker(pytest.mark.xdist_group(name))


def order(items: list[pytest.Item]) -> None:
    """Costliest work units first (a group's cost is its files'; a spread file's is shared by its tests),
    each keeping its tests in their own order."""
    per_file: dict[Path, int] = defaultdict(int)
    for item in items:
        per_file[item.path] += 1
    units: dict[str, float] = defaultdict(float)
    unit_of = {}
    for item in items:
        marks = [mark.args[0] for mark in item.iter_markers("xdist_group")]
        unit_of[item.nodeid] = marks[0] if marks else item.nodeid
        if item.path.name in SECONDS:
            units[unit_of[item.nodeid]] += SECONDS[item.path.name] / per_file[item.path]
        elif item.get_closest_marker("slow"):
            units[unit_of[item.nodeid]] += SLOW
    items.sort(key=lambda item: -units[unit_of[item.nodeid]])  # stable: ties keep the collection's order


def _fixtures(item: pytest.Item):
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [definition for definitions in info.name2fixturedefs.values() for definition in definitions]
