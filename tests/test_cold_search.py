"""A cold `memvault search`: the command line finds what the library finds, a model that fails is reported
in one line, and the snapshot's row look-up finds the rows it holds, each once. Real model, real index,
real files."""

from __future__ import annotations

import numpy as np
import pytest
from test_search_speed import DIMS, fill

from memvault.core import Memvault
from memvault.index import store as store_module
from memvault.index.snapshot import Snapshot
from memvault.index.store import IndexStore
from memvault.settings import load
from tests.support.cli import Cli, run_memvault


@pytest.fixture
def cli(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    for text, conversation in (("Alice prefers green tea over coffee", "alice"),
                               ("Alice drank mint tea in Lisbon last spring", "alice"),
                               ("Bob is learning to play the violin", "bob"),
                               ("The office closes early on Fridays", "global")):
        cli.ok("add", text, "-c", conversation)
    return cli


def test_the_cli_finds_what_the_library_finds_in_the_same_order_with_the_same_scores(cli):
    for query, conversation in (("what does alice drink", "alice"), ("violin lessons", None), ("tea", None)):
        args = ["search", query, "--json", "--top-k", "4", *(["-c", conversation] if conversation else [])]
        shown = cli.ok(*args).json()
        found = Memvault.open(load(None, {"vault.path": str(cli.vault)})).search(query, conversation, top_k=4)
        assert [hit["id"] for hit in shown] == [hit.id for hit in found]
        assert np.allclose([hit["relevance"] for hit in shown], [hit.relevance for hit in found], atol=1e-6)


def test_a_model_that_fails_is_reported_in_one_line(cli):
    done = run_memvault("search", "tea", "--vault", str(cli.vault), env={"MEMVAULT_EMBEDDER_MODEL": "no-such-model"})
    stderr = done.stderr.decode()
    assert done.returncode != 0 and "unknown embedder 'no-such-model'" in stderr
    assert "Traceback" not in stderr and "Exception in thread" not in stderr
    assert len(stderr.strip().splitlines()) == 1


def test_the_snapshot_finds_the_rows_it_holds_each_once(tmp_path, monkeypatch):
    monkeypatch.setattr(store_module, "COARSE_ABOVE", 0)  # a snapshot even of a small index
    with IndexStore.open(tmp_path / ".memvault", "test:64", DIMS) as index:
        fill(index, n=300)
        index.refresh_snapshot()
        snapshot = Snapshot.open(index.snapshot_path)
    held = np.sort(snapshot.arrays.rowids)
    # Rows it holds, and rowids it does not hold that sort just before one it does (gaps, below, above).
    gaps = np.setdiff1d(np.arange(held[0] - 3, held[-1] + 4), held)
    rng = np.random.default_rng(7)
    for asked in (held[::7], gaps, np.concatenate([held[::3], gaps])[rng.permutation(len(held[::3]) + len(gaps))]):
        positions = snapshot._positions(asked)
        assert sorted(snapshot.arrays.rowids[positions].tolist()) == sorted(set(asked.tolist()) & set(held.tolist()))
