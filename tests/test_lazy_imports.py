"""Every `from memvault... import name` resolves, those inside functions included.

Heavy or optional imports live inside the functions that need them (start-up stays fast), so a name
moved or renamed elsewhere breaks them only when that function first runs: ruff cannot see it, and a
merge once left `memvault mcp`'s prompt importing a helper that had moved.
"""

import ast
import importlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "memvault"


def memvault_imports():
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("memvault"):
                for alias in node.names:
                    yield f"{path.relative_to(PACKAGE.parent)}:{node.lineno}", node.module, alias.name


def resolves(module: str, name: str) -> bool:
    try:
        imported = importlib.import_module(module)
        return hasattr(imported, name) or importlib.import_module(f"{module}.{name}") is not None
    except ImportError:
        return False


def test_every_imported_name_exists():
    broken = [f"{where}: from {module} import {name}" for where, module, name in memvault_imports()
              if not resolves(module, name)]
    assert broken == []
