"""Maximal marginal relevance: pick relevant memories that do not repeat each other."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any


def mmr_steps(scores: Sequence[float], vectors: Any, lambda_: float, k: int,
              duplicate_cosine: float = 0.0) -> Iterator[tuple[int, float, float]]:
    """Greedy MMR: at each step the candidate maximising λ·score − (1−λ)·redundancy, where redundancy
    is its max cosine to those already chosen when that reaches `duplicate_cosine`, else 0.

    With `duplicate_cosine` 0 this is textbook MMR. Above it, only a near-repeat of something already
    chosen pays: two turns about the same trip are both evidence, and pushing the second one out for
    a stray but "different" memory loses recall (memvault.settings, retrieval.mmr_duplicate_cosine).

    `vectors` is an (n, d) array-like, one row per score (normalised here). Yields
    (index, mmr value, max cosine to already chosen) in pick order, at most `k` times. Ties go to
    the lower index, so callers sort candidates best first for a stable result.
    """
    import numpy as np

    n = len(scores)
    if n == 0 or k <= 0:
        return
    matrix = np.asarray(vectors, dtype=np.float32).reshape(n, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = matrix / np.where(norms == 0, 1.0, norms)
    relevance = np.asarray(scores, dtype=np.float64)
    max_sim = np.zeros(n)  # nothing chosen yet: no redundancy penalty on the first pick
    chosen = np.zeros(n, dtype=bool)
    for _ in range(min(k, n)):
        redundancy = np.where(max_sim >= duplicate_cosine, max_sim, 0.0)
        value = lambda_ * relevance - (1.0 - lambda_) * redundancy
        value[chosen] = -np.inf
        best = int(np.argmax(value))  # argmax returns the first maximum: ties go to the lower index
        yield best, float(value[best]), float(max_sim[best])
        chosen[best] = True
        max_sim = np.maximum(max_sim, matrix @ matrix[best])
