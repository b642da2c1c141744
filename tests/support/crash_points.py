"""Which kill points the crash tests run this time. Every point is a real process killed at one step and
costs seconds; a run takes a random few that still reach every kind (every value of the parameters the
mark names, e.g. every step and every signal) and every test of the file, and prints its seed (conftest).

A test file asks for it with one mark; its parametrized tests are then sampled together:

    pytestmark = pytest.mark.crash_points("step", "sig")   # the parameters whose values are kinds

MEMVAULT_CRASH_SEED=N repeats a run's choice; MEMVAULT_CRASH_POINTS=all runs every point (as does
naming tests by id on the command line). The points not chosen are reported as deselected.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest

SEED = "MEMVAULT_CRASH_SEED"
POINTS = "MEMVAULT_CRASH_POINTS"
MARK = "crash_points"

_seed: list[int] = []  # this process's, once known (a test's isolation drops MEMVAULT_* variables)
EVERY = os.environ.get(POINTS, "").strip().lower() == "all"  # read at import, before any test's isolation


def run_seed() -> int:
    """This run's seed: MEMVAULT_CRASH_SEED, or a new one put there, so that every process of the run
    (pytest-xdist's workers are started after conftest calls this) makes the same choice."""
    if not _seed:
        if not os.environ.get(SEED, "").isdigit():
            os.environ[SEED] = str(random.SystemRandom().randrange(1_000_000))
        _seed.append(int(os.environ[SEED]))
    return _seed[0]


def every_point() -> bool:
    return EVERY or os.environ.get(POINTS, "").strip().lower() == "all"


def kills(every: int, few: int) -> int:
    """How many random kills a torture round makes: `few` a run (at instants drawn from the run's seed),
    `every` with MEMVAULT_CRASH_POINTS=all."""
    return every if every_point() else few


def choose(name: str, groups: dict[str, Sequence[Any]], kinds: Callable[[Any], Iterable[str]]) -> dict[str, list[Any]]:
    """A random subset of each group's points (in their own order): every group keeps at least one, and
    every kind a point stands for (`kinds` gives its labels) is kept by at least one point."""
    rng = random.Random(f"{run_seed()}:{name}")  # a string seed: the same choice in every process
    labels = {group: [sorted(kinds(point)) for point in points] for group, points in groups.items()}
    uncovered = sorted({label for found in labels.values() for each in found for label in each})
    chosen: dict[str, list[int]] = {group: [] for group in groups}

    def take(candidates: list[tuple[str, int]]) -> None:
        gain = {c: len(set(labels[c[0]][c[1]]) & set(uncovered)) for c in candidates}
        best = max(gain.values())
        group, index = rng.choice([c for c in candidates if gain[c] == best])
        chosen[group].append(index)
        uncovered[:] = [label for label in uncovered if label not in labels[group][index]]

    # One point a group, the groups with the fewest kinds first, so the versatile ones fill the gaps.
    for group in sorted(groups, key=lambda g: (len({x for each in labels[g] for x in each}), rng.random())):
        take([(group, index) for index in range(len(groups[group]))])
    while uncovered:
        take([(group, index) for group, points in groups.items() for index in range(len(points))
              if index not in chosen[group]])
    return {group: [points[i] for i in sorted(chosen[group])] for group, points in groups.items()}


def select(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect the points not chosen this run, file by file (conftest, before anything else sorts)."""
    if every_point() or any("::" in arg for arg in config.args):
        return
    files: dict[str, dict[str, list[pytest.Item]]] = {}
    for item in items:
        mark = item.get_closest_marker(MARK)
        if mark is not None and hasattr(item, "callspec"):
            files.setdefault(str(item.path.name), {}).setdefault(item.originalname, []).append(item)
    dropped = []
    for name, groups in files.items():
        kept = choose(name, groups, kinds=_kinds)
        dropped += [item for group, tests in groups.items() for item in tests if item not in kept[group]]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        gone = set(dropped)
        items[:] = [item for item in items if item not in gone]


def _kinds(item: pytest.Item) -> list[str]:
    """The values of the parameters the mark names: each one a kind to keep."""
    params = item.callspec.params
    return [f"{name}={params[name]}" for name in item.get_closest_marker(MARK).args if name in params]


def summary() -> str:
    """The line conftest prints at the end of a run."""
    if every_point():
        return f"crash points: all of them ({POINTS}=all)"
    seed = run_seed()
    return (f"crash points: a random few, seed {seed} ({SEED}={seed} repeats this choice, "
            f"{POINTS}=all runs every point)")
