"""The order within the candidate pool, fitted on LoCoMo conversations 0-4 and measured on 5-9.

    python scripts/fit_locomo_order.py [--data ../shared/data/locomo/locomo10.json] [--dump pool.npz]

For every question (scripts/bench_locomo.py's protocol, its cached vault), the candidate pool the
default pipeline builds (both lanes of the conversation and `global`, fused) with each candidate's
features and whether it is evidence. Then, with no index and no model, each way of ordering that pool
is scored by recall@5 / @10 on both halves: the stages of the pipeline added one at a time (the
ablation), and the pairwise logistic fit of the relevance slopes (retrieve/scoring.py) on 0-4 beside a
pointwise one.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import pickle
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_locomo  # noqa: E402

from memvault.retrieve import scoring  # noqa: E402
from memvault.retrieve.filters import and_where, scope_where  # noqa: E402
from memvault.retrieve.fusion import rrf  # noqa: E402
from memvault.retrieve.mmr import mmr_steps  # noqa: E402
from memvault.settings import RetrievalSettings  # noqa: E402

search_mod = importlib.import_module("memvault.retrieve.search")  # the package exports a function of that name
FEATURES = ("cosine", "lexical_share", "day_share", "longer", "other_speaker", "neighbour_cosine", "recency", "fused",
            "dense_rr", "lexical_rr", "lane_share", "lane_day_share")
RELEVANCE = ("cosine", "lexical_share", "day_share", "longer", "other_speaker", "neighbour_cosine")


@dataclasses.dataclass
class Pool:
    """One question's candidates: features (n, len(FEATURES)), unit vectors, evidence labels."""

    sample: int
    category: int
    features: np.ndarray
    vectors: np.ndarray
    evidence: np.ndarray  # bool per candidate
    total_evidence: int  # evidence turns of the question (some may be outside the pool)
    days: np.ndarray  # per candidate, the day it was written (days since the epoch)
    turns: list  # per candidate, its dia_id ("D3:7": session 3, turn 7), None for other entries


def pools(data: Path, retrieval) -> list[Pool]:
    samples = bench_locomo.load(data)
    memvault = bench_locomo.open_vault(data, samples, rebuild=False)
    index, embedder = memvault.index(), memvault.embedder()
    settings = dataclasses.replace(retrieval, top_k=10)
    dia = {rowid: json.loads(meta or "{}").get("dia_id") for rowid, meta in
           index.conn.execute("SELECT rowid, metadata FROM entries")}
    found = []
    for number, sample in enumerate(samples):
        if not sample.questions:
            continue
        qvecs = np.asarray(embedder.embed([q.text for q in sample.questions], kind="query"), dtype=np.float32)
        conversations = search_mod.conversations_for(sample.name)
        where, params = and_where(scope_where(conversations, None))
        for question, qvec in zip(sample.questions, qvecs, strict=True):
            lanes = search_mod._lanes(index, qvec, question.text, settings, conversations, where, params)
            fused = rrf([(lane.rowids, lane.weight) for lane in lanes], settings.rrf_k)
            rows = index.rows([rowid for rowid, _ in fused])
            fused = [(rowid, score) for rowid, score in fused if rowid in rows]
            rowids = [rowid for rowid, _ in fused]
            vectors = index.vectors(rowids)
            matrix = np.stack([search_mod._unit(vectors.get(r), qvec.shape[0]) for r in rowids])
            cosines = matrix @ search_mod._unit(qvec, qvec.shape[0])
            _, _, _, feats = search_mod._relevance(None, question.text, rows, rowids, cosines, lanes, index, qvec)
            # before: a candidate below the lexical lane's depth had no share
            lane_shares = search_mod.relative(search_mod.lane_bm25(lanes))
            lane_days = search_mod._day_shares(rows, lane_shares)
            ranks = {kind: {} for kind in ("dense", "lexical")}
            for lane in lanes:
                for position, rowid in enumerate(lane.rowids, start=1):
                    ranks[lane.kind][rowid] = min(position, ranks[lane.kind].get(rowid, position))
            now = sample.now.timestamp()
            table = []
            for (rowid, fused_score), cosine, feat in zip(fused, cosines, feats, strict=True):
                age = (now - search_mod._freshest(rows[rowid])) / search_mod.DAY
                lane_share = lane_shares.get(rowid, 0.0)
                table.append([float(cosine), feat["lexical_share"], feat["day_share"], feat["longer"],
                              float(feat["other_speaker"]), feat["neighbour_cosine"],
                              scoring.recency(age, settings.recency_days), fused_score,
                              1.0 / (60 + ranks["dense"][rowid]) if rowid in ranks["dense"] else 0.0,
                              1.0 / (60 + ranks["lexical"][rowid]) if rowid in ranks["lexical"] else 0.0,
                              lane_share, max(lane_days.get(search_mod._day(rows[rowid]), 0.0), lane_share)])
            labels = np.array([dia.get(rowid) in question.evidence for rowid in rowids])
            days = np.array([search_mod._day(rows[rowid])[1] for rowid in rowids])
            found.append(Pool(number, question.category, np.array(table), matrix, labels, len(question.evidence),
                              days, [dia.get(rowid) for rowid in rowids]))
    memvault.close()
    return found


