"""Scores that turn candidates into an order: relevance without a cross-encoder, recency, their mix.

Relevance with a cross-encoder is sigmoid(logit), a calibrated probability, so the threshold of
0.35 means something. Without one, relevance comes from `fallback_relevance` below, whose scale
differs: the threshold chosen when none is set (`score_threshold` None, "auto") is then
`NO_RERANKER_THRESHOLD`. A threshold that is set, from any source, is used as given.
"""

from __future__ import annotations

import math

# Without a cross-encoder: relevance = sigmoid(DENSE_SLOPE * cosine + LEXICAL_SLOPE * lexical share
# + DAY_SLOPE * day share + BIAS). The lexical share is the candidate's BM25 over the best BM25 of this
# query (0 when the lexical lane did not find it); the day share is the best lexical share among the
# entries of the candidate's conversation written the same (UTC) day as it: a question names what an
# exchange was about, and the other turns of that exchange are likelier answers than a stray match.
# The slopes are a logistic fit of "is this candidate evidence" on LoCoMo conversations 0-4; the
# bias was then chosen on the same five from -7.5, -6.7, -6, -5 (pipeline recall@10 0.765, 0.769,
# 0.771, 0.760), and is above the fit's -9.7 so that relevance spreads over [0, 1] as a
# cross-encoder's does (too low, and recency (w 0.2) and MMR swamp good hits). On the held-out
# conversations 5-9: recall@10 0.729 -> 0.739, recall@5 0.634 -> 0.652 against cosine + lexical
# share alone (4.5, 4.7, -5). So: the best lexical hit with cosine 0.5 scores 0.92; no shared word
# and cosine 0.2, 0.006.
# The cosine scale is all-MiniLM-L6-v2's (the default model); other embedders work, less calibrated.
DENSE_SLOPE = 4.14
LEXICAL_SLOPE = 3.82
DAY_SLOPE = 2.52
BIAS = -6.0
FALLBACK_NAME = "cosine+bm25+day"
# With the fallback, this threshold drops clear junk only. A paraphrase that shares no word with the
# query scores 0.007-0.013 ("any pets?" / "Bob has two cats": cosine 0.26, 0.0072; "favourite food" /
# "enjoys spicy Thai curry": 0.40, 0.013), an unrelated memory 0.002-0.003 (cosine -0.06-0.04).
# 0.005 keeps the paraphrases (cosine >= 0.17, or any shared word, passes).
# 0.35 (docs/architecture.md, Retrieval, step 5) is for sigmoid(cross-encoder logit): chosen only with one.
NO_RERANKER_THRESHOLD = 0.005
CROSS_ENCODER_THRESHOLD = 0.35


def recency(age_days: float, days: float = 30.0) -> float:
    """exp(-age / days): 1 for a memory written now, 0.37 after `days`. Future times count as now."""
    if days <= 0:
        return 0.0
    return math.exp(-max(age_days, 0.0) / days)


def combine(relevance: float, recency_score: float, w: float) -> float:
    """(1 - w) * relevance + w * recency: docs/architecture.md, Retrieval, step 6."""
    return (1.0 - w) * relevance + w * recency_score


def fallback_relevance(cosine: float, lexical_share: float, day_share: float | None = None) -> float:
    """Relevance in (0, 1) without a cross-encoder, from the dense cosine, the lexical share (this
    candidate's BM25 / the query's best BM25, 0 if the lexical lane missed it) and the day share (the
    best lexical share of its conversation's entries that day; at least its own, which is the default)."""
    lexical_share = _unit_interval(lexical_share)
    day_share = lexical_share if day_share is None else max(_unit_interval(day_share), lexical_share)
    x = DENSE_SLOPE * cosine + LEXICAL_SLOPE * lexical_share + DAY_SLOPE * day_share + BIAS
    return 1.0 / (1.0 + math.exp(-x))


def _unit_interval(value: float) -> float:
    return min(max(value, 0.0), 1.0)


def threshold_for(configured: float | None, has_reranker: bool) -> float:
    """The threshold to apply: the configured one if any (whatever its value), else the one chosen for
    the relevance model. Telling "set" from "unset" by comparing with the default would replace a
    deliberate 0.35 without a cross-encoder."""
    if configured is not None:
        return configured
    return CROSS_ENCODER_THRESHOLD if has_reranker else NO_RERANKER_THRESHOLD
