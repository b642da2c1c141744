"""Regenerate tests/fixtures/agentcli_vault/ with agent-cli's own file-writing code.

agent-cli's typer conflicts with memvault's, so it lives in a venv of its own; run this script with
that venv's Python (it imports agent_cli.memory, never memvault):

    /work/venvs/agentcli/bin/python scripts/gen_agentcli_vault.py [OUT_DIR]

Ids and times are fixed, so a second run writes the same bytes. The fixture is agent-cli's
`entries/` folder as its memory proxy leaves it: turns, facts (with `source_id`), a summary with
agent-cli's non-UUID summary id, a hand-made id, a conversation id that is not a folder name
("My Chat" in My_Chat/) and tombstones where agent-cli writes them (entries/deleted/<conversation>/).
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import tempfile
import types
from datetime import datetime, timezone
from pathlib import Path


def memory_package() -> None:
    """agent_cli.memory without its __init__ (which imports its server: fastapi, chromadb): only its
    file-writing modules are loaded, unchanged."""
    spec = importlib.util.find_spec("agent_cli")
    package = types.ModuleType("agent_cli.memory")
    package.__path__ = [str(Path(spec.origin).parent / "memory")]
    sys.modules["agent_cli.memory"] = package


memory_package()
from agent_cli.memory._files import write_memory_file  # noqa: E402
from agent_cli.memory._persistence import delete_memory_files, persist_summary  # noqa: E402
from agent_cli.memory.entities import Summary  # noqa: E402

OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "tests/fixtures/agentcli_vault"


class Collection:
    """Stands in for agent-cli's Chroma collection: only the files matter here."""

    def upsert(self, **_kwargs) -> None:
        pass


def at(minute: int, micro: int) -> str:
    return datetime(2025, 3, 1, 10, minute, 0, micro, tzinfo=timezone.utc).isoformat()


def build(root: Path) -> None:
    def write(conversation: str, role: str, minute: int, micro: int, text: str, doc_id: str, **extra) -> None:
        write_memory_file(root, conversation_id=conversation, role=role, created_at=at(minute, micro),
                          content=text, doc_id=doc_id, **extra)

    turn = "0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9a01"
    write("default", "user", 1, 123456, "My wife is Jane and we live in Utrecht.", turn)
    write("default", "assistant", 2, 234567, "Nice to meet you both!", "0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9a02")
    write("default", "memory", 3, 345678, "The user's wife is Jane.", "0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9a03",
          source_id=turn)
    write("default", "memory", 4, 456789, "The user lives in Utrecht.", "0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9a04",
          source_id=turn)
    write("default", "memory", 5, 567890, "The user likes hiking in the Alps.",
          "0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9a05", source_id=turn)
    write("default", "memory", 6, 678901, "The user's wife is Anne.", "0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9a06",
          source_id=turn)
    # agent-cli's reconciliation replaces Jane by Anne: a tombstone under entries/deleted/default/facts/.
    delete_memory_files(root, "default", ["0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9a03"],
                        {"0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9a03": "0b1f3c52-6a0e-4c55-9d0e-3f6f4b1e9a06"})
    write("default", "memory", 7, 789012, "The user's cat is called Miso.", "note-1")  # a hand-made id
    write("My Chat", "user", 8, 890123, "Remind me to water the tomato plants.", "5c2d8e71-1f44-4b8a-8c3e-2a9d7c6b5e01")
    write("My Chat", "memory", 9, 901234, "The user grows tomato plants on the balcony.",
          "5c2d8e71-1f44-4b8a-8c3e-2a9d7c6b5e02")
    persist_summary(Collection(), memory_root=root, summary=Summary(
        conversation_id="My Chat", content="The user gardens: tomatoes on the balcony.",
        created_at=datetime(2025, 3, 1, 10, 10, 0, 12345, tzinfo=timezone.utc)))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp))
        shutil.rmtree(OUT, ignore_errors=True)
        shutil.copytree(Path(tmp) / "entries", OUT / "entries")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