def logistic(x, w, b):
    return 1.0 / (1.0 + np.exp(-(x @ w + b)))


def fit(pools_: list[Pool], columns: list[int], l2: float = 1e-3, steps: int = 60) -> tuple[np.ndarray, float]:
    """Newton's method for the logistic regression of "is evidence" on the chosen feature columns."""
    x = np.concatenate([p.features[:, columns] for p in pools_])
    y = np.concatenate([p.evidence for p in pools_]).astype(float)
    design = np.hstack([x, np.ones((len(x), 1))])
    theta = np.zeros(design.shape[1])
    for _ in range(steps):
        prob = 1.0 / (1.0 + np.exp(-(design @ theta)))
        gradient = design.T @ (prob - y) + l2 * np.r_[theta[:-1], 0]
        hessian = (design * (prob * (1 - prob))[:, None]).T @ design + l2 * np.eye(len(theta))
        theta -= np.linalg.solve(hessian, gradient)
    return theta[:-1], float(theta[-1])


def fit_pairwise(pools_: list[Pool], columns: list[int], l2: float = 1.0, steps: int = 30) -> np.ndarray:
    """Newton's method for a pairwise logistic fit (RankNet): for every question, every pair of an
    evidence candidate and another candidate, P(evidence above) = sigmoid(w . (x_evidence - x_other)).
    No bias: a ranking has none (it is chosen afterwards, for the pipeline's threshold and recency)."""
    pairs = []
    for pool in pools_:
        x = pool.features[:, columns]
        good, other = x[pool.evidence], x[~pool.evidence]
        if len(good) and len(other):
            pairs.append((good[:, None, :] - other[None, :, :]).reshape(-1, len(columns)))
    diff = np.concatenate(pairs)
    theta = np.zeros(len(columns))
    for _ in range(steps):
        prob = 1.0 / (1.0 + np.exp(-(diff @ theta)))
        gradient = diff.T @ (prob - 1.0) + l2 * theta
        hessian = (diff * (prob * (1 - prob))[:, None]).T @ diff + l2 * np.eye(len(theta))
        theta -= np.linalg.solve(hessian, gradient)
    return theta


def mmr_order(scores: np.ndarray, vectors: np.ndarray, lambda_: float, k: int, floor: float) -> list[int]:
    return [index for index, _, _ in mmr_steps(scores, vectors, lambda_, k, floor)]


def recall(pools_: list[Pool], order_of) -> tuple[float, float]:
    at5, at10 = [], []
    for pool in pools_:
        order = order_of(pool)
        at5.append(pool.evidence[order[:5]].sum() / pool.total_evidence)
        at10.append(pool.evidence[order[:10]].sum() / pool.total_evidence)
    return float(np.mean(at5)), float(np.mean(at10))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=bench_locomo.DEFAULT_DATA)
    parser.add_argument("--dump", type=Path, help="keep the pools in this file (pickle) and reuse them if it exists")
    args = parser.parse_args()
    if args.dump and args.dump.exists():
        found = pickle.loads(args.dump.read_bytes())
    else:
        found = pools(args.data, RetrievalSettings())
        if args.dump:
            args.dump.write_bytes(pickle.dumps(found))
    fitted = [p for p in found if p.sample < 5]
    held = [p for p in found if p.sample >= 5]
    print(f"{len(found)} questions; the pool holds {np.mean([p.evidence.sum() / p.total_evidence for p in found]):.3f} "
          "of the evidence")
    report(fitted, held, found, RetrievalSettings())


# The relevance before the neighbours' cosine (2026-11-29): pointwise slopes, the lexical lanes' BM25 only.
BEFORE = {"cosine": 3.01, "lane_share": 4.35, "lane_day_share": 3.50, "longer": 1.32, "other_speaker": -2.19}
BEFORE_BIAS = -7.6


