"""Full reindex speed (issue 17, item 4): a sync hands the model many texts at once, MiniLM cuts them
into batches of like token lengths run on every core, and the vectors stay those of one text at a time
through the graph as exported. The real MiniLM model; the sync test uses the counting fake model."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from memvault.index import catchup as sync_module
from memvault.index.catchup import sync
from memvault.index.store import IndexStore
from memvault.models import saved_graph
from memvault.models.batching import length_batches
from memvault.models.embedders import OnnxMiniLM
from memvault.models.onnx_runtime import input_names, onnx_session, padded_inputs, text_tokenizer
from memvault.vault.format.entry import Entry
from memvault.vault.write.store import Vault
from tests.support.fakes import WordEmbedder, put

# Chat turns of the lengths a reindex meets (3 to ~130 tokens), one with an image caption, two whose
# order by characters is not their order by tokens.
TURNS = [
    "Mia: ok",
    "Tom: Did you see the game last night?",
    "Mia: Yes! What a finish. I still can't believe they scored twice in the last five minutes.",
    "Tom: Here is the garden after the rain [image: a photo of a wet vegetable garden with tomato plants]",
    "Mia: Thanks for asking about my week. Work was hectic: we shipped the new booking system on Tuesday, "
    "then spent Wednesday and Thursday fixing the bugs our customers found, and on Friday my manager "
    "finally let us take the afternoon off, so I went hiking with my sister up the ridge behind town.",
    "Tom: Lisbon in May?",
    "Tom: unquestionably extraordinary accomplishments",  # long words: few tokens for its characters
    "Mia: 3 4 5 6 7 8 9 1 2 3 4 5 6 7 8 9 1 2 3 4",  # the other way round
    "Mia: I've been learning the violin since March; my teacher says I practise too fast.",
    "Tom: " + " ".join(["Grandma's sourdough recipe needs a starter fed twice a day for a week,"] * 6),
]


def one_at_a_time(model: OnnxMiniLM, text: str) -> np.ndarray:
    """The vector as the exported graph gives it (no graph passes), for this text alone: no padding."""
    session = onnx_session(str(model.model_path), passes="disable")
    tokenizer = text_tokenizer(str(model.tokenizer_path), model.max_tokens)
    inputs = padded_inputs([tokenizer.encode(text)], input_names(session))
    (hidden,) = session.run(["last_hidden_state"], inputs)
    vector = hidden[0].mean(axis=0)
    return vector / np.linalg.norm(vector)


def ten_memories(tmp_path) -> Vault:
    vault = Vault.init(tmp_path / "vault")
    for i in range(10):
        put(vault, Entry(f"memory {i} about the word w{i}x", conversation_id="c1"))
    return vault


@pytest.fixture(scope="module")
def model():
    minilm = OnnxMiniLM()
    minilm.max_cells = 64  # many small batches from few texts
    minilm.workers = 2  # run at once whatever the machine
    return minilm


def test_sorted_parallel_batches_give_the_vectors_of_one_text_at_a_time(model):
    texts = TURNS * 3
    together = model.embed(texts)
    alone = np.stack([one_at_a_time(model, text) for text in texts])
    cosines = (together * alone).sum(axis=1)
    assert cosines.min() >= 0.9999
    assert (together @ together.T)[0, 1] < 0.9  # different texts, different vectors


def test_minilm_batches_are_cut_by_tokens_and_run_on_every_core(model, monkeypatch):
    batches = []
    run_batch = OnnxMiniLM._embed_batch

    def spy(self, encodings, kind):
        batches.append(([len(e.ids) for e, _ in encodings], threading.current_thread().name))
        return run_batch(self, encodings, kind)

    monkeypatch.setattr(OnnxMiniLM, "_embed_batch", spy)
    texts = TURNS * 4
    model.embed(texts)
    tokens = [len(e.ids) for e in text_tokenizer(str(model.tokenizer_path), model.max_tokens).encode_batch(texts)]
    by_tokens = sorted(range(len(texts)), key=tokens.__getitem__)
    cut = length_batches(by_tokens, tokens, model.batch_size, model.max_cells)
    expected = [[tokens[i] for i in batch] for batch in cut]
    assert sorted(lengths for lengths, _ in batches) == sorted(expected)  # cut by tokens, not characters
    for lengths, _ in batches:  # each batch within its cell budget, unless one text is longer alone
        assert len(lengths) * max(lengths) <= model.max_cells or len(lengths) == 1
    padded = sum(len(lengths) * max(lengths) for lengths, _ in batches)
    assert padded <= 1.1 * sum(tokens)
    assert len({thread for _, thread in batches}) == 2


def unpacked(session) -> bool:
    """Whether the session leaves its weights unpacked (a process's one short query)."""
    try:
        return session.get_session_options().get_session_config_entry("session.disable_prepacking") == "1"
    except RuntimeError:  # not set
        return False


def test_minilm_runs_the_graph_its_basic_passes_made():
    """Opened from the saved copy (models/saved_graph.py): the int8 weights' Cast and scale folded into
    float constants once, not at every call."""
    import onnxruntime

    minilm = OnnxMiniLM()
    session = minilm._session()
    folder = saved_graph.saved_folder(str(minilm.model_path))
    passes = session.get_session_options().graph_optimization_level
    # The copy, or (in the process that made it) the session whose passes wrote it.
    basic = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    assert session._model_path == str(folder / saved_graph.GRAPH) or passes == basic
    assert (folder / saved_graph.WEIGHTS).stat().st_size > 3 * minilm.model_path.stat().st_size


def test_a_first_call_of_one_text_leaves_the_weights_unpacked_and_later_calls_pack_them(monkeypatch):
    kinds = []
    run_batch = OnnxMiniLM._embed_batch

    def spy(self, batch, kind):
        kinds.append(unpacked(batch[0][1]))
        return run_batch(self, batch, kind)

    monkeypatch.setattr(OnnxMiniLM, "_embed_batch", spy)
    minilm = OnnxMiniLM()
    first = minilm.embed(["green tea in Lisbon"], kind="query")
    second = minilm.embed(["green tea in Lisbon"], kind="query")
    assert kinds == [True, False]
    assert float(first[0] @ second[0]) > 0.99999
    kinds.clear()
    OnnxMiniLM().embed(TURNS[:2])  # a first call of several texts (a sync's): packed at once
    assert set(kinds) == {False}


def test_length_batches_cap_rows_and_cells():
    lengths = [1, 1, 1, 1, 5, 5, 9, 20]
    assert length_batches(range(8), lengths, batch_size=3, max_cells=10) == [[0, 1, 2], [3, 4], [5], [6], [7]]
    assert length_batches(range(8), lengths, batch_size=3) == [[0, 1, 2], [3, 4, 5], [6, 7]]


def test_a_sync_hands_the_model_many_batches_at_once(tmp_path):
    vault = ten_memories(tmp_path)
    embedder = WordEmbedder(batch_size=4)
    told = []
    with IndexStore.open(vault.state_dir, embedder.identity, embedder.dims) as index:
        report = sync(vault, index, embedder, progress=lambda done, total: told.append((done, total)))
        assert index.count() == 10
    assert (report.embedded, embedder.calls) == (10, 1)  # one call: the model sorts and batches them itself
    assert told == [(4, 10), (8, 10), (10, 10)]  # still committed batch by batch


def test_the_model_embeds_the_next_chunk_while_this_one_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(sync_module, "EMBED_CHUNK", 4)
    vault = ten_memories(tmp_path)
    second_chunk_started = threading.Event()

    class Watched(WordEmbedder):
        def embed(self, texts, kind="passage"):
            if self.calls == 1:
                second_chunk_started.set()
            return super().embed(texts, kind)

    overlapped = []

    def progress(done, total):
        if done == 4:  # the first chunk is written: the second must be under way already
            overlapped.append(second_chunk_started.wait(timeout=2))

    embedder = Watched()
    with IndexStore.open(vault.state_dir, embedder.identity, embedder.dims) as index:
        assert sync(vault, index, embedder, progress=progress).embedded == 10
        assert index.count() == 10
    assert overlapped == [True] and embedder.calls == 3
