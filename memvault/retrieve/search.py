"""Search: docs/architecture.md, Retrieval, steps 1-7 glued to the index (lanes → fusion → relevance →
threshold → recency → MMR).

Lanes (Retrieval, step 2): every conversation searched gets its own dense and lexical lanes of
`top_k * candidate_multiplier` candidates, so a large `global` cannot crowd the conversation out;
all lanes are then fused by one weighted RRF (a conversation's first hit ties with global's first).
`conversations` is taken literally; `conversations_for(name)` gives the usual [name, "global"].
"""

from __future__ import annotations

import json
import threading
import weakref
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from memvault.errors import EmbeddingError, UsageError
from memvault.retrieve.filters import and_where, compile_filter, scope_where
from memvault.retrieve.fusion import rrf
from memvault.retrieve.mmr import mmr_steps
from memvault.retrieve.scoring import (
    FALLBACK_NAME,
    combine,
    fallback_relevance,
    length_excess,
    named_actors,
    recency,
    threshold_for,
)
from memvault.settings import RetrievalSettings
from memvault.vault.format.layout import GLOBAL

DAY = 86400.0


@dataclass
class Hit:
    """One retrieved memory with every score that placed it; `explain` keeps each stage's numbers."""

    id: str
    rowid: int
    text: str
    role: str
    conversation_id: str
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, Any]
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    dense: float  # cosine of the query and the memory (computed for every candidate)
    lexical: float | None  # BM25, higher better; None when the lexical lane did not find it
    fused: float  # weighted RRF score
    relevance: float  # cross-encoder probability, or the fallback without one
    recency: float
    total: float  # (1 - w) * relevance + w * recency: what the threshold-passing order and MMR use
    rank: int  # 1-based position in the final list
    explain: dict[str, Any] = field(default_factory=dict)
    triple: dict[str, str] | None = None  # a fact's category, subject, predicate, object, evidence (if it has them)
    vault_name: str | None = None  # where it was found, with team vaults (core.shared): "personal" or a name

    @property
    def score(self) -> float:
        """The score surfaces show (mem0's `score`)."""
        return self.total

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: times as ISO 8601."""
        data = asdict(self)
        data["created_at"] = self.created_at.isoformat()
        data["updated_at"] = self.updated_at.isoformat()
        data["vault"] = data.pop("vault_name")  # --json's key: which vault it came from
        return data


@dataclass(frozen=True)
class OwnerReach:
    """Beyond the conversations searched: entries of `roles` in the owner's other conversations, where
    `scopes` (vault.format.layout.owner_scopes: field -> value, None for "not set") all match. Memory follows
    its owner; another user's conversations stay out (docs/architecture.md, Memory follows its owner)."""

    scopes: dict[str, str | None]
    roles: tuple[str, ...] = ("memory",)

    def where(self, conversations: list[str]) -> tuple[str, list]:
        parts = [f"e.role IN ({', '.join('?' * len(self.roles))})",
                 f"e.conversation_id NOT IN ({', '.join('?' * len(conversations))})"]
        params: list = [*self.roles, *conversations]
        for key, value in self.scopes.items():
            if key not in ("user_id", "agent_id", "run_id"):
                raise UsageError(f"unknown scope {key!r}")
            parts.append(f"e.{key} IS NULL" if value is None else f"e.{key} = ?")
            params.extend([] if value is None else [value])
        return " AND ".join(parts), params


def conversations_for(conversation: str | None) -> list[str] | None:
    """The conversations one search looks in: the one asked for and `global`; None means all."""
    if conversation is None:
        return None
    return [conversation] if conversation == GLOBAL else [conversation, GLOBAL]


# Query vectors kept per embedder, by text: a question asked again (a client's retry, an agent that
# recalls the same thing each turn, the proxy's concurrent clients) skips the model, which is most of
# a search's CPU. 1,024 vectors of 384 floats are 1.5 MB.
QUERY_CACHE_SIZE = 1024
_query_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # embedder -> LRUCache(text -> vector)
_query_cache_lock = threading.Lock()  # LRUCache is not thread-safe: even a read reorders it


