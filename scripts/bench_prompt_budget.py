"""The prompt "What is my sister called?" becomes, before and after the prompt budget (issue 22).

The issue's vault: the user said who their sister is, and a looping answer was stored whole (one line
686 times), beside a few dozen ordinary memories. "Before" is the prompt as memvault assembled it
without a budget (gather + inject, every memory whole, assistant turns ranked as retrieved); "after"
is MemoryChat.prepare. Counted with SmolLM2's own chat template and tokenizer (the local model
server's /apply-template and /tokenize) when the server can start, and estimated (3 characters a
token) always. Also: where the user's turn and the assistant's rank, with and without prompt.assistant_last.

    python scripts/bench_prompt_budget.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SAID = "My sister is called Ana and she lives in Porto."
LOOPING = "Your sister is called Ana.\n" + "I am a helpful assistant and I am here to help.\n" * 686
QUESTION = [{"role": "user", "content": "What is my sister called?"}]


def build(folder: Path):
    from memvault import settings as settings_module
    from memvault.converse import ChatTurn, MemoryChat
    from memvault.core import Memvault
    from memvault.vault.format.entry import Entry

    core = Memvault.open(settings_module.load(None, {"vault.path": str(folder / "vault")}), create=True)
    MemoryChat(core, "default").persist(ChatTurn(messages=[]), SAID, LOOPING)
    core.add_entries([Entry(f"The user's note {n}: bring the blue umbrella to work when it rains, and the "
                            f"green one on Sundays.") for n in range(30)], "seed notes")
    core.settings.retrieval.top_k = 10
    return core


def before(core) -> list[dict]:
    from memvault.converse import gather, inject

    core.settings.prompt.assistant_last = False
    context = gather(core, QUESTION[-1]["content"], "default", {})
    core.settings.prompt.assistant_last = True
    return inject(QUESTION, context)


def after(core) -> list[dict]:
    from memvault.converse import MemoryChat

    return MemoryChat(core, "default").prepare(QUESTION).messages


def real_tokens(root: str, messages: list[dict]) -> int:
    def call(path: str, body: dict) -> dict:
        request = urllib.request.Request(root + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as reply:
            return json.loads(reply.read())

    prompt = call("/apply-template", {"messages": messages})["prompt"]
    return len(call("/tokenize", {"content": prompt})["tokens"])


def ranks(core, assistant_last: bool) -> dict[str, int]:
    from memvault.converse import MemoryChat

    core.settings.prompt.assistant_last = assistant_last
    hits = MemoryChat(core, "default").prepare(QUESTION).hits
    core.settings.prompt.assistant_last = True
    roles = [hit.role for hit in hits]  # as injected, first is highest
    return {role: roles.index(role) + 1 if role in roles else None for role in ("user", "assistant")}


def main() -> int:
    from memvault.converse.budget import messages_tokens

    with tempfile.TemporaryDirectory() as folder:
        core = build(Path(folder))
        prompts = {"before": before(core), "after": after(core)}
        counted: dict[str, int] = {}
        try:
            from tests.support.local_llm import local_llm_server

            with local_llm_server() as base_url:
                counted = {name: real_tokens(base_url.removesuffix("/v1"), m) for name, m in prompts.items()}
        except Exception as exc:  # noqa: BLE001 - no local model: estimates only
            print(f"(SmolLM2 tokenizer unavailable: {exc})")
        for name, messages in prompts.items():
            chars = sum(len(m["content"]) for m in messages)
            real = f", {counted[name]:,} SmolLM2 tokens" if name in counted else ""
            print(f"{name:6}: {chars:,} characters, ~{messages_tokens(messages):,} estimated tokens{real}")
        for flag in (False, True):
            print(f"prompt.assistant_last={flag}: place in the injected memories: {ranks(core, flag)}")
        core.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
