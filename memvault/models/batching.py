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
    max_cells: int | None = None,
    workers: int = 1,
) -> np.ndarray:
    """Call `run` on batches of `items` sorted by length and return its rows in the order of `items`.

    Sorting first means each batch is padded only to the length of its own longest item, which
    for a mixed workload cuts most of the wasted compute on padding tokens. `max_cells` also caps a
    batch's padded size (rows x its longest length): short items share big batches, long ones get
    small batches whose activations stay in the CPU's cache. `workers` > 1 runs that many batches at
    once on threads, for a `run` that releases the GIL (onnxruntime does).
    """
    import numpy as np

    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    order = sorted(range(len(items)), key=lengths.__getitem__)
    batches = [[items[i] for i in batch] for batch in length_batches(order, lengths, batch_size, max_cells)]
    if workers > 1 and len(batches) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(workers, len(batches)), thread_name_prefix="memvault-batch") as pool:
            parts = list(pool.map(run, batches))
    else:
        parts = [run(batch) for batch in batches]
    sorted_rows = np.concatenate(parts, axis=0)
    rows = np.empty_like(sorted_rows)
    rows[np.asarray(order)] = sorted_rows
    return rows


def length_batches(order: Sequence[int], lengths: Sequence[int], batch_size: int,
                   max_cells: int | None = None) -> list[list[int]]:
    """Cut `order` (indices sorted by length, shortest first) into batches of at most `batch_size`
    indices and, when `max_cells` is given, at most `max_cells` rows x longest length (a single
    item longer than that still gets a batch of its own)."""
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        # Sorted: the item being added is the longest of its batch, so it sets the padded width.
        full = len(current) >= batch_size or (max_cells is not None and (len(current) + 1) * lengths[index] > max_cells)
        if current and full:
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    """Scale each row to unit length (float32); an all-zero row stays zero instead of becoming NaN."""
    import numpy as np

    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.maximum(norms, np.float32(1e-12))
