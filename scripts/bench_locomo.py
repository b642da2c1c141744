"""LoCoMo retrieval quality: evidence recall of the lexical lane, the dense lane and the full pipeline.

    python scripts/bench_locomo.py [--data ../shared/data/locomo/locomo10.json] [--limit-samples N]
                                   [--mode turns|curated|both] [--set dense_weight=1 ...] [--json out.json]

Protocol (../shared/data/locomo/README.md): each turn is one memory "<speaker>: <text>"
(+ " [image: <blip_caption>]"), role `user`, created at its session's date (plus one second per
turn, so turns keep their order), metadata {"dia_id": "D1:3"}, its speaker as `actor_id` (as a mem0
client sending each message with its `name` stores it); one conversation per sample.
Questions of categories 1-4 with evidence (split on ';') are asked in their sample's conversation,
with `now` fixed one day after that sample's last session.
evidence recall@k = mean over questions of (evidence turns in the top k / evidence turns).

Curated mode (the shape of a vault an LLM has curated): a second vault holds the same turns plus
LoCoMo's `observation` facts as facts (role `memory`, metadata {"kind": "fact", "evidence": [dia_ids]})
and each `session_summary` as one session entry (role `memory`, metadata {"kind": "session",
"session": N, "evidence": [every dia_id of that session]}), created at their session's date. A hit
credits its evidence turns (a turn credits itself), and recall@k counts the evidence turns credited by
the top k hits. The same `search` runs with a metadata filter for "facts", "sessions", "facts +
sessions", and with none for the mix with turns. A session hit credits its whole session (~20 turns):
read the session rows as "the right session was found", not as turn-level precision.

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
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"
CACHE = REPO / ".bench" / "locomo"
# Conversations 0-4 are where constants were fitted (text.DATE_WEIGHT, scoring's slopes); 5-9 are
# held out, and their figures are printed on their own.
HELD_OUT = slice(5, 10)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
VAULT_FORMAT = "2"  # bump when the way turns become entries changes: the cached vault is rebuilt
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
    # (dia_id, memory text, created_at, speaker)
    turns: list[tuple[str, str, datetime, str]] = field(default_factory=list)
    facts: list[Entry] = field(default_factory=list)  # observations and session summaries (curated mode)
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
                sample.turns.append((turn["dia_id"], text, start + timedelta(seconds=position), turn["speaker"]))
        sample.now = last + timedelta(days=1)
        sample.facts = curated_entries(raw, sample.name, sessions)
        for qa in raw["qa"]:
            evidence = {part.strip() for item in qa.get("evidence", [])
                        for part in str(item).split(";") if part.strip()}
            if qa.get("category") in CATEGORIES and evidence:
                sample.questions.append(Question(qa["question"], evidence, qa["category"]))
        samples.append(sample)
    return samples


def curated_entries(raw: dict, name: str, sessions: list[int]) -> list[Entry]:
    """A sample's observations as facts and its session summaries as session entries (see above)."""
    conv = raw["conversation"]
    entries = []
    for number in sessions:
        start = session_time(conv[f"session_{number}_date_time"])
        for speaker_facts in raw.get("observation", {}).get(f"session_{number}_observation", {}).values():
            for text, evidence in speaker_facts:
                ids = sorted({part.strip() for item in ([evidence] if isinstance(evidence, str) else evidence)
                              for part in str(item).split(";") if part.strip()})
                entries.append(Entry(text=text, role="memory", conversation_id=name, created_at=start,
                                     metadata={"kind": "fact", "evidence": ids}))
        summary = raw.get("session_summary", {}).get(f"session_{number}_summary")
        if summary:
            ids = [turn["dia_id"] for turn in conv[f"session_{number}"]]
            entries.append(Entry(text=summary, role="memory", conversation_id=name, created_at=start,
                                 metadata={"kind": "session", "session": number, "evidence": ids}))
    return entries