def embed_query(embedder: Any, query: str) -> Any:
    """The query's vector, as a flat read-only float32 array (cached by text, per embedder)."""
    import numpy as np
    from cachetools import LRUCache  # here, not at the top: `memvault --help` imports this module

    text = query.strip()
    with _query_cache_lock:
        cache = _query_cache.setdefault(embedder, LRUCache(QUERY_CACHE_SIZE))
        vector = cache.get(text)
    if vector is not None:
        return vector
    vector = np.asarray(embedder.embed([text], kind="query"), dtype=np.float32).reshape(-1)
    vector.setflags(write=False)  # shared by every caller that asks the same
    with _query_cache_lock:
        cache[text] = vector
    return vector


def search(
    index: Any,
    embedder: Any,
    reranker: Any,
    query: str,
    settings: RetrievalSettings,
    conversations: list[str] | None,
    scopes: dict | None = None,
    filters: dict | None = None,
    now: datetime | None = None,
    query_vector: Any = None,
    owner: OwnerReach | None = None,
) -> list[Hit]:
    """The best `settings.top_k` memories for `query`, best first.

    `conversations` None searches all; `scopes` (user_id / agent_id / run_id) must all match;
    `filters` is a mem0 filter expression applied inside the SQL. `reranker` may be None.
    `query_vector`: the query already embedded (by `embed_query`), else it is embedded here.
    `owner`: also the owner's entries in every other conversation, in lanes of their own.
    """
    import numpy as np

    if not isinstance(query, str) or not query.strip():
        raise UsageError("search query is empty")
    if settings.top_k < 1 or settings.candidate_multiplier < 1:
        raise UsageError("top_k and candidate_multiplier must be at least 1")
    query = query.strip()
    where, params = and_where(scope_where(conversations, scopes), compile_filter(filters))
    qvec = embed_query(embedder, query) if query_vector is None else query_vector

    lanes = _lanes(index, qvec, query, settings, conversations, where, params)
    if owner is not None and conversations is not None:  # searching all conversations already covers them
        lanes += _lanes(index, qvec, query, settings, None, *and_where(owner.where(conversations),
                                                                       compile_filter(filters)), scope="owner")
    fused = rrf([(lane.rowids, lane.weight) for lane in lanes], settings.rrf_k)
    rows = index.rows([rowid for rowid, _ in fused]) if fused else {}
    fused = [(rowid, score) for rowid, score in fused if rowid in rows]  # a row deleted meanwhile
    if not fused:
        return []
    rowids = [rowid for rowid, _ in fused]
    vectors = index.vectors(rowids)
    dims = qvec.shape[0]
    matrix = np.stack([_unit(vectors.get(rowid), dims) for rowid in rowids])
    cosines = matrix @ _unit(qvec, dims)

    explain = {rowid: _lane_explain(lanes, rowid) for rowid in rowids}
    relevances, gates, source, features = _relevance(reranker, query, rows, rowids, cosines, lanes, index, qvec)
    for rowid, feature in zip(rowids, features, strict=True):
        explain[rowid].update(feature)
    threshold = threshold_for(settings.score_threshold, reranker is not None)
    now_epoch = (now or datetime.now(UTC)).timestamp()

    kept: list[_Candidate] = []
    for position, ((rowid, fused_score), relevance, gate) in enumerate(zip(fused, relevances, gates, strict=True)):
        if gate < threshold:
            continue
        age = (now_epoch - _freshest(rows[rowid])) / DAY
        fresh = recency(age, settings.recency_days)
        total = combine(relevance, fresh, settings.recency_weight)
        explain[rowid].update(
            fused_rank=position + 1, fused=fused_score, relevance_source=source, relevance=relevance, gate=gate,
            threshold=threshold, age_days=age, recency=fresh, recency_weight=settings.recency_weight, total=total,
        )
        kept.append(_Candidate(rowid, position, fused_score, relevance, fresh, total))
    kept.sort(key=lambda c: -c.total)  # stable: the fused order breaks ties

    hits = []
    picks = mmr_steps([c.total for c in kept], matrix[[c.position for c in kept]], settings.mmr_lambda, settings.top_k,
                      settings.mmr_duplicate_cosine)
    for rank, (pick, value, max_sim) in enumerate(picks, start=1):
        chosen = kept[pick]
        info = explain[chosen.rowid]
        info.update(mmr_lambda=settings.mmr_lambda, mmr_duplicate_cosine=settings.mmr_duplicate_cosine,
                    mmr_max_similarity=max_sim, mmr=value, rank=rank)
        hits.append(_hit(rows[chosen.rowid], chosen, float(cosines[chosen.position]), rank, info))
    return hits


