"""How well the grounding guard judges meaning, through the real add path (extraction, guards, reconcile,
a real vault, git and the MiniLM embedder) with a scripted LLM that answers the given facts; no real LLM.

(a) LoCoMo's observation facts (the speaker's name put as "The user", a shared photo's caption in the
    turn's text as LoCoMo renders it) added from their own evidence turn, with the turns of its session
    before it that a chat sends and extraction shows (CONTEXT_TURNS; the other speaker's as the
    assistant's, named): the share kept;
(b) the same facts added from another turn of the same speaker: the share stored;
(c) scripts/data/grounding_cases.jsonl: paraphrases (must be kept) and near misses (must be refused),
    per kind, its development half, its held-out half (written before the guard was tuned) and the
    fresh set (written before the next round of rules) apart.
LoCoMo conversations 0-4 were looked at while tuning, the first 100 facts of 5-9 in a later round, facts
200-299 of both halves (`--offset 200`) in the round after; facts 300-399 (`--offset 300`) were measured, unread,
before and after that round's last rule; further ones are unseen.
With --judge-gguf, a GGUF model served by memvault's own llama server (llm.local_model, one thread) is
the second judge (curation.judge on, memvault.curate.judge) of the facts refused for closeness alone.

    python scripts/bench_grounding.py [--limit N] [--offset N] [--part tuned|heldout|both] [--judge-gguf PATH] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
LOCOMO = Path("/work/shared/data/locomo/locomo10.json")
CASES = ROOT / "scripts" / "data" / "grounding_cases.jsonl"
TUNED_ON = range(0, 5)  # LoCoMo conversations looked at while tuning


class FactsLLM:
    """A scripted model: extraction answers the facts it is given, the second judge's question goes to
    `judge` (a real model, timed), anything else answers nothing."""

    def __init__(self, judge=None) -> None:
        self.facts: list[str] = []
        self.judge = judge
        self.judged = 0
        self.said_yes = 0
        self.judge_seconds = 0.0
        self.questions: list[tuple[str, str]] = []  # (the question, the answer), for --json

    def complete(self, messages, json_schema=None):
        from memvault.curate import prompts

        if self.judge is not None and messages[0].get("content") == prompts.JUDGE:
            from memvault.curate.judge import YES, clean_verdict

            started = time.monotonic()
            try:
                answer = self.judge.complete(messages, json_schema=json_schema)
            finally:
                self.judged += 1
                self.judge_seconds += time.monotonic() - started
            self.said_yes += clean_verdict(answer) == YES
            self.questions.append((messages[-1]["content"], answer))
            return answer
        prompt = "\n".join(str(m.get("content")) for m in messages)
        return json.dumps(self.facts) if "extract from" in prompt else "[]"


def locomo_pairs(conversations: range, rng: random.Random) -> list[tuple[str, list[dict], list[dict]]]:
    """(fact, messages of its own turn, messages of another turn of the same speaker)."""
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    pairs = []
    for number in conversations:
        conversation = data[number]["conversation"]
        sessions = sorted((k for k, v in conversation.items() if k.startswith("session_") and isinstance(v, list)),
                          key=lambda k: int(k.split("_")[1]))
        turns = [{**turn, "session": key} for key in sessions for turn in conversation[key]]
        where = {turn["dia_id"]: i for i, turn in enumerate(turns)}
        for observations in data[number]["observation"].values():
            for speaker, items in observations.items():
                for fact, evidence in items:
                    ids = evidence if isinstance(evidence, list) else [evidence]
                    if not ids or ids[0] not in where or turns[where[ids[0]]]["speaker"] != speaker:
                        continue
                    text = re.sub(rf"\b{re.escape(speaker)}\b", "The user", fact)
                    others = [i for i, t in enumerate(turns) if t["speaker"] == speaker and t["dia_id"] not in ids]
                    pairs.append((text, messages_at(turns, where[ids[0]]), messages_at(turns, rng.choice(others))))
    rng.shuffle(pairs)
    return pairs


def messages_at(turns: list[dict], index: int) -> list[dict]:
    """The turn as the user's message after the turns of its session before it that extraction is shown
    (CONTEXT_TURNS): the same speaker's as the user's, the other's as the assistant's (named)."""
    from memvault.curate.extract import CONTEXT_TURNS

    turn = turns[index]
    before = [t for t in turns[max(0, index - CONTEXT_TURNS): index] if t["session"] == turn["session"]]
    return [{"role": "user", "content": shown(t)} if t["speaker"] == turn["speaker"]
            else {"role": "assistant", "content": shown(t), "name": t["speaker"]} for t in [*before, turn]]


def shown(turn: dict) -> str:
    """A turn's text as a chat shows it: a shared photo by its caption, as LoCoMo renders one (the
    observations were written by a model that saw it)."""
    caption = turn.get("blip_caption")
    return f"{turn['text']} [shares {caption}]" if caption else turn["text"]


def stored(memory, llm: FactsLLM, fact: str, messages: list[dict], user: str) -> tuple[bool, str]:
    """Whether `fact`, extracted from `messages`, is stored through Memvault.add (and why not)."""
    llm.facts = [fact]
    result = memory.add(messages, llm=llm, scopes={"user_id": user})
    reasons = [e.reason for e in result.events if e.event == "DROP"]
    return any(e.event in ("ADD", "UPDATE", "NONE") for e in result.events), (reasons or [""])[0]


HALVES = {"tuned": ("tuned on (conversations 0-4)", TUNED_ON, ("dev",)),
          "heldout": ("held out (conversations 5-9)", range(5, 10), ("heldout", "fresh"))}


def run(limit: int, part: str = "both", judge_gguf: str = "", offset: int = 0) -> dict:
    from memvault import settings
    from memvault.core import Memvault
    from memvault.curate.llm import LLMClient

    rng = random.Random(5)
    flags = {"llm.local_model": judge_gguf, "llm.local_threads": 1, "llm.timeout": 600,
             "curation.judge": "on"} if judge_gguf else {"curation.judge": "off"}
    figures: dict = {}
    started = time.monotonic()
    checked = 0
    with tempfile.TemporaryDirectory() as folder:
        configured = settings.load(None, {"vault.path": f"{folder}/vault", **flags})
        llm = FactsLLM(LLMClient(configured.llm) if judge_gguf else None)
        if judge_gguf:  # the server starts on the first call: not a judged fact's time
            llm.judge.complete([{"role": "user", "content": "Say yes."}], json_schema=None)
        memory = Memvault.open(configured, create=True)
        try:
            for name, (label, conversations, splits) in HALVES.items():
                # drawn for both: each half's pairs stay the same
                pairs = locomo_pairs(conversations, rng)[offset:offset + limit]
                if part not in (name, "both"):
                    continue
                own = sum(stored(memory, llm, fact, mine, f"own{i}")[0] for i, (fact, mine, _) in enumerate(pairs))
                other = sum(stored(memory, llm, fact, theirs, f"other{i}")[0]
                            for i, (fact, _, theirs) in enumerate(pairs))
                checked += 2 * len(pairs)
                figures[f"LoCoMo {label}"] = {"facts": len(pairs), "kept for their own turn": own / len(pairs),
                                              "stored for another turn": other / len(pairs)}
                for split in splits:
                    figures[f"cases, {split}"], cases_checked = run_cases(memory, llm, split)
                    checked += cases_checked
        finally:
            memory.close()
    figures["ms per add (vault, git, index, guard)"] = 1000 * (time.monotonic() - started) / max(1, checked)
    if judge_gguf:
        figures["facts judged by the model"] = llm.judged
        figures["judge said yes"] = llm.said_yes
        figures["ms per judged fact"] = 1000 * llm.judge_seconds / max(1, llm.judged)
        figures["judge questions"] = llm.questions
    return figures


def run_cases(memory, llm: FactsLLM, split: str) -> tuple[dict, int]:
    """The grounding cases of one split, per kind: how many the add path judged right, and the misses."""
    cases = [json.loads(line) for line in CASES.read_text(encoding="utf-8").splitlines() if line.strip()]
    kinds: dict = {}
    checked = 0
    for i, case in enumerate(c for c in cases if c["split"] == split):
        kept, reason = stored(memory, llm, case["fact"], [{"role": "user", "content": case["source"]}], f"{split}{i}")
        row = kinds.setdefault(case["kind"], {"label": case["label"], "cases": 0, "right": 0, "wrong": []})
        row["cases"] += 1
        checked += 1
        if kept == (case["label"] == "kept"):
            row["right"] += 1
        else:
            row["wrong"].append(f"{case['source']} -> {case['fact']} ({reason or 'kept'})")
    return kinds, checked


def guard_cost(repeats: int = 60) -> float:
    """ms per fact the guard alone takes (embedder warm), on LoCoMo facts for their own turn."""
    from memvault.curate.extract import grounding_source
    from memvault.curate.grounding import Source, fact_problem
    from memvault.models.embedders import load_embedder

    embedder = load_embedder("minilm")
    pairs = locomo_pairs(TUNED_ON, random.Random(9))[:repeats]
    fact_problem("The user lives in Lisbon.", Source("I live in Lisbon", embedder=embedder))  # warm
    started = time.monotonic()
    for fact, messages, _ in pairs:
        fact_problem(fact, grounding_source(messages, embedder=embedder))
    return 1000 * (time.monotonic() - started) / len(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=150, help="LoCoMo facts per half (default 150)")
    parser.add_argument("--offset", type=int, default=0,
                        help="skip this many LoCoMo facts of each half first (default 0)")
    parser.add_argument("--part", choices=("tuned", "heldout", "both"), default="both",
                        help="tuned: conversations 0-4 and the dev cases; heldout: 5-9, the held-out and fresh cases")
    parser.add_argument("--judge-gguf", default="", metavar="PATH",
                        help="a GGUF model, served by memvault on one thread, as the second judge (curation.judge)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if not LOCOMO.exists():
        sys.exit(f"error: {LOCOMO} not found (the LoCoMo data set)")
    if args.judge_gguf and not Path(args.judge_gguf).expanduser().is_file():
        sys.exit(f"error: --judge-gguf: no such file: {args.judge_gguf}")
    figures = run(args.limit, args.part, args.judge_gguf, args.offset)
    figures["guard ms per fact"] = guard_cost()
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print("| measure | value |\n| --- | --- |")
    for name, value in figures.items():
        if name.startswith("LoCoMo"):
            kept = value["kept for their own turn"]
            print(f"| {name}: kept for their own turn ({value['facts']} facts from {args.offset}) | {kept:.1%} |")
            print(f"| {name}: stored for another turn | {value['stored for another turn']:.1%} |")
        elif name.startswith("cases"):
            for kind, row in value.items():
                verb = "kept" if row["label"] == "kept" else "refused"
                print(f"| {name}: {kind} ({verb} expected) | {row['right']}/{row['cases']} {verb} |")
        elif isinstance(value, (int, float)):
            print(f"| {name} | {value:.0f} |")
    misses = [(name, miss) for name, value in figures.items() if name.startswith("cases")
              for row in value.values() for miss in row["wrong"]]
    for name, miss in misses:
        print(f"miss ({name}): {miss}")


if __name__ == "__main__":
    main()
