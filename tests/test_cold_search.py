"""A cold `memvault search`: the query embedded on a thread while the vault and its index open gives the
search the vector it would have made itself, a model that fails there is reported once by the search,
and the snapshot's row look-up finds the rows it holds, each once. Real model, real index, real files."""

from __future__ import annotations

import importlib
import threading

import numpy as np
import pytest
from test_search_speed import DIMS, fill

from memvault.core import Memvault
from memvault.index import store as store_module
from memvault.index.snapshot import Snapshot
from memvault.index.store import IndexStore
from memvault.models.embedders import load_embedder
from memvault.models.query_batcher import shared_embedder
from memvault.settings import EmbedderSettings, Settings, load
from tests.support.cli import Cli, run_memvault

search_mod = importlib.import_module("memvault.retrieve.search")  # the module (the package exports the function)
embedding_ahead = search_mod.embedding_ahead


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


def test_a_query_embedded_ahead_is_in_the_cache_the_search_reads():
    settings = EmbedderSettings()
    question = "  which tea did alice drink in lisbon (embedded ahead)  "  # asked by no other test
    with embedding_ahead(Settings(), question):
        pass
    embedder = shared_embedder(settings)
    cached = search_mod._query_cache[embedder].get(question.strip())
    assert cached is not None  # the block's end waited for the thread, which filled the search's own cache
    fresh = load_embedder("minilm").embed([question.strip()], kind="query")[0]
    assert np.allclose(cached, fresh, atol=1e-6)
    assert search_mod.embed_query(embedder, question) is cached  # the search runs no model again


@pytest.mark.parametrize("model", ["litellm:text-embedding-3-small", "e5", "st:all-MiniLM-L6-v2"])
def test_only_the_built_in_model_is_asked_ahead(model):
    """A remote model is not sent the query before the vault opens; another local one is not imported
    beside the facade."""
    with embedding_ahead(Settings(embedder=EmbedderSettings(model=model)), "tea"):
        assert "memvault-embed-ahead" not in [thread.name for thread in threading.enumerate()]


def test_the_cli_finds_what_the_library_finds_in_the_same_order_with_the_same_scores(cli):
    for query, conversation in (("what does alice drink", "alice"), ("violin lessons", None), ("tea", None)):
        args = ["search", query, "--json", "--top-k", "4", *(["-c", conversation] if conversation else [])]
        shown = cli.ok(*args).json()
        found = Memvault.open(load(None, {"vault.path": str(cli.vault)})).search(query, conversation, top_k=4)
        assert [hit["id"] for hit in shown] == [hit.id for hit in found]
        assert np.allclose([hit["relevance"] for hit in shown], [hit.relevance for hit in found], atol=1e-6)


def test_a_model_that_fails_on_the_thread_is_reported_once_by_the_search(cli):
    """A real process: the thread's own error would reach its stderr as a traceback."""
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
