"""The model's graph saved after the basic passes (models/saved_graph.py) computes what the original
computes, to the bit: prepacked as the basic passes' session, unpacked as the graph without passes (a
cold search's query). A damaged copy is made again, a changed model gets its own, and with no cache
folder to write the original is opened: never an error. The real MiniLM, copied per test."""

from __future__ import annotations

import os
import shutil

import numpy as np
import onnxruntime
import pytest

from memvault.models import saved_graph
from memvault.models.embedders import OnnxMiniLM
from memvault.models.onnx_runtime import input_names, open_session, padded_inputs, session_options, text_tokenizer

TEXTS = ["green tea in Lisbon", "Alice prefers green tea over coffee, and Bob plays the violin on Fridays"]


@pytest.fixture
def model(tmp_path, monkeypatch):
    """A copy of the built-in model: its saved graph is this test's own."""
    copy = tmp_path / "model" / "model.onnx"
    copy.parent.mkdir()
    shutil.copy(OnnxMiniLM().model_path, copy)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # this test's own, not the session's
    saved_graph.optimised_session.cache_clear()
    yield str(copy)
    saved_graph.optimised_session.cache_clear()


def hidden(session) -> np.ndarray:
    tokenizer = text_tokenizer(str(OnnxMiniLM().tokenizer_path), OnnxMiniLM.max_tokens)
    (states,) = session.run(["last_hidden_state"], padded_inputs(tokenizer.encode_batch(TEXTS), input_names(session)))
    return states


def original(model: str, passes: str) -> np.ndarray:
    return hidden(open_session(model, session_options(saved_graph.EmbeddingError, passes), saved_graph.EmbeddingError))


def opened_fresh(model: str, prepack: bool):
    saved_graph.optimised_session.cache_clear()  # as a new process would
    return saved_graph.optimised_session(model, prepack)


def test_the_saved_graph_computes_what_the_original_computes(model):
    basic, unoptimised = original(model, "basic"), original(model, "disable")
    assert np.abs(basic - unoptimised).max() > 0  # the two differ (~1e-7): each must match its own
    assert not saved_graph.saved_folder(model).exists()
    first = opened_fresh(model, prepack=False)  # no copy yet: the passes run once, and are saved
    folder = saved_graph.saved_folder(model)
    assert (folder / saved_graph.GRAPH).is_file()
    assert np.array_equal(hidden(first), unoptimised)
    # The copy holds the folded float weights (4 bytes each where the model has 1).
    assert (folder / saved_graph.WEIGHTS).stat().st_size > 3 * os.path.getsize(model)
    from_copy = opened_fresh(model, prepack=False)
    passes = from_copy.get_session_options().graph_optimization_level
    assert passes == onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    assert np.array_equal(hidden(from_copy), unoptimised)
    assert np.array_equal(hidden(opened_fresh(model, prepack=True)), basic)


@pytest.mark.parametrize("damage", ["truncated weights", "garbage graph", "weights gone", "empty graph"])
def test_a_damaged_copy_is_made_again_never_an_error(model, damage):
    basic, unoptimised = original(model, "basic"), original(model, "disable")
    opened_fresh(model, prepack=True)
    folder = saved_graph.saved_folder(model)
    weights, graph = folder / saved_graph.WEIGHTS, folder / saved_graph.GRAPH
    size = weights.stat().st_size
    if damage == "truncated weights":
        os.truncate(weights, size // 2)
    elif damage == "garbage graph":
        graph.write_bytes(b"not a graph" * 100)
    elif damage == "weights gone":
        weights.unlink()
    else:
        graph.write_bytes(b"")
    assert np.array_equal(hidden(opened_fresh(model, prepack=False)), unoptimised)
    assert np.array_equal(hidden(opened_fresh(model, prepack=True)), basic)  # made again on the way
    assert weights.stat().st_size == size
    error = saved_graph.EmbeddingError
    repaired = open_session(str(graph), session_options(error, "disable"), error)
    assert np.array_equal(hidden(repaired), basic)
    assert np.array_equal(hidden(opened_fresh(model, prepack=False)), unoptimised)  # and read


def test_a_changed_model_gets_a_copy_of_its_own(model):
    opened_fresh(model, prepack=True)
    before = saved_graph.saved_folder(model)
    os.utime(model, ns=(os.stat(model).st_atime_ns, os.stat(model).st_mtime_ns + 10**9))  # reinstalled
    after = saved_graph.saved_folder(model)
    assert after != before and not after.exists()
    opened_fresh(model, prepack=True)
    assert (after / saved_graph.GRAPH).is_file() and (before / saved_graph.GRAPH).is_file()


def test_with_no_cache_folder_to_write_the_original_is_opened(model, tmp_path, monkeypatch):
    blocked = tmp_path / "a file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    assert np.array_equal(hidden(opened_fresh(model, prepack=True)), original(model, "basic"))
    assert np.array_equal(hidden(opened_fresh(model, prepack=False)), original(model, "disable"))
    assert not saved_graph.saved_folder(model).exists()


def test_a_copy_left_half_written_by_a_killed_process_is_removed(model):
    import subprocess
    import sys

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    folder = saved_graph.saved_folder(model)
    folder.parent.mkdir(parents=True)
    leftover = folder.parent / f".{folder.name}.{int(gone.stdout)}.x1y2"
    running = folder.parent / f".{folder.name}.{os.getpid()}.a3b4"  # a writer still at work: left alone
    for half in (leftover, running):
        half.mkdir()
        (half / saved_graph.WEIGHTS).write_bytes(b"\0" * 1000)
    opened_fresh(model, prepack=True)
    assert not leftover.exists() and running.exists()
    assert (folder / saved_graph.GRAPH).is_file()
