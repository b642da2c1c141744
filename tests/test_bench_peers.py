"""scripts/bench_peers.py: its runners answer the JSON the driver reads, and recall is LoCoMo's turn recall.

memvault's runner is driven for real (its own Python, a real vault, the real embedder) on a tiny
workload; the peers' runners only where their virtualenvs exist (bash scripts/bench_peers_setup.sh).
"""

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import bench_peers  # noqa: E402

MEMORIES = [  # two conversations with LoCoMo-shaped turns, and a memory that is no turn
    ("conv-a", "D1:1", "Caroline: I adopted a grey kitten named Pixel last week."),
    ("conv-a", "D1:2", "Melanie: My sister is training for the Berlin marathon."),
    ("conv-a", "D1:3", "Caroline: I started painting sunflowers in watercolour."),
    ("conv-b", "D1:1", "Jon: I opened a dance studio downtown."),
    ("conv-b", "D1:2", "Gina: My online clothing store finally launched."),
    ("filler", None, "Bob likes green tea (note 0)."),
]
QUESTIONS = [("conv-a", "What is the name of Caroline's kitten?", {"D1:1"}),
             ("conv-b", "What did Jon open downtown?", {"D1:1"})]


def tiny_workload(folder: Path) -> Path:
    """bench_peers_runner.py's workload file, written where the runners look for it (beside the stores)."""
    memories = [{"text": text, "conversation": conv, "created_at": f"2023-05-0{i + 1}T10:00:00+00:00",
                 "dia_id": dia, "speaker": text.split(":")[0] if dia else None}
                for i, (conv, dia, text) in enumerate(MEMORIES)]
    extra = {"text": bench_peers.EXTRA, "conversation": "filler", "created_at": "2024-01-01T00:00:00+00:00",
             "dia_id": None, "speaker": None}
    work = {"memories": memories, "extra": extra, "top_k": 3,
            "questions": [{"text": text, "conversation": conv} for conv, text, _ in QUESTIONS]}
    path = folder / "workload.json"
    path.write_text(json.dumps(work))
    return path


def check_runner(name: str, tmp_path: Path) -> dict:
    """Build and cold-start `name`'s store through its runner; the answers have the driver's shape."""
    workload = tiny_workload(tmp_path)
    (tmp_path / "home").mkdir()
    built, _ = bench_peers.run_phase(name, "build", tmp_path / name, workload, tmp_path / "home")
    assert "error" not in built, built
    assert {"open_s", "bulk_s", "bulk_cpu_s", "add_one_s", "latencies_ms", "search_cpu_ms", "found", "peak_rss_mb",
            "notes"} <= set(built)
    assert len(built["latencies_ms"]) == len(built["search_cpu_ms"]) == len(built["found"]) == len(QUESTIONS)
    assert all(len(hits) <= 3 for hits in built["found"])
    # Each question's evidence is its best hit, and the answer is scored as LoCoMo recall.
    assert [hits[0] for hits in built["found"]] == ["D1:1", "D1:1"], built["found"]
    scoring = [(4, evidence, conv) for conv, _, evidence in QUESTIONS]
    assert bench_peers.recall(scoring, built["found"])["r@5"] == 1.0
    cold, wall = bench_peers.run_phase(name, "cold", tmp_path / name, workload, tmp_path / "home")
    assert "error" not in cold, cold
    assert cold["hits"][0] == "D1:1"
    assert wall >= cold["open_s"] + cold["first_search_s"] and cold["peak_rss_mb"] > 10
    assert bench_peers.disk_mb(tmp_path / name) > 0
    return built


def test_memvault_runner_answers_the_drivers_json(tmp_path):
    built = check_runner("memvault", tmp_path)
    assert built["notes"] == []  # memvault runs with its defaults: nothing to declare
    assert built["add_one_cpu_s"] > 0


def test_the_control_row_is_memvault_with_its_lexical_lane_off(tmp_path):
    built = check_runner("memvault-dense", tmp_path)
    assert built["notes"] == ["the control: memvault's lexical lane off (retrieval.lexical_weight 0)"]