@dataclass
class _Candidate:
    rowid: int
    position: int  # in the fused list, which indexes `matrix` and `cosines`
    fused: float
    relevance: float
    recency: float
    total: float


@dataclass
class _Lane:
    kind: str  # "dense" or "lexical"
    scope: str  # a conversation name, "*" when searching all, "owner" for the owner's other conversations
    weight: float
    rowids: list[int]
    scores: list[float]

    @classmethod
    def of(cls, kind: str, scope: str, weight: float, found: list[tuple[int, float]]) -> _Lane:
        return cls(kind, scope, weight, [rowid for rowid, _ in found], [float(score) for _, score in found])


def _lanes(index, qvec, query, settings, conversations, where, params, scope: str = "*") -> list[_Lane]:
    """Dense and lexical candidates, once per conversation searched (or once over all, named `scope`).

    The lexical lanes of all conversations come from one walk of the FTS matches; each dense lane asks
    its conversation's partition (index.nearest), and is confined to it by the filter too."""
    everywhere = scope
    n = settings.top_k * settings.candidate_multiplier
    names = None if conversations is None else list(dict.fromkeys(conversations))
    lexical = index.lexical_scopes(query, n, where, params, names) if settings.lexical_weight > 0 else None
    lanes = []
    for position, name in enumerate([None] if names is None else names):
        scope = everywhere if name is None else name
        if settings.dense_weight > 0:  # a lane switched off is not queried at all
            scope_sql, scope_params = (where, params) if name is None else (
                f"({where}) AND e.conversation_id = ?", [*params, name])
            found = index.nearest(qvec, n, scope_sql, tuple(scope_params), conversation=name)
            lanes.append(_Lane.of("dense", scope, settings.dense_weight, found))
        if lexical is not None:
            lanes.append(_Lane.of("lexical", scope, settings.lexical_weight, lexical[position]))
    return lanes


def _lane_explain(lanes: list[_Lane], rowid: int) -> dict[str, Any]:
    info: dict[str, Any] = {"dense_rank": None, "dense": None, "lexical_rank": None, "lexical": None}
    for lane in lanes:
        if rowid in lane.rowids:
            position = lane.rowids.index(rowid)
            info.update({"scope": lane.scope, f"{lane.kind}_rank": position + 1, lane.kind: lane.scores[position]})
    return info


def _relevance(reranker, query, rows, rowids, cosines, lanes, index, qvec) -> tuple[list[float], list[float], str,
                                                                                 list[dict]]:
    """(relevances, gates, source, features): cross-encoder probabilities when one is configured, else
    the fallback from the cosine, BM25, the day, the length, the speaker and the neighbouring turns
    (scoring.py). The gate is what the threshold sees: without a cross-encoder, the relevance from the
    candidate's own cosine and words, so that an unrelated memory written the same day as a good hit is
    not lifted over the threshold by its day. `features`: per candidate, what the fallback saw (for
    `explain`; empty with a cross-encoder)."""
    if reranker is None:
        shares = _lexical_shares(lanes, index, query, rowids)
        days = _day_shares(rows, shares)
        named = named_actors(query, {_actor(rows[rowid]) for rowid in rowids})
        longer = length_excess([rows[rowid]["text"] for rowid in rowids])
        around = _neighbour_cosines(index, qvec, rowids, cosines)
        relevances, gates, features = [], [], []
        for rowid, cosine, excess, neighbour in zip(rowids, cosines, longer, around, strict=True):
            row, share = rows[rowid], shares.get(rowid, 0.0)
            actor = _actor(row)
            feature = {"lexical_share": share, "day_share": max(days.get(_day(row), 0.0), share), "longer": excess,
                       "other_speaker": bool(named) and bool(actor) and actor not in named,
                       "neighbour_cosine": neighbour}
            relevances.append(fallback_relevance(float(cosine), share, feature["day_share"], excess,
                                                 feature["other_speaker"], neighbour))
            gates.append(fallback_relevance(float(cosine), share))
            features.append(feature)
        return relevances, gates, FALLBACK_NAME, features
    scores = [float(s) for s in reranker.score(query, [rows[r]["text"] for r in rowids])]
    if len(scores) != len(rowids) or not all(0.0 <= s <= 1.0 for s in scores):
        raise EmbeddingError(f"reranker gave {len(scores)} scores for {len(rowids)} texts, or scores outside [0, 1]")
    return scores, scores, "cross-encoder", [{} for _ in rowids]


