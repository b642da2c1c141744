"""What a prompt injects, measured: the user's knowledge, or the noise of earlier turns.

    python scripts/bench_injection.py --classify          # the turn classifier on held-out data (no model)
    python scripts/bench_injection.py                     # a new user's session with the real SmolLM2

`--classify` (converse.knowledge.noise on data it was not written from): LoCoMo's user turns that
have an `observation` (they state something: kept is right) and those that end in a question mark
without one; bench_curation_quality's trap messages, by kind (questions, commands, small talk: noise
is right; other people's facts and pasted text: statements, kept).

The session: a new user talks to memvault's chat the way `chat -m` does (each message retrieved,
injected, answered by SmolLM2-135M, both turns stored, curated through the write policy): statements
about themselves, then questions and requests, then the test questions once (answered, stored: the
small model's answers are what the issue saw injected). Then each test question is asked again and
the injected block is compared with and without the noise filter: how many injected lines are noise
(the user's questions, requests, small talk; refused or degenerate answers), whether the line that
holds the answer is injected, and whether SmolLM2's answer names it (temperature 0).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

STATEMENTS = [
    "Hi! My name is Priya and I live in Galway.",
    "I work as a pharmacist at the university hospital.",
    "My dog is called Biscuit, she's a beagle.",
    "I'm allergic to peanuts, so I have to be careful when eating out.",
    "My sister Ana lives in Porto with her two kids.",
    "I play the cello in a community orchestra on Thursdays.",
    "I'm training for the Dublin marathon in October.",
    "My favourite food is mushroom risotto.",
    "I drive a green Renault Clio.",
    "I grew up in Bangalore and moved to Ireland in 2015.",
]
CHATTER = [
    "How do I make pancakes without eggs?", "Write me a haiku about autumn.", "Thanks, that was helpful!",
    "What is the capital of Portugal?", "Can you suggest a name for a cat?", "lol ok",
    "Give me three tips for running in the rain.", "What time zone is Ireland in?",
    "Explain how a cello is tuned.", "Good morning!",
]
# (question, a word the right answer holds)
QUESTIONS = [
    ("What is my dog called?", "biscuit"),
    ("Where does my sister live?", "porto"),
    ("What instrument do I play?", "cello"),
    ("What am I allergic to?", "peanut"),
    ("What car do I drive?", "clio"),
]


def classify(limit: int) -> dict:
    """The noise filter on held-out messages: kept share of stating turns, noise share of traps."""
    from memvault.converse.knowledge import noise
    from scripts.bench_curation_quality import LOCOMO, TRAPS

    data = json.loads(LOCOMO.read_text(encoding="utf-8"))
    stating, asking = [], []
    for sample in data:
        observed = {dia for session in sample["observation"].values() for facts in session.values()
                    for _, dia in facts for dia in ([dia] if isinstance(dia, str) else dia)}
        conv = sample["conversation"]
        for key in sorted(k for k in conv if k.startswith("session_") and not k.endswith("date_time")):
            for turn in conv[key]:
                text = turn.get("text") or ""
                if turn.get("dia_id") in observed:
                    stating.append(text)
                elif text.rstrip().endswith("?"):
                    asking.append(text)
    kinds = ["small talk"] * 8 + ["question"] * 8 + ["request"] * 8 + ["pasted text"] * 6 + ["others' facts"] * 8 \
        + ["invites examples"] * 4
    report: dict = {"locomo stating turns kept": share(stating[:limit], lambda t: noise("user", t) is None),
                    "locomo question-only turns dropped": share(asking[:limit], lambda t: noise("user", t) is not None)}
    for kind in dict.fromkeys(kinds):
        texts = [t for t, k in zip(TRAPS, kinds, strict=True) if k == kind]
        report[f"traps: {kind}: dropped"] = share(texts, lambda t: noise("user", t) is not None)
    return report


def share(texts: list[str], right) -> str:
    good = sum(1 for t in texts if right(t))
    return f"{good}/{len(texts)} ({100 * good / max(1, len(texts)):.0f}%)"


def session(curate: bool) -> dict:
    from memvault import settings as settings_module
    from memvault.converse import MemoryChat, prompt
    from memvault.converse.knowledge import noise
    from memvault.core import Memvault
    from memvault.curate.llm import LLMClient
    from tests.support.local_llm import MODEL_NAME, local_llm_server

    with local_llm_server() as base, tempfile.TemporaryDirectory() as tmp:
        core = Memvault.open(settings_module.load(None, {
            "vault.path": str(Path(tmp) / "vault"), "llm.model": f"openai/{MODEL_NAME}", "llm.api_base": base,
            "llm.api_key": "none", "llm.temperature": 0.0, "llm.max_tokens": 120}), create=True)
        llm = LLMClient(core.settings.llm)
        started = time.perf_counter()
        for text in STATEMENTS + CHATTER + [q for q, _ in QUESTIONS]:
            chat = MemoryChat(core, "default", llm=llm)
            turn = chat.prepare([{"role": "user", "content": text}])
            answer = llm.complete(turn.messages)
            chat.persist(turn, text, answer)
            if curate:
                chat.curate(turn, [{"role": "user", "content": text}], llm, background=False)
        built = time.perf_counter() - started
        facts = [e.text for _, e in core.list(role="memory").entries]
        results = {}
        for label, filtered in (("before (no filter)", False), ("after (knowledge.noise)", True)):
            prompt.noise = noise if filtered else (lambda role, text: None)
            right = answer_found = noisy = lines = 0
            for question, word in QUESTIONS:
                context = prompt.gather(core, question, "default", {})
                injected = [(hit.role, hit.text) for hit in context.memories]
                lines += len(injected)
                noisy += sum(1 for role, text in injected if noise(role, text) is not None)
                answer_found += any(word in text.lower() for _, text in injected)
                reply = llm.complete(prompt.inject([{"role": "user", "content": question}], context))
                right += word in reply.lower()
            results[label] = {"injected lines": lines, "noise lines": noisy, "answer injected": answer_found,
                              "SmolLM2 right": right, "questions": len(QUESTIONS)}
        prompt.noise = noise
        core.close()
    return {"facts stored": len(facts), "facts": facts, "session seconds": round(built, 1), **results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--classify", action="store_true", help="only the classifier on held-out data")
    parser.add_argument("--limit", type=int, default=2000, help="LoCoMo turns per side")
    parser.add_argument("--no-curate", action="store_true", help="store the turns without curating them")
    args = parser.parse_args()
    report = classify(args.limit) if args.classify else session(not args.no_curate)
    print(json.dumps(report, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
