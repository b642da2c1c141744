"""Two real processes adding at once: the lock keeps files and commits whole."""

import subprocess
import sys

import pytest

from memvault.vault.write.store import Vault

ADDER = """
import sys
from memvault import settings
from memvault.core import Memvault
m = Memvault.open(settings.load(None, {"vault.path": sys.argv[1]}))
for i in range(50):
    m.add_verbatim(f"process {sys.argv[2]} memory {i}")
"""


@pytest.mark.slow
def test_two_processes_adding_fifty_each(tmp_path):
    vault = Vault.init(tmp_path / "vault")
    procs = [subprocess.Popen([sys.executable, "-c", ADDER, str(vault.root), name]) for name in ("a", "b")]
    assert [p.wait(timeout=240) for p in procs] == [0, 0]
    files = list(vault.entry_files())
    assert len(files) == 100
    assert sorted(vault.read(f).text for f in files) == sorted(
        f"process {n} memory {i}" for n in "ab" for i in range(50))
    commits = subprocess.run(["git", "log", "--format=%s"], cwd=vault.root, capture_output=True, text=True).stdout
    assert len([c for c in commits.splitlines() if c.startswith("memvault add:")]) == 100
    status = subprocess.run(["git", "status", "--porcelain"], cwd=vault.root, capture_output=True, text=True).stdout
    assert status == ""
