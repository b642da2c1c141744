"""The lexical lane's rank: FTS5's BM25, column-weighted, and the same formula with each word's share of
the rows given rather than counted.

FTS5's `bm25()` counts, once per query, the rows that hold each phrase (a walk of the phrase's whole
list of rows): ~9 ms for a word in 150,000 rows of an index of 1M, 24 ms for a query of common words.
A bounded walk (index.queries) ranks only the newest matches of such words, so `memvault_bm25` takes each
phrase's share of the rows as estimated from those matches, and is otherwise FTS5's formula (k1 1.2,
b 0.75, the inverse document frequency floored at 1e-6): given the counted shares it gives bm25's scores.
"""

from __future__ import annotations

import math
from typing import Any

from memvault.index.text import CONTEXT_WEIGHT, DATE_WEIGHT

# body, context, date: a turn's context and the date it was written count less than its own words.
COLUMN_WEIGHTS = (1.0, CONTEXT_WEIGHT, DATE_WEIGHT)
K1, B = 1.2, 0.75
FUNCTION_NAME = "memvault_bm25"
GIVEN_NAME = "memvault_bm25_given"
ROW_SIZE = "memvault_row_size"  # (entries_fts, 0): a row's tokens; (entries_fts, 1): "[rows, tokens]" of the table


def fts5_bm25() -> str:
    """FTS5's own rank expression for `entries_fts` (lower is better)."""
    return "bm25(entries_fts, " + ", ".join(f"{weight:g}" for weight in COLUMN_WEIGHTS) + ")"


def bm25_of_shares(shares: tuple[float, ...]) -> str:
    """The rank expression (lower is better) for phrases holding these shares of the rows, in order."""
    return f"{FUNCTION_NAME}(entries_fts" + "".join(f", {float(share)!r}" for share in shares) + ")"


def bm25_given(rows: int, mean_length: float, holding: tuple[int, ...]) -> str:
    """The rank expression (lower is better) of a table that holds part of the rows ranked: FTS5's bm25
    as if the table held `rows` rows of this mean length, the phrases in `holding` of them, in order (a
    past's view ranks today's rows and its own small index's as the past's whole index would)."""
    return f"{GIVEN_NAME}(entries_fts, {int(rows)}, {float(mean_length)!r}" + "".join(
        f", {int(count)}" for count in holding) + ")"


def register(conn: Any) -> None:
    """Make `memvault_bm25` and `memvault_bm25_given` callable on this connection."""
    conn.register_fts5_function(FUNCTION_NAME, _bm25_of_shares)
    conn.register_fts5_function(GIVEN_NAME, _bm25_given)
    conn.register_fts5_function(ROW_SIZE, _row_size)


def _row_size(api: Any, whole: int) -> int | str:
    if whole:
        return f"[{api.row_count}, {api.column_total_size(-1)}]"
    return api.column_size(-1)


def _bm25_of_shares(api: Any, *shares: float) -> float:
    if api.aux_data is None:  # once per query: the rows' mean length and each phrase's weight
        rows = max(api.row_count, 1)
        idfs = [_idf(rows, share * rows) for share in shares]
        idfs += [_idf(rows, 0.0)] * (api.phrase_count - len(idfs))
        api.aux_data = (api.column_total_size(-1) / rows, idfs)
    return _score(api)


def _bm25_given(api: Any, rows: int, mean_length: float, *holding: int) -> float:
    if api.aux_data is None:
        rows = max(int(rows), 1)
        idfs = [_idf(rows, float(count)) for count in holding]
        idfs += [_idf(rows, 0.0)] * (api.phrase_count - len(idfs))
        api.aux_data = (mean_length, idfs)
    return _score(api)


def _score(api: Any) -> float:
    """This row's score (negated: lower is better) from the query's (mean length, phrase weights)."""
    mean_length, idfs = api.aux_data
    length_part = K1 * (1 - B + B * api.column_size(-1) / mean_length) if mean_length else K1
    score = 0.0
    body_weight, context_weight, date_weight = COLUMN_WEIGHTS  # unrolled: this runs for every ranked row
    for phrase, idf in enumerate(idfs):
        body, context, date = api.phrase_locations(phrase)
        frequency = body_weight * len(body) + context_weight * len(context) + date_weight * len(date)
        if frequency:
            score += idf * frequency * (K1 + 1) / (frequency + length_part)
    return -score


def _idf(rows: int, holding: float) -> float:
    idf = math.log((rows - holding + 0.5) / (holding + 0.5))
    return idf if idf > 0 else 1e-6
