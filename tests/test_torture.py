"""The torture suite (issue 11): `kill -9` at random instants of `memvault add`, `memvault reindex
--full` and `memvault serve` under load (real processes, SIGKILL, loopback only), each followed by the
next ordinary command; then every acknowledged memory must be on disk, committed, indexed and
searchable, `git fsck` clean, and nothing left for a person (`memvault doctor` all ok, no git lock).

The figures are printed (`pytest -s tests/test_torture.py`); scripts/torture.py runs the same rounds
with any counts. The instants come from the run's seed (printed at the end: MEMVAULT_CRASH_SEED repeats
it) and the counts are small; MEMVAULT_CRASH_POINTS=all makes every round's kills the full count."""

from __future__ import annotations

import signal

import pytest

from tests.support import crash_points, torture

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def report(figures: torture.Figures) -> None:
    print("\n" + torture.summary(figures))
    assert figures.kills > 0, "no process was killed: the scenario proved nothing"
    assert figures.acknowledged > 0
    assert (figures.lost, figures.duplicated, figures.problems) == (0, 0, [])


def test_kill_9_of_add(tmp_path):
    report(torture.torture_add(tmp_path / "vault", kills=crash_points.kills(8, 4), seed=crash_points.run_seed()))


def test_kill_9_of_reindex_full(tmp_path):
    report(torture.torture_reindex(tmp_path / "vault", memories=250, kills=crash_points.kills(3, 2),
                                   seed=crash_points.run_seed()))


def test_kill_9_of_serve_under_load(tmp_path):
    figures = torture.torture_serve(tmp_path / "vault", kills=crash_points.kills(2, 1), clients=3,
                                    seed=crash_points.run_seed())
    report(figures)
    assert figures.curated == figures.acknowledged  # every acknowledged turn was curated, after the restarts


@pytest.mark.parametrize("how", ["sigint-group", "sigterm-group", "sigint-twice"])
def test_group_stops_of_serve_under_load_while_curation_is_queued(tmp_path, how):
    """Ctrl-C (or a service manager's SIGTERM) to serve's whole process group while turns wait for
    curation: the stop finishes them (or, at a second Ctrl-C, leaves them queued), and after the
    next start every acknowledged turn is committed, indexed and curated (issue 23)."""
    figures = torture.torture_serve(tmp_path / "vault", kills=1, clients=3, how=how, seed=crash_points.run_seed())
    report(figures)
    assert figures.curated == figures.acknowledged


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_stop_to_chats_process_group_mid_answer(tmp_path, sig):
    figures = torture.torture_chat(tmp_path / "vault", kills=crash_points.kills(2, 1), sig=sig)
    report(figures)
    assert figures.curated == figures.acknowledged
