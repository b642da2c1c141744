"""MMR pushes near-duplicates apart, and reduces to the score order at lambda 1; with a duplicate
cosine, only near-repeats of what is already chosen pay."""

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


# A chosen memory (0), a related one that is more relevant than the third (1: cosine 0.6 to 0), and an
# unrelated one (2): classic MMR swaps 1 for 2, MMR against near-duplicates only keeps the order.
RELATED = np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0], [0.0, 0.0, 1.0]])
RELATED_SCORES = [0.90, 0.80, 0.70]


def test_with_a_duplicate_cosine_only_near_repeats_are_pushed_apart():
    assert mmr(RELATED_SCORES, RELATED, 0.7, 3) == [0, 2, 1]  # classic: the related evidence loses its place
    kept = [index for index, _, _ in mmr_steps(RELATED_SCORES, RELATED, 0.7, 3, duplicate_cosine=0.85)]
    assert kept == [0, 1, 2]
    near = [index for index, _, _ in mmr_steps(SCORES, VECTORS, 0.7, 3, duplicate_cosine=0.85)]
    assert near == [0, 2, 1]  # a near-duplicate (cosine 0.99) still pays


def test_the_default_settings_keep_evidence_and_drop_only_near_repeats():
    from memvault.settings import RetrievalSettings

    settings = RetrievalSettings()
    picks = mmr_steps(RELATED_SCORES, RELATED, settings.mmr_lambda, 3, settings.mmr_duplicate_cosine)
    assert [index for index, _, _ in picks] == [0, 1, 2]
    picks = mmr_steps(SCORES, VECTORS, settings.mmr_lambda, 3, settings.mmr_duplicate_cosine)
    assert [index for index, _, _ in picks] == [0, 2, 1]