def open_vault(data: Path, samples: list[Sample], rebuild: bool, curated: bool = False) -> Memvault:
    """The cached vault of every sample (built on first use or when the data changes), index caught up.
    The curated vault starts as a copy of the turn vault (its index too: turns are not re-embedded)."""
    name = "curated" if curated else "vault"
    digest = hashlib.md5(data.read_bytes()).hexdigest() + ":" + VAULT_FORMAT
    folder = CACHE / name
    stamp = CACHE / f"{name}.stamp"
    os.environ.update(GIT_ENV)
    built = stamp.exists() and stamp.read_text() == digest and not rebuild
    if not built:
        shutil.rmtree(folder, ignore_errors=True)
        stamp.unlink(missing_ok=True)
        if curated:
            shutil.copytree(CACHE / "vault", folder)
        else:
            own_repository(folder)
    config = settings_mod.load(None, {"vault.path": str(folder)})
    memvault = Memvault.open(config, create=not built and not curated)
    if not built:
        started = time.perf_counter()
        for sample in samples:
            if curated:
                entries = sample.facts
            else:
                entries = turn_entries(sample)
            memvault.add_entries(entries, f"locomo {sample.name}: {len(entries)} {name} entries")
        print(f"built the {name} vault in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(digest)
    started = time.perf_counter()
    report = memvault.reindex()
    print(f"reindex: {report.embedded} embedded, {report.unchanged} unchanged, {time.perf_counter() - started:.1f} s",
          file=sys.stderr)
    return memvault


def turn_entries(sample: Sample) -> list[Entry]:
    """A sample's turns as the memories this benchmark stores (see the module's docstring)."""
    return [Entry(text=text, role="user", conversation_id=sample.name, created_at=created,
                  metadata={"dia_id": dia_id}, actor_id=speaker) for dia_id, text, created, speaker in sample.turns]


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
    conversations: list[str] = field(default_factory=list)  # one per row

    def only(self, conversations: set[str]) -> Scores:
        """The rows of these conversations (latencies are left out)."""
        keep = [i for i, name in enumerate(self.conversations) if name in conversations]
        return Scores([self.rows[i] for i in keep], [], [self.conversations[i] for i in keep])

    def add(self, category: int, found: list[str | set[str]], evidence: set[str], conversation: str = "") -> None:
        """`found`: per hit, best first, the evidence turn it credits (a turn's dia_id) or turns (a fact's)."""
        credited = [{hit} if isinstance(hit, str) else set(hit) for hit in found]
        at5, at10 = set().union(*credited[:5]), set().union(*credited[:10])
        self.rows.append((category, len(evidence & at5) / len(evidence), len(evidence & at10) / len(evidence),
                          1.0 if evidence & at10 else 0.0))
        self.conversations.append(conversation)

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
            methods["bm25"].add(question.category, [dia[r] for r, _ in lexical], question.evidence, sample.name)
            dense = index.dense(qvec, 10, where, params)
            methods["dense"].add(question.category, [dia[r] for r, _ in dense], question.evidence, sample.name)
            for name, config in ((names[2], pipeline), (names[3], no_recency)):
                started = time.perf_counter()
                hits = search(index, embedder, reranker, question.text, config, conversations_for(sample.name),
                              now=sample.now)
                methods[name].latencies.append(time.perf_counter() - started)
                found = [h.metadata.get("dia_id") for h in hits]
                methods[name].add(question.category, found, question.evidence, sample.name)
    return methods


CURATED_METHODS = {  # name -> the metadata filter that picks its entries (None: everything)
    "facts": {"kind": "fact"},
    "sessions": {"kind": "session"},
    "facts + sessions": {"kind": {"in": ["fact", "session"]}},
    "turns + facts": {"NOT": {"kind": "session"}},
    "turns + facts + sessions": None,
}


def credits(hit) -> set[str]:
    """The evidence turns a hit stands for: a turn itself, a fact or session entry its evidence list."""
    evidence = hit.metadata.get("evidence")
    if isinstance(evidence, list):
        return {str(item) for item in evidence}
    return {hit.metadata.get("dia_id")}


def evaluate_curated(memvault: Memvault, samples: list[Sample], retrieval: RetrievalSettings) -> dict[str, Scores]:
    """The default pipeline over the curated vault, once per mix of entry kinds."""
    import numpy as np

    index, embedder, reranker = memvault.index(), memvault.embedder(), memvault.reranker()
    pipeline = dataclasses.replace(retrieval, top_k=10)
    methods = {name: Scores() for name in CURATED_METHODS}
    for sample in samples:
        if not sample.questions:
            continue
        qvecs = np.asarray(embedder.embed([q.text for q in sample.questions], kind="query"), dtype=np.float32)
        for question, qvec in zip(sample.questions, qvecs, strict=True):
            for name, filters in CURATED_METHODS.items():
                started = time.perf_counter()
                hits = search(index, embedder, reranker, question.text, pipeline, conversations_for(sample.name),
                              filters=filters, now=sample.now, query_vector=qvec)
                methods[name].latencies.append(time.perf_counter() - started)
                methods[name].add(question.category, [credits(h) for h in hits], question.evidence, sample.name)
    return methods


def parse_sets(items: list[str]) -> dict[str, object]:
    """--set name=value pairs, typed like RetrievalSettings' fields."""
    known = [f.name for f in dataclasses.fields(RetrievalSettings)]
    result: dict[str, object] = {}
    for item in items:
        name, _, value = item.partition("=")
        name = name.strip().removeprefix("retrieval.")
        if name not in known:
            raise SystemExit(f"unknown retrieval setting {name!r} (known: {', '.join(known)})")
        result[name] = settings_mod.coerce(f"retrieval.{name}", value, "--set")
    return result


def table(methods: dict[str, Scores]) -> str:
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
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit-samples", type=int, default=None, help="ask only the first N samples' questions")
    parser.add_argument("--mode", choices=("turns", "curated", "both"), default="both",
                        help="turns: one memory per turn; curated: observations as facts and session summaries")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=VALUE",
                        help="override a RetrievalSettings field (repeatable)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the cached vault and index")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args()
    if not args.data.is_file():
        raise SystemExit(f"LoCoMo data not found: {args.data} (pass --data)")
    samples = load(args.data)
    asked = samples[: args.limit_samples] if args.limit_samples else samples
    results: dict[str, dict[str, Scores]] = {}
    memvault = open_vault(args.data, samples, args.rebuild)  # the curated vault is copied from this one
    retrieval = dataclasses.replace(memvault.settings.retrieval, **parse_sets(args.sets))
    before = os.getloadavg()
    if args.mode in ("turns", "both"):
        results["turns"] = evaluate(memvault, asked, retrieval)
    memvault.close()
    if args.mode in ("curated", "both"):
        memvault = open_vault(args.data, samples, args.rebuild, curated=True)
        results["curated"] = evaluate_curated(memvault, asked, retrieval)
        memvault.close()
    after = os.getloadavg()
    load_average = f"{before[0]:.2f} at start, {after[0]:.2f} at end (1-min, 2 cores)"
    changed = {f.name: getattr(retrieval, f.name) for f in dataclasses.fields(retrieval)
               if getattr(retrieval, f.name) != getattr(RetrievalSettings(), f.name)}
    print(f"settings: defaults{' + ' + json.dumps(changed) if changed else ''}; samples {len(asked)}")
    for mode, methods in results.items():
        print(f"\n### {mode}: all {len(asked)} conversations\n")
        print(table(methods))
        held_out = [sample.name for sample in asked[HELD_OUT]]
        if held_out:
            print(f"\n### {mode}: held-out conversations {HELD_OUT.start}-{HELD_OUT.stop - 1} only "
                  f"({', '.join(held_out)}; nothing was fitted on them)\n")
            print(table({name: scores.only(set(held_out)) for name, scores in methods.items()}))
    print(f"\nload average during the run: {load_average}; machine noise (a fixed ~10 ms workload, "
          f"p50 / p95 / max): {machine_noise.probe()}")
    if args.json:
        args.json.write_text(json.dumps({
            "settings": dataclasses.asdict(retrieval), "load_average": load_average,
            **{mode: {name: {"all": s.summary(), **{CATEGORIES[c]: s.summary(c) for c in CATEGORIES},
                             "held_out": s.only({x.name for x in asked[HELD_OUT]}).summary(),
                             "p50_ms": percentile(s.latencies, 50) * 1000 if s.latencies else None,
                             "p95_ms": percentile(s.latencies, 95) * 1000 if s.latencies else None}
                      for name, s in methods.items()} for mode, methods in results.items()},
        }, indent=2))


if __name__ == "__main__":
    main()
