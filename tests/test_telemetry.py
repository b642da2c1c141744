"""No telemetry: onnxruntime (1.29+ on Linux and macOS) must create no device id, queue no event and
upload nothing when memvault loads a model (docs/architecture.md, Trust boundaries)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


IMPORTED_FIRST = """
import onnxruntime
from memvault.api import Memory
memory = Memory(vault={vault!r})
memory.add("Ada keeps bees", user_id="ada", infer=False)
try:
    print(memory.search("bees", user_id="ada"))
except Exception as exc:
    print("refused:", exc)
"""


def run_imported_first(tmp_path, telemetry_env: dict[str, str], strace: bool = False):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORT_")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), **telemetry_env,
               PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    trace = tmp_path / "strace.txt"
    prefix = ["strace", "-f", "-e", "trace=connect", "-o", str(trace)] if strace else []
    code = IMPORTED_FIRST.format(vault=str(tmp_path / "vault"))
    done = subprocess.run([*prefix, sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    return done, home, trace


def test_onnxruntime_imported_first_with_telemetry_on_refuses_the_embedder_in_one_line(tmp_path):
    """Nothing turns onnxruntime's telemetry off once it is imported (strace showed the DNS queries for
    mobile.events.data.microsoft.com with ORT_DISABLE_TELEMETRY set and disable_telemetry_events()
    called right after the import): so memvault will not embed in that process, and says how to fix it."""
    done, _, _ = run_imported_first(tmp_path, {})
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout and "ORT_DISABLE_TELEMETRY=1" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_onnxruntime_imported_first_with_telemetry_off_sends_nothing(tmp_path):
    done, home, trace = run_imported_first(tmp_path, {"ORT_DISABLE_TELEMETRY": "1"}, strace=True)
    assert done.returncode == 0, done.stderr
    assert "Ada keeps bees" in done.stdout
    assert not (home / ".cache" / "Microsoft").exists()
    assert "htons(53)" not in trace.read_text()  # no DNS query at all (loopback and the vault only)