@pytest.mark.parametrize("name", ["mem0", "mem0-chroma", "agent-cli"])
def test_peer_runner_answers_the_drivers_json(name, tmp_path):
    python = bench_peers.SYSTEMS[name].python
    if not python.exists():
        pytest.skip(f"{name}'s virtualenv is not here: bash scripts/bench_peers_setup.sh makes it")
    built = check_runner(name, tmp_path)
    assert built["notes"], "a peer says where it departs from its defaults"


def test_recall_is_locomo_turn_recall_with_non_turns_keeping_their_place():
    scoring = [(1, {"D1:1", "D1:2"}, "a"), (2, {"D2:5"}, "b"), (4, {"D3:1"}, "c")]
    found = [
        ["D1:1", None, None, None, None, "D1:2"],  # half the evidence in the top 5, all of it in the top 10
        [None, None, None, None, None, None, None, None, None, None],  # nothing: a turn-free list scores 0
        ["D9:9", "D3:1"],
    ]
    summary = bench_peers.recall(scoring, found)
    assert summary["n"] == 3
    assert summary["r@5"] == pytest.approx((0.5 + 0 + 1) / 3)
    assert summary["r@10"] == pytest.approx((1 + 0 + 1) / 3)


def test_the_table_puts_memvault_over_each_peer_beside_the_figures():
    results = {"memvault": {"store_s": 10.0, "r10": 0.6}, "memvault-dense": {"store_s": 10.0, "r10": 0.4},
               "mem0": {"store_s": 40.0, "r10": 0.4}}
    lines = bench_peers.table(results, 10_000, 1536).splitlines()
    assert lines[0] == ("| | memvault | memvault, lexical lane off (control) | mem0, Qdrant local (offline: cosine "
                        "only) | memvault / mem0, Qdrant local (offline: cosine only) |")  # no ratio to the control
    store = next(line for line in lines if line.startswith("| store 10,000 memories"))
    assert "one git commit per conversation" in store and store.endswith("| 10.0 | 10.0 | 40.0 | 0.25 |")
    assert "| LoCoMo turn recall@10 | 0.600 | 0.400 | 0.400 | 1.50 |" in lines
    assert "| search p50 over 0 queries, in-process, embedding included (ms) | - | - | - | - |" in lines
    assert any("agent-cli re-embeds every file at each start" in line for line in lines)
    assert any("mem0: no commit" in line for line in lines)


def test_runs_are_combined_as_the_median_with_their_range():
    runs = [{"store_s": 12.0, "r10": 0.5, "notes": ["n"]}, {"store_s": 10.0, "r10": 0.5},
            {"store_s": 11.0, "r10": 0.5}, {"error": "crashed"}]
    row = bench_peers.combined(runs)
    assert (row["store_s"], row["runs"], row["notes"]) == (11.0, 3, ["n"])
    assert bench_peers.cell(row, "store_s", "{:.1f}") == "11.0 (10.0-12.0)"
    assert bench_peers.cell(row, "r10", "{:.3f}") == "0.500"  # runs that agree: no range
    assert bench_peers.combined([{"error": "no venv"}]) == {"error": "no venv"}


def test_a_smaller_store_takes_whole_leading_conversations():
    samples = [SimpleNamespace(turns=[0] * n) for n in (600, 700, 500)]
    assert len(bench_peers.fitting(samples, 2000)) == 3
    assert len(bench_peers.fitting(samples, 1300)) == 2
    assert len(bench_peers.fitting(samples, 100)) == 1  # at least one


def test_an_unknown_system_is_one_clear_line_and_a_failing_exit():
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_peers.py"), "--systems", "memvault,qdrant"],
                          capture_output=True, text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode != 0
    assert done.stderr.strip() == ("unknown system 'qdrant' (known: memvault, memvault-dense, mem0, mem0-chroma, "
                                   "agent-cli)")
