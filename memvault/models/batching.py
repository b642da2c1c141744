"""Run a model over many inputs in batches of similar length, then put the results back in order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np

Item = TypeVar("Item")


def in_length_batches(
    items: Sequence[Item],
    lengths: Sequence[int],
    batch_size: int,
    run: Callable[[list[Item]], np.ndarray],
) -> np.ndarray:
    """Call `run` on batches of `items` sorted by length and return its rows in the order of `items`.

    Sorting first means each batch is padded only to the length of its own longest item, which
    for a mixed workload cuts most of the wasted compute on padding tokens.
    """
    import numpy as np

    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    order = sorted(range(len(items)), key=lengths.__getitem__)
    parts = [run([items[i] for i in order[start : start + batch_size]]) for start in range(0, len(order), batch_size)]
    sorted_rows = np.concatenate(parts, axis=0)
    rows = np.empty_like(sorted_rows)
    rows[np.asarray(order)] = sorted_rows
    return rows


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Scale each row to unit length (float32); an all-zero row stays zero instead of becoming NaN."""
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, np.float32(1e-12))
