"""Scores that turn candidates into an order: relevance without a cross-encoder, recency, their mix.

Relevance with a cross-encoder is sigmoid(logit), a calibrated probability, so the threshold of
0.35 means something. Without one, relevance comes from `fallback_relevance` below, whose scale
differs: the threshold chosen when none is set (`score_threshold` None, "auto") is then
`NO_RERANKER_THRESHOLD`. A threshold that is set, from any source, is used as given.
"""

from __future__ import annotations

import math
import statistics

from memvault.index.text import normalise

# Without a cross-encoder: relevance = sigmoid(DENSE_SLOPE * cosine + LEXICAL_SLOPE * lexical share
# + DAY_SLOPE * day share + LENGTH_SLOPE * longer + OTHER_SPEAKER_SLOPE * [another speaker's words]
# + NEIGHBOUR_SLOPE * neighbours' cosine + BIAS).
# - lexical share: the candidate's BM25 over the best BM25 of this query (0 when it shares no word
#   with the query; a candidate below the lexical lane's depth keeps its BM25);
# - day share: the best lexical share among the candidates of the candidate's conversation written
#   the same (UTC) day: a question names what an exchange was about, and the other turns of that
#   exchange are likelier answers than a stray match;
# - longer: log(1 + words) of the candidate minus the median of that over the query's candidates.
#   BM25 (FTS5's b = 0.75, fixed) and a mean-pooled embedding both favour short texts, while the
#   turns that answer questions are the longer ones that carry news ("Yes! So fun." answers nothing):
#   this gives it back. Against the other candidates, not a fixed length, so that a vault of short
#   facts keeps its relevance scale (and recency its weight);
# - another speaker: when the query names who said some candidates (their `actor_id`, the `name`
#   a message was sent with), the words of the others. "What did Caroline research?" is about
#   what Caroline said; on LoCoMo 96% of the evidence of a question naming one speaker is theirs;
# - neighbours' cosine: the best cosine of the query to the turns just before and after the
#   candidate the same day (its own cosine when it has none): "I've had them for 3 years now!"
#   answers "When did Nate get his turtles?" because the turn before it is about the turtles.
# The slopes are a pairwise logistic fit (RankNet: "this evidence candidate above that other one",
# over every such pair of a question's candidates, top 30 of each lane) on LoCoMo conversations 0-4;
# a pointwise fit of "is evidence" weighs the many easy negatives and left the neighbours' cosine
# at +0.003 recall@10 (docs/figures.md). The bias was then chosen on 0-4 from -10 to -4 (step 0.25)
# for recall@10 + recall@5 / 2 with the threshold, recency and MMR of the default pipeline; it keeps
# relevance spread over [0, 1] as a cross-encoder's is, so recency (w 0.05) stays a tie-breaker.
# Held out (5-9): recall@5 0.709 -> 0.717, recall@10 0.777 -> 0.796. So: the best lexical hit of
# median length with cosine 0.5 (its neighbours too) scores 0.95; no shared word and cosine 0.2, 0.0035.
# The cosine scale is all-MiniLM-L6-v2's (the default model); other embedders work, less calibrated.
DENSE_SLOPE = 3.76
LEXICAL_SLOPE = 4.06
DAY_SLOPE = 2.41
LENGTH_SLOPE = 1.44
OTHER_SPEAKER_SLOPE = -2.38
NEIGHBOUR_SLOPE = 3.01
BIAS = -7.0
FALLBACK_NAME = "cosine+bm25+day+length+speaker+neighbours"
# With the fallback, the threshold drops clear junk only: it sees the relevance of a candidate's own
# cosine and words (no day, length or speaker term; its own cosine stands for its neighbours'), and
# passes what a cosine of PARAPHRASE_COSINE alone reaches. A paraphrase that shares no word with the
# query has cosine 0.26-0.40 ("any pets?" / "Bob has two cats": 0.26; "favourite food" / "enjoys spicy
# Thai curry": 0.40), an unrelated memory -0.06-0.04: so paraphrases are kept, and any shared word adds
# to the cosine.
PARAPHRASE_COSINE = 0.17
CROSS_ENCODER_THRESHOLD = 0.35


def recency(age_days: float, days: float = 30.0) -> float:
    """exp(-age / days): 1 for a memory written now, 0.37 after `days`. Future times count as now."""
    if days <= 0:
        return 0.0
    return math.exp(-max(age_days, 0.0) / days)


def combine(relevance: float, recency_score: float, w: float) -> float:
    """(1 - w) * relevance + w * recency: docs/architecture.md, Retrieval, step 6."""
    return (1.0 - w) * relevance + w * recency_score


def fallback_relevance(cosine: float, lexical_share: float, day_share: float | None = None, longer: float = 0.0,
                       other_speaker: bool = False, neighbour_cosine: float | None = None) -> float:
    """Relevance in (0, 1) without a cross-encoder, from the dense cosine, the lexical share (this
    candidate's BM25 / the query's best BM25, 0 if it shares no word with the query), the day share (the
    best lexical share of its conversation's candidates that day; at least its own, which is the
    default), how much longer it is than the other candidates (`length_excess`), whether it is the word
    of another speaker than the one the query names, and the best cosine of the turns next to it (its
    own cosine by default)."""
    lexical_share = _unit_interval(lexical_share)
    day_share = lexical_share if day_share is None else max(_unit_interval(day_share), lexical_share)
    neighbour_cosine = cosine if neighbour_cosine is None else neighbour_cosine
    x = (DENSE_SLOPE * cosine + LEXICAL_SLOPE * lexical_share + DAY_SLOPE * day_share + LENGTH_SLOPE * longer
         + OTHER_SPEAKER_SLOPE * other_speaker + NEIGHBOUR_SLOPE * neighbour_cosine + BIAS)
    return 1.0 / (1.0 + math.exp(-x))


def length_excess(texts: list[str]) -> list[float]:
    """Per text, log(1 + its words) minus the median of that over all of them."""
    logs = [math.log1p(len(text.split())) for text in texts]
    if not logs:
        return []
    middle = statistics.median(logs)  # once: per text, it made a search of n candidates cost n sorts
    return [value - middle for value in logs]


def named_actors(query: str, actors: set) -> set[str]:
    """The actors (who said an entry: its `actor_id`) that the query names by their words."""
    words = f" {normalise(query)} "
    return {actor for actor in actors if isinstance(actor, str) and normalise(actor)
            and f" {normalise(actor)} " in words}


def _unit_interval(value: float) -> float:
    return min(max(value, 0.0), 1.0)


# The gate of a paraphrase: what the cosine PARAPHRASE_COSINE alone reaches (search._relevance's gate).
NO_RERANKER_THRESHOLD = fallback_relevance(PARAPHRASE_COSINE, 0.0)


def threshold_for(configured: float | None, has_reranker: bool) -> float:
    """The threshold to apply: the configured one if any (whatever its value), else the one chosen for
    the relevance model. Telling "set" from "unset" by comparing with the default would replace a
    deliberate 0.35 without a cross-encoder."""
    if configured is not None:
        return configured
    return CROSS_ENCODER_THRESHOLD if has_reranker else NO_RERANKER_THRESHOLD
