"""`memvault --help` must start fast: no heavy library is imported on the way (its time is measured by
scripts/bench_startup.py, not here)."""

import json
import subprocess
import sys

HEAVY = ["onnxruntime", "litellm", "sqlite_vec", "apsw", "torch", "numpy", "fastapi", "uvicorn", "tokenizers",
         "git", "frontmatter", "openai", "watchdog",
         "rich", "markdown_it", "yaml"]  # rich's help alone (markdown-it) costs more than the 0.3 s budget

PROBE = """
import json, sys
sys.argv = ["memvault", "--help"]
from memvault.cli.app import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules)), file=sys.stderr)
"""


def test_help_imports_no_heavy_library():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    modules = set(json.loads(out.stderr.strip().splitlines()[-1]))
    assert "Usage" in out.stdout
    assert not [m for m in HEAVY if m in modules]
