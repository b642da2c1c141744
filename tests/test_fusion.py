"""Weighted reciprocal rank fusion, and the scores that follow it (fallback relevance, recency, threshold)."""

import math

import pytest

from memvault.retrieve.fusion import rrf
from memvault.retrieve.scoring import (
    CROSS_ENCODER_THRESHOLD,
    NO_RERANKER_THRESHOLD,
    combine,
    fallback_relevance,
    recency,
    threshold_for,
)
from tests.support.cli import Cli


def test_rrf_sums_weight_over_k_plus_rank():
    fused = dict(rrf([([1, 2, 3], 1.0), ([3, 1], 1.0)], k=60))
    assert fused[1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[2] == pytest.approx(1 / 62)
    assert fused[3] == pytest.approx(1 / 63 + 1 / 61)
    assert [rowid for rowid, _ in rrf([([1, 2, 3], 1.0), ([3, 1], 1.0)], k=60)] == [1, 3, 2]


def test_rrf_weight_changes_the_winner():
    dense, lexical = [10, 20], [20, 10]
    assert rrf([(dense, 1.0), (lexical, 1.0)], k=0)[0][1] == pytest.approx(1.5)
    assert rrf([(dense, 1.0), (lexical, 2.0)], k=60)[0][0] == 20
    assert rrf([(dense, 2.0), (lexical, 1.0)], k=60)[0][0] == 10


def test_rrf_ties_keep_first_seen_order_and_empty_lists_are_fine():
    assert [r for r, _ in rrf([([5, 6], 1.0), ([6, 5], 1.0)])] == [5, 6]
    assert rrf([([], 1.0)]) == []
    assert rrf([]) == []


def test_fallback_relevance_rises_with_cosine_and_lexical_share():
    assert 0.0 < fallback_relevance(-1.0, 0.0) < fallback_relevance(0.2, 0.0) < fallback_relevance(0.2, 0.5)
    assert fallback_relevance(0.2, 0.5) < fallback_relevance(0.6, 0.5) < fallback_relevance(1.0, 1.0) < 1.0
    assert fallback_relevance(0.5, 1.0) > 0.8  # the query's best lexical hit, fairly similar: clearly relevant
    assert fallback_relevance(0.15, 0.0) < NO_RERANKER_THRESHOLD  # no shared word, barely similar: junk
    assert fallback_relevance(0.3, 0.0) > NO_RERANKER_THRESHOLD  # a paraphrase is not cut
    assert fallback_relevance(0.5, 7.0) == fallback_relevance(0.5, 1.0)  # the share is clamped to [0, 1]


def test_recency_and_combine():
    assert recency(0) == 1.0
    assert recency(30, 30) == pytest.approx(math.exp(-1))
    assert recency(-5) == 1.0  # a time in the future counts as now
    assert recency(10, 0) == 0.0
    assert combine(0.8, 0.5, 0.2) == pytest.approx(0.8 * 0.8 + 0.2 * 0.5)
    assert combine(0.8, 0.5, 0.0) == 0.8


def test_threshold_for_chooses_only_when_none_is_set():
    assert threshold_for(None, has_reranker=True) == CROSS_ENCODER_THRESHOLD == 0.35
    assert threshold_for(None, has_reranker=False) == NO_RERANKER_THRESHOLD
    for explicit in (0.35, 0.6, 0.015, 0.0):  # a set value is used as given, whatever it is
        assert threshold_for(explicit, has_reranker=False) == explicit
        assert threshold_for(explicit, has_reranker=True) == explicit


# Without a cross-encoder this paraphrase scores 0.021 for the query (no shared word, cosine 0.26):
# kept by the automatic 0.015, dropped by any deliberate 0.35.
QUERY, PARAPHRASE = "any pets?", "Bob has two cats"


def test_a_threshold_set_anywhere_is_honoured_without_a_cross_encoder(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    cli.ok("add", PARAPHRASE, "-c", "pets", "--no-llm")

    def found(*args, env=None):
        return [hit["text"] for hit in cli.ok("search", QUERY, "-c", "pets", "--json", *args, env=env).json()]

    assert found() == [PARAPHRASE]  # "auto"
    config = tmp_path / "config.toml"
    config.write_text("[retrieval]\nscore_threshold = 0.35\n")
    assert found("--config", str(config)) == []
    assert found(env={"MEMVAULT_RETRIEVAL_SCORE_THRESHOLD": "0.35"}) == []
    assert found("--threshold", "0.35") == []
    config.write_text('[retrieval]\nscore_threshold = "auto"\n')  # back to the automatic choice
    assert found("--config", str(config)) == [PARAPHRASE]


def test_a_threshold_argument_of_the_python_api_is_honoured(tmp_path):
    from memvault import Memory

    memory = Memory(vault=tmp_path / "vault")
    try:
        memory.add(PARAPHRASE, user_id="bob", infer=False)
        assert [hit["memory"] for hit in memory.search(QUERY, user_id="bob")["results"]] == [PARAPHRASE]
        assert memory.search(QUERY, user_id="bob", threshold=0.35)["results"] == []
    finally:
        memory.close()
