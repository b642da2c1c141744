"""No telemetry: onnxruntime (1.29+ on Linux and macOS) must create no device id, queue no event and
upload nothing when memvault loads a model (docs/architecture.md, Trust boundaries)."""

import os
import subprocess
import sys
from pathlib import Path

EMBED_ONCE = """
import os
from memvault.models.embedders import load_embedder
load_embedder("minilm").embed(["hello world"])
print(os.environ.get("ORT_DISABLE_TELEMETRY"))
"""


def test_loading_the_model_leaves_no_telemetry_trace(tmp_path):
    # A process of its own: onnxruntime decides about telemetry once, when its environment is created.
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORT_")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"),
               PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, "-c", EMBED_ONCE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # onnxruntime writes its device id and event queue here as soon as telemetry starts.
    assert not (home / ".cache" / "Microsoft").exists(), sorted(p.name for p in (home / ".cache").rglob("*"))
    assert done.stdout.strip() == "1"


def test_a_user_cannot_turn_it_back_on(monkeypatch):
    from memvault.models.onnx_runtime import telemetry_off

    monkeypatch.setenv("ORT_DISABLE_TELEMETRY", "0")
    telemetry_off()
    assert os.environ["ORT_DISABLE_TELEMETRY"] == "1"
