"""LoCoMo retrieval quality: evidence recall of the lexical lane, the dense lane and the full pipeline.

    python scripts/bench_locomo.py [--data ../shared/data/locomo/locomo10.json] [--limit-samples N]
                                   [--set dense_weight=1 --set lexical_weight=2 ...] [--json out.json]

Protocol (../shared/data/locomo/README.md): each turn is one memory "<speaker>: <text>"
(+ " [image: <blip_caption>]"), role `user`, created at its session's date (plus one second per
turn, so turns keep their order), metadata {"dia_id": "D1:3"}; one conversation per sample.
Questions of categories 1-4 with evidence (split on ';') are asked in their sample's conversation,
with `now` fixed one day after that sample's last session.
evidence recall@k = mean over questions of (evidence turns in the top k / evidence turns).

The vault is real (written through Memvault.add_entries, one commit per sample) and cached with its
index under .bench/locomo/, so a rerun only pays for what changed in the index representation.
The pipeline runs at top_k=10; its recall@5 is the first five of that list.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import machine_noise

from memvault import settings as settings_mod
from memvault.core import Memvault
from memvault.retrieve.filters import scope_where
from memvault.retrieve.search import conversations_for, search
from memvault.settings import RetrievalSettings
from memvault.vault import layout
from memvault.vault.entry import Entry

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"
CACHE = REPO / ".bench" / "locomo"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
VAULT_FORMAT = "1"  # bump when the way turns become entries changes: the cached vault is rebuilt
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "b@x"}


@dataclass
class Question:
    text: str
    evidence: set[str]
    category: int


@dataclass
class Sample:
    name: str  # the conversation
    turns: list[tuple[str, str, datetime]] = field(default_factory=list)  # (dia_id, memory text, created_at)
    questions: list[Question] = field(default_factory=list)
    now: datetime | None = None


def session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' as an aware datetime (UTC: the data gives no zone)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load(path: Path) -> list[Sample]:
    samples = []
    for raw in json.loads(path.read_text(encoding="utf-8")):
        sample = Sample(layout.slug(raw["sample_id"]))
        conv = raw["conversation"]
        sessions = sorted(int(k.split("_")[1]) for k in conv if k.startswith("session_") and k.count("_") == 1)
        last = None
        for number in sessions:
            start = session_time(conv[f"session_{number}_date_time"])
            last = start
            for position, turn in enumerate(conv[f"session_{number}"]):
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [image: {turn['blip_caption']}]"
                sample.turns.append((turn["dia_id"], text, start + timedelta(seconds=position)))
        sample.now = last + timedelta(days=1)
        for qa in raw["qa"]:
            evidence = {part.strip() for item in qa.get("evidence", [])
                        for part in str(item).split(";") if part.strip()}
            if qa.get("category") in CATEGORIES and evidence:
                sample.questions.append(Question(qa["question"], evidence, qa["category"]))
        samples.append(sample)
    return samples


def open_vault(data: Path, samples: list[Sample], rebuild: bool) -> Memvault:
    """The cached vault of every sample (built on first use or when the data changes), index caught up."""
    digest = hashlib.md5(data.read_bytes()).hexdigest() + ":" + VAULT_FORMAT
    folder = CACHE / "vault"
    stamp = CACHE / "vault.stamp"
    os.environ.update(GIT_ENV)
    built = stamp.exists() and stamp.read_text() == digest and not rebuild
    if not built:
        shutil.rmtree(folder, ignore_errors=True)
        stamp.unlink(missing_ok=True)
        own_repository(folder)
    config = settings_mod.load(None, {"vault.path": str(folder)})
    memvault = Memvault.open(config, create=not built)
    if not built:
        started = time.perf_counter()
        for sample in samples:
            entries = [Entry(text=text, role="user", conversation_id=sample.name, created_at=created,
                             metadata={"dia_id": dia_id}) for dia_id, text, created in sample.turns]
            memvault.add_entries(entries, f"locomo {sample.name}: {len(entries)} turns")
        print(f"built the vault: {sum(len(s.turns) for s in samples)} turns in "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(digest)
    started = time.perf_counter()
    report = memvault.reindex()
    print(f"reindex: {report.embedded} embedded, {report.unchanged} unchanged, {time.perf_counter() - started:.1f} s",
          file=sys.stderr)
    return memvault


def own_repository(folder: Path) -> None:
    """Give the vault its own git repository first: .bench/ sits inside the project's repository,
    which Vault.init would otherwise adopt (a vault may live inside a user's repository)."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(folder)], check=True)


@dataclass
class Scores:
    """Per-question recall@5, recall@10, hit@10, by category."""

    rows: list[tuple[int, float, float, float]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)

    def add(self, category: int, found: list[str], evidence: set[str]) -> None:
        at5 = len(evidence & set(found[:5])) / len(evidence)
        at10 = len(evidence & set(found[:10])) / len(evidence)
        self.rows.append((category, at5, at10, 1.0 if evidence & set(found[:10]) else 0.0))

    def summary(self, category: int | None = None) -> dict[str, float]:
        rows = [r for r in self.rows if category is None or r[0] == category]
        if not rows:
            return {}
        return {"n": len(rows), "r@5": mean(r[1] for r in rows), "r@10": mean(r[2] for r in rows),
                "hit@10": mean(r[3] for r in rows)}


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def evaluate(memvault: Memvault, samples: list[Sample], retrieval: RetrievalSettings) -> dict[str, Scores]:
    """Run every question through each method; returns method name -> scores."""
    import numpy as np

    index = memvault.index()
    embedder = memvault.embedder()
    reranker = memvault.reranker()
    dia = {row_id: json.loads(meta or "{}").get("dia_id") for row_id, meta in
           index.conn.execute("SELECT rowid, metadata FROM entries")}
    pipeline = dataclasses.replace(retrieval, top_k=10)
    no_recency = dataclasses.replace(pipeline, recency_weight=0.0)
    methods = {"bm25": Scores(), "dense": Scores(),
               f"pipeline (recency {pipeline.recency_weight:g})": Scores(), "pipeline (recency 0)": Scores()}
    names = list(methods)
    for sample in samples:
        if not sample.questions:
            continue
        where, params = scope_where([sample.name], None)
        qvecs = np.asarray(embedder.embed([q.text for q in sample.questions], kind="query"), dtype=np.float32)
        for question, qvec in zip(sample.questions, qvecs, strict=True):
            lexical = index.lexical(question.text, 10, where, params)
            methods["bm25"].add(question.category, [dia[r] for r, _ in lexical], question.evidence)
            dense = index.dense(qvec, 10, where, params)
            methods["dense"].add(question.category, [dia[r] for r, _ in dense], question.evidence)
            for name, config in ((names[2], pipeline), (names[3], no_recency)):
                started = time.perf_counter()
                hits = search(index, embedder, reranker, question.text, config, conversations_for(sample.name),
                              now=sample.now)
                methods[name].latencies.append(time.perf_counter() - started)
                methods[name].add(question.category, [h.metadata.get("dia_id") for h in hits], question.evidence)
    return methods


def parse_sets(items: list[str]) -> dict[str, object]:
    """--set name=value pairs, typed like RetrievalSettings' fields."""
    kinds = {f.name: type(getattr(RetrievalSettings(), f.name)) for f in dataclasses.fields(RetrievalSettings)}
    result: dict[str, object] = {}
    for item in items:
        name, _, value = item.partition("=")
        name = name.strip().removeprefix("retrieval.")
        if name not in kinds:
            raise SystemExit(f"unknown retrieval setting {name!r} (known: {', '.join(kinds)})")
        result[name] = settings_mod.coerce(f"retrieval.{name}", value, kinds[name], "--set")
    return result


def table(methods: dict[str, Scores], load_average: str) -> str:
    lines = ["| method | n | recall@5 | recall@10 | hit@10 | " + " | ".join(
        f"r@10 {c} {n}" for c, n in CATEGORIES.items()) + " | p50 ms | p95 ms |",
        "|---" * (7 + len(CATEGORIES)) + "|"]
    for name, scores in methods.items():
        total = scores.summary()
        cats = [scores.summary(c).get("r@10", float("nan")) for c in CATEGORIES]
        lat = (f"{percentile(scores.latencies, 50) * 1000:.0f} | {percentile(scores.latencies, 95) * 1000:.0f}"
               if scores.latencies else "- | -")
        lines.append(f"| {name} | {total['n']} | {total['r@5']:.3f} | {total['r@10']:.3f} | {total['hit@10']:.3f} | "
                     + " | ".join(f"{c:.3f}" for c in cats) + f" | {lat} |")
    lines.append(f"\nload average during the run: {load_average}; machine noise (a fixed ~10 ms workload, "
                 f"p50 / p95 / max): {machine_noise.probe()}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit-samples", type=int, default=None, help="ask only the first N samples' questions")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE",
                        help="override a RetrievalSettings field (repeatable)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached vault and index")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args()
    if not args.data.is_file():
        raise SystemExit(f"LoCoMo data not found: {args.data} (pass --data)")
    samples = load(args.data)
    memvault = open_vault(args.data, samples, args.rebuild)
    retrieval = dataclasses.replace(memvault.settings.retrieval, **parse_sets(args.sets))
    asked = samples[: args.limit_samples] if args.limit_samples else samples
    before = os.getloadavg()
    methods = evaluate(memvault, asked, retrieval)
    after = os.getloadavg()
    load_average = f"{before[0]:.2f} at start, {after[0]:.2f} at end (1-min, 2 cores)"
    changed = {f.name: getattr(retrieval, f.name) for f in dataclasses.fields(retrieval)
               if getattr(retrieval, f.name) != getattr(RetrievalSettings(), f.name)}
    print(f"settings: defaults{' + ' + json.dumps(changed) if changed else ''}; samples {len(asked)}")
    print(table(methods, load_average))
    if args.json:
        args.json.write_text(json.dumps({
            "settings": dataclasses.asdict(retrieval), "load_average": load_average,
            "methods": {name: {"all": s.summary(), **{CATEGORIES[c]: s.summary(c) for c in CATEGORIES},
                               "p50_ms": percentile(s.latencies, 50) * 1000 if s.latencies else None,
                               "p95_ms": percentile(s.latencies, 95) * 1000 if s.latencies else None}
                        for name, s in methods.items()},
        }, indent=2))
    memvault.close()


if __name__ == "__main__":
    main()
