"""Weighted reciprocal rank fusion: one ranking from several, using ranks only (scores differ in scale)."""

from __future__ import annotations


def rrf(lists: list[tuple[list[int], float]], k: int = 60) -> list[tuple[int, float]]:
    """Fuse rankings: score(id) = sum over lists of weight / (k + rank), rank counted from 1.

    `lists` holds (rowids best first, weight) pairs. Returns (rowid, score), best first; ties keep
    the order in which ids were first met, so the result is deterministic.
    """
    if k < 0:
        raise ValueError("rrf k must be >= 0")
    scores: dict[int, float] = {}
    for ranking, weight in lists:
        for rank, rowid in enumerate(ranking, start=1):
            scores[rowid] = scores.get(rowid, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])