def report(fitted: list[Pool], held: list[Pool], everything: list[Pool], settings: RetrievalSettings) -> None:
    """The ablation: each stage of the default pipeline added in turn, and the choices it replaced."""
    col = {name: i for i, name in enumerate(FEATURES)}
    slopes = np.array([scoring.DENSE_SLOPE, scoring.LEXICAL_SLOPE, scoring.DAY_SLOPE, scoring.LENGTH_SLOPE,
                       scoring.OTHER_SPEAKER_SLOPE, scoring.NEIGHBOUR_SLOPE])
    relevance_columns = [col[c] for c in RELEVANCE]
    threshold = scoring.threshold_for(settings.score_threshold, False)
    gate_of = np.vectorize(scoring.fallback_relevance)

    def slopes_on(names_slopes: dict, bias: float):
        columns, weights = [col[c] for c in names_slopes], np.array(list(names_slopes.values()))
        return lambda pool: logistic(pool.features[:, columns], weights, bias)

    before = slopes_on(BEFORE, BEFORE_BIAS)
    renamed = {"lane_share": "lexical_share", "lane_day_share": "day_share"}
    every_bm25 = slopes_on({renamed.get(name, name): slope for name, slope in BEFORE.items()}, BEFORE_BIAS)

    def relevance(pool: Pool) -> np.ndarray:
        return logistic(pool.features[:, relevance_columns], slopes, scoring.BIAS)

    def passing(pool: Pool) -> np.ndarray:
        """The threshold's gate: the relevance of a candidate's own cosine and words (search._relevance)."""
        return gate_of(pool.features[:, col["cosine"]], pool.features[:, col["lexical_share"]]) >= threshold

    def ordered(score_of, gate=False, recency_weight=0.0, mmr=None):
        def order(pool: Pool) -> list[int]:
            total = (1 - recency_weight) * score_of(pool) + recency_weight * pool.features[:, col["recency"]]
            keep = np.argsort(-total, kind="stable")
            if gate:
                keep = keep[passing(pool)[keep]]
            if mmr is None:
                return list(keep)
            return [int(keep[i]) for i in mmr_order(total[keep], pool.vectors[keep], mmr[0], 10, mmr[1])]
        return order

    w, mmr = settings.recency_weight, (settings.mmr_lambda, settings.mmr_duplicate_cosine)
    rows = [
        ("dense alone (cosine top-k)", ordered(lambda p: p.features[:, col["cosine"]])),
        ("+ lexical lane, fused by RRF (the candidate pool, in fused order)",
         ordered(lambda p: p.features[:, col["fused"]])),
        ("+ relevance as before (cosine, the lexical lanes' words, day, length, speaker)", ordered(before)),
        ("+ every candidate's BM25 (slopes as before)", ordered(every_bm25)),
        ("+ neighbours' cosine, slopes fitted pairwise (the relevance now)", ordered(relevance)),
        (f"+ threshold ({threshold:.4f})", ordered(relevance, gate=True)),
        (f"+ recency (weight {w:g})", ordered(relevance, True, w)),
        (f"+ MMR (λ {mmr[0]:g}, near-duplicates only: cosine >= {mmr[1]:g}): **the default pipeline**",
         ordered(relevance, True, w, mmr)),
        ("default, recency 0", ordered(relevance, True, 0.0, mmr)),
        ("default, no MMR", ordered(relevance, True, w)),
        ("before: the relevance as before, threshold, recency, MMR", ordered(before, True, w, mmr)),
    ]
    print("| stage | fitted 0-4 R@5 | R@10 | held-out 5-9 R@5 | R@10 | all R@5 | R@10 |\n|---|---|---|---|---|---|---|")
    for name, order in rows:
        a, b, c = recall(fitted, order), recall(held, order), recall(everything, order)
        print(f"| {name} | {a[0]:.3f} | {a[1]:.3f} | {b[0]:.3f} | {b[1]:.3f} | {c[0]:.3f} | {c[1]:.3f} |")
    pairwise = fit_pairwise(fitted, relevance_columns)
    print("the pairwise fit on 0-4 (scoring.py's slopes, rounded):",
          dict(zip(RELEVANCE, np.round(pairwise, 2).tolist(), strict=True)))
    weights, bias = fit(fitted, relevance_columns)
    print(f"a pointwise logistic fit on 0-4 (bias {bias:.2f}):",
          dict(zip(RELEVANCE, np.round(weights, 2).tolist(), strict=True)))


if __name__ == "__main__":
    main()
