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
