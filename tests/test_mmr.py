"""MMR pushes near-duplicates apart, and reduces to the score order at lambda 1."""

import numpy as np
import pytest

from memvault.retrieve.mmr import mmr_steps

# Two near-duplicates (0, 1) and one distinct but slightly less relevant memory (2).
VECTORS = np.array([[1.0, 0.0, 0.0], [0.99, 0.14, 0.0], [0.0, 0.0, 1.0]])
SCORES = [0.90, 0.88, 0.80]


def mmr(scores, vectors, lambda_, k):
    """The indices MMR picks, in pick order."""
    return [index for index, _, _ in mmr_steps(scores, vectors, lambda_, k)]


def test_lambda_one_keeps_score_order():
    assert mmr(SCORES, VECTORS, 1.0, 3) == [0, 1, 2]


def test_near_duplicates_are_pushed_apart():
    assert mmr(SCORES, VECTORS, 0.7, 3) == [0, 2, 1]
    assert mmr(SCORES, VECTORS, 0.7, 2) == [0, 2]


def test_steps_report_the_penalty():
    steps = list(mmr_steps(SCORES, VECTORS, 0.7, 3))
    assert steps[0] == (0, pytest.approx(0.7 * 0.90), 0.0)
    index, value, max_sim = steps[2]
    assert index == 1
    assert max_sim == pytest.approx(0.99 / np.linalg.norm(VECTORS[1]), abs=1e-4)
    assert value == pytest.approx(0.7 * 0.88 - 0.3 * max_sim, abs=1e-4)


def test_vectors_are_normalised_and_edges():
    assert mmr(SCORES, VECTORS * 5, 0.7, 3) == [0, 2, 1]
    assert mmr([], np.zeros((0, 3)), 0.7, 5) == []
    assert mmr(SCORES, VECTORS, 0.7, 0) == []
    assert mmr(SCORES, VECTORS, 0.7, 10) == [0, 2, 1]  # k above n returns all
    assert mmr([0.5, 0.5], np.zeros((2, 3)), 0.7, 2) == [0, 1]  # ties and zero vectors: lower index first
