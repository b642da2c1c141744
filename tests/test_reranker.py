"""The ONNX cross-encoder reranker, with a tiny real model the tests generate (no downloads)."""

from __future__ import annotations

import math
import shutil

import pytest

from memvault.errors import ConfigError
from memvault.models import OnnxCrossEncoder, checked_scores, load_reranker
from memvault.models.embedders import OnnxMiniLM
from tests.support.tiny_cross_encoder import BIAS, OVERLAP_WEIGHT, make_tiny_cross_encoder

QUERY = "Where does the cat sleep?"
RELEVANT = "The cat sleeps on the mat"  # shares "the" and "cat" with the query
IRRELEVANT = "Quarterly tax filing deadline"  # shares nothing


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return make_tiny_cross_encoder(tmp_path_factory.mktemp("models") / "tiny-cross-encoder")


@pytest.fixture(scope="module")
def reranker(tiny_folder):
    return load_reranker(str(tiny_folder))


def test_loads_the_folder_and_scores_in_unit_range(reranker):
    assert isinstance(reranker, OnnxCrossEncoder)
    scores = reranker.score(QUERY, [RELEVANT, IRRELEVANT, "the kitten likes milk"])
    assert len(scores) == 3
    assert all(isinstance(s, float) and 0.0 <= s <= 1.0 for s in scores)


def test_relevant_text_ranks_above_irrelevant(reranker):
    relevant, irrelevant = reranker.score(QUERY, [RELEVANT, IRRELEVANT])
    assert relevant > 0.5 > irrelevant
    # The tiny model's logit is known exactly: it proves the pair encoding and segment ids reach the graph.
    assert relevant == pytest.approx(sigmoid(2 * OVERLAP_WEIGHT + BIAS), abs=1e-5)
    assert irrelevant == pytest.approx(sigmoid(BIAS), abs=1e-5)


def test_batches_keep_the_order_of_texts(tiny_folder):
    texts = [IRRELEVANT, "the kitten likes milk", RELEVANT, "coffee", "a dog sits on the sofa", "the cat"]
    small_batches = OnnxCrossEncoder(tiny_folder, batch_size=2)
    together = small_batches.score(QUERY, texts)
    one_by_one = [small_batches.score(QUERY, [text])[0] for text in texts]
    assert together == pytest.approx(one_by_one, abs=1e-6)
    assert small_batches.score(QUERY, texts[::-1]) == pytest.approx(together[::-1], abs=1e-6)
    assert len(set(round(s, 4) for s in together)) >= 3  # the order check would be vacuous on equal scores


def test_no_texts_no_scores(reranker):
    assert reranker.score(QUERY, []) == []


def test_empty_spec_means_no_reranker():
    assert load_reranker("") is None
    assert load_reranker("   ") is None


def test_instances_are_cached_per_spec(tiny_folder, reranker):
    assert load_reranker(str(tiny_folder)) is reranker


def test_folder_without_model_is_a_config_error(tmp_path):
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(ConfigError, match="model.onnx"):
        load_reranker(str(tmp_path))


def test_unknown_hub_name_offline_is_a_config_error():
    # conftest sets HF_HUB_OFFLINE=1 and an empty HOME: nothing can come from the hub or its cache.
    with pytest.raises(ConfigError, match="could not be downloaded"):
        load_reranker("nobody/no-such-cross-encoder")


def test_path_that_is_not_a_folder_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="neither a folder nor a hub name"):
        load_reranker(str(tmp_path / "missing"))


def test_a_model_without_a_relevance_head_is_refused(tmp_path):
    # The MiniLM embedding model takes the same inputs but answers with token vectors, not a logit.
    minilm = OnnxMiniLM()
    shutil.copy(minilm.model_path, tmp_path / "model.onnx")
    shutil.copy(minilm.tokenizer_path, tmp_path / "tokenizer.json")
    with pytest.raises(ConfigError, match="one logit per text"):
        OnnxCrossEncoder(tmp_path).score(QUERY, [RELEVANT])


@pytest.mark.parametrize("bad", [[1.5], [-0.1], [float("nan")]])
def test_scores_outside_unit_range_are_refused(bad):
    with pytest.raises(ConfigError, match=r"outside \[0, 1\]"):
        checked_scores(bad, expected=1)


def test_one_score_per_text_is_enforced():
    with pytest.raises(ConfigError, match="2 scores for 3 texts"):
        checked_scores([0.1, 0.2], expected=3)
    assert checked_scores([0, 1, 0.5], expected=3) == [0.0, 1.0, 0.5]
