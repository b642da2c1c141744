"""What the write policy and a session end cost outside the LLM: CPU seconds (this process and its git
children), with a scripted LLM that answers at once. Wall-clock is not measured: on a shared machine
it says more about the neighbours than about memvault.

    PYTHONPATH=$PWD python scripts/cost_sessions.py [--rounds 10]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memvault import settings  # noqa: E402
from memvault.core import Memvault  # noqa: E402
from memvault.vault.format.entry import Entry  # noqa: E402
from tests.test_policy import policy_llm  # noqa: E402


def cpu() -> float:
    """CPU seconds so far: this process (all threads) and its waited-for children (git)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measured(work) -> float:
    start = cpu()
    work()
    return cpu() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=10)
    rounds = parser.parse_args().rounds
    with tempfile.TemporaryDirectory() as tmp:
        core = Memvault.open(settings.load(None, {"vault.path": str(Path(tmp) / "vault")}), create=True)
        core.add("warm-up: the model and the index load here", "warm", llm=policy_llm({}))  # not counted
        costs: dict[str, list[float]] = {"add (curated, no policy)": [], "policy_add (now)": [],
                                         "policy_add (hold)": [], "end_session (3 turns, 1 held, summary)": []}
        for i in range(rounds):
            conversation = f"c{i}"
            now_fact, held_fact = f"The user owns bike number {i}.", f"The user may move to city {i}."
            llm = policy_llm({f"I own bike {i}": [now_fact], f"Maybe city {i}": [held_fact],
                              f"plain {i}": [f"The user said plain {i}."]},
                             {held_fact: ("hold", "fact")}, promote={held_fact: True})
            costs["add (curated, no policy)"].append(measured(lambda: core.add(f"plain {i}", conversation, llm=llm)))
            for text, name in ((f"I own bike {i}", "policy_add (now)"), (f"Maybe city {i}", "policy_add (hold)")):
                turn = Entry(text, role="user", conversation_id=conversation)
                core.add_entries([turn], "turn", operation="chat")
                costs[name].append(measured(lambda: core.policy_add(text, conversation, llm=llm, turn=turn)))
            third = Entry("Which month is best?", role="user", conversation_id=conversation)
            core.add_entries([third], "turn", operation="chat")
            core.policy_add(third.text, conversation, llm=llm, turn=third)
            ending = measured(lambda: core.end_session(conversation, llm))
            costs["end_session (3 turns, 1 held, summary)"].append(ending)
        core.close()
    print(json.dumps({name: {"median_cpu_ms": round(statistics.median(values) * 1000, 1),
                             "min_cpu_ms": round(min(values) * 1000, 1), "rounds": len(values)}
                      for name, values in costs.items()}, indent=2))


if __name__ == "__main__":
    main()
