"""docs/architecture.md, "Surfaces and the facade": the table of every surface and the facade calls it
makes is read, and checked against the code: each call is a public attribute of `Memvault`, and the
modules named make it (that attribute read from the facade object, in their AST). A call a surface stops making,
a call renamed in core, or a surface dropped from the table fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
SECTION = "## Surfaces and the facade"
SURFACES = {"CLI", "chat", "proxy", "REST", "mem0 API", "MCP", "UI", "import", "doctor"}


def surface_table(text: str) -> dict[str, tuple[list[str], list[str]]]:
    """{surface: (module paths, facade calls)} from the section's table (backticked names only)."""
    section = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("surface", "") or set(cells[0]) <= {"-"}:
            continue
        rows[cells[0]] = (re.findall(r"`([^`]+)`", cells[1]), re.findall(r"`([^`]+)`", cells[2]))
    return rows


# What surfaces call the facade object: `memvault`, `core`, `self.core`, `self._core` (the mem0 API),
# `open_memvault(...)` and the web page's `get_core()`.
FACADE_NAMES = {"memvault", "core", "_core", "open_memvault", "get_core"}


def owner_name(node: ast.expr) -> str:
    """The last name of what an attribute is read from: `self.core` -> core, `get_core()` -> get_core."""
    if isinstance(node, ast.Call):
        node = node.func
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def facade_attributes(paths: list[str]) -> set[str]:
    """The attributes read from the facade object in the modules at `paths` (files, or folders)."""
    names: set[str] = set()
    for name in paths:
        path = ROOT / name
        assert path.exists(), f"{name} is named in the table but does not exist"
        for file in [path] if path.is_file() else sorted(path.rglob("*.py")):
            names |= {node.attr for node in ast.walk(ast.parse(file.read_text(encoding="utf-8")))
                      if isinstance(node, ast.Attribute) and owner_name(node.value) in FACADE_NAMES}
    return names


TABLE = surface_table(DOC.read_text(encoding="utf-8"))


def test_the_table_lists_every_surface():
    assert set(TABLE) == SURFACES


@pytest.mark.parametrize("surface", sorted(SURFACES))
def test_each_listed_call_is_on_the_facade_and_made_by_the_surface(surface):
    from memvault.core import Memvault

    modules, calls = TABLE[surface]
    assert modules and calls
    missing = [call for call in calls if call.startswith("_") or not hasattr(Memvault, call)]
    assert missing == [], f"{surface}: not on Memvault: {missing}"
    made = facade_attributes(modules)
    assert [call for call in calls if call not in made] == [], f"{surface}: listed but never made"


def test_no_door_is_handed_a_transaction():
    """Imports wrote through `Memvault.write`, the one door handed a raw transaction, and so skipped the
    add path's gate: a door now asks for a named operation (`import_entries`), and the transaction is
    core's own."""
    from memvault.core import Memvault

    assert not hasattr(Memvault, "write")
    doors = sorted({module for modules, _ in TABLE.values() for module in modules})
    assert {"write", "_write"} & facade_attributes(doors) == set()


def test_the_check_can_fail():
    text = f"{SECTION}\n\n| surface | modules | facade calls |\n|---|---|---|\n" \
           "| CLI | `memvault/cli/commands` | `add`, `no_such_call` |\n| MCP | `memvault/mcp` | `overview` |\n"
    table = surface_table(text)
    assert table["CLI"] == (["memvault/cli/commands"], ["add", "no_such_call"])
    assert "overview" not in facade_attributes(table["MCP"][0])  # the web page's call, not MCP's
    assert "conversations" in facade_attributes(table["MCP"][0])
    # A name read from something else is not a facade call: MCP's own `tools.conversations` resource.
    assert facade_attributes(["memvault/mcp/server.py"]) == set()