def _actor(row: dict) -> str | None:
    """Who said an entry (its actor_id), or None: a hand-written `metadata: {actor_id: [...]}` names no one."""
    actor = row["metadata"].get("actor_id")
    return actor if isinstance(actor, str) else None


def _lexical_shares(lanes: list[_Lane], index, query: str, rowids: list[int]) -> dict[int, float]:
    """rowid -> its BM25 over the query's best BM25, for every candidate that shares a word with the
    query: a candidate the lexical lanes ranked below their depth (or only the dense lane found) keeps
    its words' weight instead of counting as none (LoCoMo 5-9, held out: recall@10 +0.004 alone). With
    the lexical lane switched off, nothing is looked up: no candidate has a share."""
    bm25 = lane_bm25(lanes)
    if bm25:
        bm25.update(index.lexical_of(query, [rowid for rowid in rowids if rowid not in bm25]))
    return relative(bm25)


def lane_bm25(lanes: list[_Lane]) -> dict[int, float]:
    """rowid -> its best BM25 in the lexical lanes (one FTS table: scores of different scopes share a scale)."""
    bm25: dict[int, float] = {}
    for lane in lanes:
        if lane.kind == "lexical":
            for rowid, score in zip(lane.rowids, lane.scores, strict=True):
                bm25[rowid] = max(score, bm25.get(rowid, score))
    return bm25


def relative(bm25: dict[int, float]) -> dict[int, float]:
    """Each score over the best (empty when there is no positive best)."""
    best = max(bm25.values(), default=0.0)
    return {rowid: score / best for rowid, score in bm25.items()} if best > 0 else {}


def _neighbour_cosines(index, qvec, rowids: list[int], cosines) -> list[float]:
    """Per candidate, the best cosine of the query to the turns just before and after it the same day
    (index.adjacent_turns); its own cosine when it has none (a fact, a summary, a lone turn). The turn
    that answers is often a short reply next to the one that names the thing asked about."""
    around = index.adjacent_turns(rowids)
    own = dict(zip(rowids, (float(c) for c in cosines), strict=True))
    missing = {n for found in around.values() for n in found if n not in own}
    if missing:
        query = _unit(qvec, qvec.shape[0])
        own.update((n, float(vector @ query)) for n, vector in index.vectors(missing).items())  # stored unit
    return [max((own[n] for n in around.get(rowid, ()) if n in own), default=own[rowid]) for rowid in rowids]


def _day_shares(rows: dict[int, dict], shares: dict[int, float]) -> dict[tuple[str, int], float]:
    """(conversation, day) -> the best lexical share among that day's candidates (scoring.DAY_SLOPE)."""
    best: dict[tuple[str, int], float] = {}
    for rowid, share in shares.items():
        if rowid in rows:
            key = _day(rows[rowid])
            best[key] = max(share, best.get(key, 0.0))
    return best


def _day(row: dict) -> tuple[str, int]:
    """The conversation and the UTC day (days since the epoch) an entry was written."""
    return row["conversation_id"], int(float(row.get("created_at") or 0.0) // DAY)


def _unit(vector, dims: int):
    import numpy as np

    if vector is None:  # no stored vector: a zero vector has no similarity and no MMR penalty
        return np.zeros(dims, dtype=np.float32)
    vector = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector


def _freshest(row: dict) -> float:
    """The time a memory was last written: an edit makes it fresh again."""
    return max(float(row.get("created_at") or 0.0), float(row.get("updated_at") or 0.0))


def _moment(epoch: Any) -> datetime:
    return datetime.fromtimestamp(float(epoch or 0.0), UTC)


def _metadata(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    try:
        data = json.loads(value) if value else {}
    except (TypeError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _hit(row: dict, chosen: _Candidate, dense: float, rank: int, info: dict) -> Hit:
    return Hit(
        id=row["id"], rowid=chosen.rowid, text=row["text"], role=row["role"], conversation_id=row["conversation_id"],
        created_at=_moment(row.get("created_at")), updated_at=_moment(row.get("updated_at") or row.get("created_at")),
        metadata=_metadata(row.get("metadata")), user_id=row.get("user_id"), agent_id=row.get("agent_id"),
        run_id=row.get("run_id"), dense=dense, lexical=info.get("lexical"), fused=chosen.fused,
        relevance=chosen.relevance, recency=chosen.recency, total=chosen.total, rank=rank, explain=info,
        triple=json.loads(row["triple"]) if row.get("triple") else None,
    )
