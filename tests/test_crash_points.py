"""The crash tests' choice of kill points (tests/support/crash_points.py): fewer points a run, yet every
kind and every test each run, the same choice in every process of a run, all of them on demand."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support import crash_points

ROOT = Path(__file__).resolve().parents[1]
GROUPS = {
    "stale": [("reset", 9), ("replay", 9), ("replay", 2), ("commit", 15), ("purge", 9), ("pruning", 9)],
    "erasing": [("replay",), ("commit",), ("purge",)],
    "added": [("reset",), ("replay",)],
    "doctor": [("replay",), ("purge",)],
}


def labels(point):
    return [f"step={point[0]}"] + [f"sig={sig}" for sig in point[1:]]


def choice(monkeypatch, seed: int) -> dict:
    monkeypatch.setattr(crash_points, "_seed", [seed])
    return crash_points.choose("test", GROUPS, kinds=labels)


def test_each_run_keeps_every_kind_and_every_group_with_fewer_points(monkeypatch):
    every = {label for points in GROUPS.values() for point in points for label in labels(point)}
    sizes = set()
    for seed in range(200):
        chosen = choice(monkeypatch, seed)
        assert all(chosen[group] for group in GROUPS), chosen
        assert {label for points in chosen.values() for point in points for label in labels(point)} == every
        for group, points in chosen.items():  # a subset, in the group's own order
            assert points == [point for point in GROUPS[group] if point in points]
        sizes.add(sum(map(len, chosen.values())))
    assert max(sizes) < sum(map(len, GROUPS.values())) and len(sizes) > 1  # fewer, and not always the same
    assert choice(monkeypatch, 7) == choice(monkeypatch, 7)
    assert len({repr(choice(monkeypatch, seed)) for seed in range(20)}) > 1


CRASH_FILE = textwrap.dedent("""
    import pytest

    pytestmark = pytest.mark.crash_points("step", "sig")

    @pytest.mark.parametrize(("step", "sig"), [("reset", 9), ("replay", 9), ("replay", 2), ("purge", 9)])
    def test_stale(step, sig):
        pass

    @pytest.mark.parametrize("step", ["replay", "commit", "purge"])
    def test_erasing(step):
        pass

    def test_random():
        pass
""")


def run_points(tmp_path: Path, *args: str, **env: str) -> tuple[list[str], str]:
    (tmp_path / "test_crashes.py").write_text(CRASH_FILE)
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        from tests.support import crash_points
        def pytest_configure(config):
            config.addinivalue_line("markers", "crash_points: sampled")
            crash_points.run_seed()
        def pytest_collection_modifyitems(config, items):
            crash_points.select(config, items)
        def pytest_terminal_summary(terminalreporter):
            terminalreporter.write_line(crash_points.summary())
    """))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MEMVAULT_") and k != "PYTEST_ADDOPTS"}
    # No plugin of the environment is loaded (hypothesis, anyio, xdist…): the run needs none of them.
    done = subprocess.run([sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**environ, "PYTHONPATH": str(ROOT), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                                            **env})
    assert done.returncode == 0, done.stdout + done.stderr
    return sorted(re.findall(r"::(test_\w+(?:\[[^\]]*\])?) PASSED", done.stdout)), done.stdout


def test_a_run_deselects_the_points_not_chosen_and_prints_the_seed_that_repeats_it(tmp_path):
    ran, out = run_points(tmp_path)
    seed = re.search(r"MEMVAULT_CRASH_SEED=(\d+) repeats", out).group(1)
    assert "test_random" in ran and any("test_stale" in t for t in ran) and any("test_erasing" in t for t in ran)
    assert len(ran) < 8 and f"{8 - len(ran)} deselected" in out
    steps = {re.search(r"\[(\w+)", t).group(1) for t in ran if "[" in t}
    assert steps == {"reset", "replay", "commit", "purge"} and "replay-2" in " ".join(ran)  # every kind
    assert run_points(tmp_path, MEMVAULT_CRASH_SEED=seed)[0] == ran  # the seed repeats the choice
    everything, out = run_points(tmp_path, MEMVAULT_CRASH_POINTS="all")
    assert len(everything) == 8 and "deselected" not in out and "crash points: all" in out
