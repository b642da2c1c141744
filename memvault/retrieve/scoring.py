"""Scores that turn candidates into an order: relevance without a cross-encoder, recency, their mix.

Relevance with a cross-encoder is sigmoid(logit), a calibrated probability, so DESIGN's threshold of
0.35 means something. Without one, relevance comes from `fallback_relevance` below, whose scale
differs: the threshold chosen when none is set (`score_threshold` None, "auto") is then
`NO_RERANKER_THRESHOLD`. A threshold that is set, from any source, is used as given.
"""

from __future__ import annotations

import math

# Without a cross-encoder: relevance = sigmoid(DENSE_SLOPE * cosine + LEXICAL_SLOPE * lexical share
# + BIAS), where the lexical share is the candidate's BM25 over the best BM25 of this query (0 when
# the lexical lane did not find it). The slopes are a logistic fit of "is this candidate evidence" on
# half of LoCoMo (5 of 10 conversations); the other half scores the same (recall@10 0.711 there
# against 0.665 for the fused rank that was used before). The bias is raised from the fit's -8.2 to
# -5 so that relevance spreads over [0, 1] as a cross-encoder's does: at -8.2 good hits sit near
# 0.1-0.3 and recency (w 0.2) and MMR swamp them (LoCoMo recall@10 0.531); at -5: 0.730.
# So: the best lexical hit with cosine 0.5 scores 0.87; no shared word and cosine 0.2, 0.02.
# The cosine scale is all-MiniLM-L6-v2's (the default model); other embedders work, less calibrated.
DENSE_SLOPE = 4.5
LEXICAL_SLOPE = 4.7
BIAS = -5.0
FALLBACK_NAME = "cosine+bm25"
# With the fallback, this threshold drops clear junk only. A paraphrase that shares no word with the
# query scores 0.02-0.05 ("any pets?" / "Bob has two cats": cosine 0.26, 0.021; "favourite food" /
# "enjoys spicy Thai curry": 0.40, 0.040), an unrelated memory 0.005-0.008 (cosine -0.06-0.04).
# 0.05 would cut the paraphrases; 0.015 keeps them (cosine >= 0.18 or any shared word passes).
# DESIGN's 0.35 is for sigmoid(cross-encoder logit), so it is chosen only with a cross-encoder.
NO_RERANKER_THRESHOLD = 0.015
CROSS_ENCODER_THRESHOLD = 0.35


def recency(age_days: float, days: float = 30.0) -> float:
    """exp(-age / days): 1 for a memory written now, 0.37 after `days`. Future times count as now."""
    if days <= 0:
        return 0.0
    return math.exp(-max(age_days, 0.0) / days)


def combine(relevance: float, recency_score: float, w: float) -> float:
    """(1 - w) * relevance + w * recency: DESIGN s6 step 5."""
    return (1.0 - w) * relevance + w * recency_score


def fallback_relevance(cosine: float, lexical_share: float) -> float:
    """Relevance in (0, 1) without a cross-encoder, from the dense cosine and the lexical share
    (this candidate's BM25 / the query's best BM25, 0 if the lexical lane missed it); see above."""
    x = DENSE_SLOPE * cosine + LEXICAL_SLOPE * min(max(lexical_share, 0.0), 1.0) + BIAS
    return 1.0 / (1.0 + math.exp(-x))


def threshold_for(configured: float | None, has_reranker: bool) -> float:
    """The threshold to apply: the configured one if any (whatever its value), else the one chosen for
    the relevance model. Telling "set" from "unset" by comparing with the default would replace a
    deliberate 0.35 without a cross-encoder."""
    if configured is not None:
        return configured
    return CROSS_ENCODER_THRESHOLD if has_reranker else NO_RERANKER_THRESHOLD
