"""Maximal marginal relevance: pick relevant memories that do not repeat each other."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any


def mmr_steps(scores: Sequence[float], vectors: Any, lambda_: float, k: int) -> Iterator[tuple[int, float, float]]:
    """Greedy MMR: at each step the candidate maximising λ·score − (1−λ)·max cosine to those chosen.

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
        value = lambda_ * relevance - (1.0 - lambda_) * max_sim
        value[chosen] = -np.inf
        best = int(np.argmax(value))  # argmax returns the first maximum: ties go to the lower index
        yield best, float(value[best]), float(max_sim[best])
        chosen[best] = True
        max_sim = np.maximum(max_sim, matrix @ matrix[best])

