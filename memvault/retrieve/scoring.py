"""Scores that turn candidates into an order: relevance without a cross-encoder, recency, their mix.

Relevance with a cross-encoder is sigmoid(logit), a calibrated probability, so DESIGN's threshold of
0.35 means something. Without one, relevance comes from `fallback_relevance` below; its scale is not
a probability, so the threshold that applies by default is `NO_RERANKER_THRESHOLD` instead.
"""

from __future__ import annotations

import math

# With no cross-encoder the untouched default threshold (0.35, meant for sigmoid scores) would drop
# good hits; this one keeps every fused candidate. An explicit, different threshold is honoured.
NO_RERANKER_THRESHOLD = 0.0
FALLBACK_NAME = "fused-rank"


def recency(age_days: float, days: float = 30.0) -> float:
    """exp(-age / days): 1 for a memory written now, 0.37 after `days`. Future times count as now."""
    if days <= 0:
        return 0.0
    return math.exp(-max(age_days, 0.0) / days)


def combine(relevance: float, recency_score: float, w: float) -> float:
    """(1 - w) * relevance + w * recency: DESIGN s6 step 5."""
    return (1.0 - w) * relevance + w * recency_score


def fallback_relevance(fused: float, ceiling: float) -> float:
    """Relevance in [0, 1] when no cross-encoder is configured: the fused RRF score over its ceiling.

    1.0 is first in every lane; first in one of two equally weighted lanes is 0.5. It keeps the fused
    order (which on LoCoMo beats each lane alone) and needs no per-model calibration of cosines or
    BM25 scores, which have no common scale. Measured on LoCoMo (3 of 10 conversations, 383
    questions, MMR off): evidence recall@5 0.524 against 0.386 for the dense cosine and 0.464 for a
    half-and-half blend of the two. Its spread is narrow (0.8-1.0 for hits in both lanes), so MMR at
    λ 0.7 costs it about 0.05 recall@5 there: without a cross-encoder a λ near 1 suits it better.
    """
    if ceiling <= 0:
        return 0.0
    return min(max(fused / ceiling, 0.0), 1.0)


def threshold_for(configured: float, default: float, has_reranker: bool) -> float:
    """The threshold to apply: the configured one, except the untouched default without a reranker."""
    if not has_reranker and configured == default:
        return NO_RERANKER_THRESHOLD
    return configured
