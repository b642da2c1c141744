"""The layering of memvault, frozen: every `memvault` import (lazy ones in functions included) is read
with `ast` and checked against the graph below.

    errors, settings, extras          base
    vault                             files and git
    models                            embedder, reranker
    index          <- vault, models   the derived SQLite index
    retrieve       <- index           search
    curate         <- retrieve        LLM curation
    core           <- curate          the one facade (memvault.core.Memvault, one module per job)
    converse, doctor                  built on core (and what is under it)
    transfer                          import and export, built on core (writes through Memvault.write)
    api, server, mcp, cli, ui         surfaces: they reach the index and the vault's writes through core

A surface never imports `memvault.vault.write.store` or `memvault.index.*`, and no module reads a private
attribute (`obj._name`) of an object other than its own (`self`, `cls`). Outside core, vault and index
no module reads a Memvault's `.vault` or `.keeper` (the facade's own parts: `memvault.vault.root`
would let a surface write past every rule core holds); `settings.vault` (a section of the settings)
and `import memvault.vault` (a module) are other things and pass. An exception needs an entry in
ALLOWED_EXCEPTIONS with a one-line reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memvault"
BASE = {"errors", "settings", "extras"}
# Which parts of memvault each part may import (a part: memvault.<part>..., "memvault" is the package
# itself: its __version__, and the mem0 names it loads lazily from api).
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "extras": {"errors"},
    "settings": {"errors"},
    "vault": BASE,
    "models": BASE,
    "index": BASE | {"vault", "models"},
    "retrieve": BASE | {"vault", "models", "index"},
    "curate": BASE | {"vault", "models", "index", "retrieve"},
    "core": BASE | {"vault", "models", "index", "retrieve", "curate"},
    "converse": BASE | {"vault", "curate", "core"},
    "doctor": BASE | {"memvault", "vault", "models", "index", "retrieve", "curate", "core"},
    "transfer": BASE | {"vault", "curate", "core"},
    "api": BASE | {"memvault", "vault", "retrieve", "curate", "core"},
    "server": BASE | {"memvault", "vault", "retrieve", "curate", "core", "converse", "api", "ui"},
    "mcp": BASE | {"memvault", "vault", "retrieve", "curate", "core", "converse", "api", "server"},
    "cli": BASE | {"memvault", "vault", "retrieve", "curate", "core", "converse", "doctor", "api", "server", "mcp",
                   "transfer", "ui"},
    "ui": BASE | {"vault", "core", "server"},  # the web page: a surface, mounted by the server at /ui
    "__main__": {"cli"},
    "memvault": {"api"},
}
SURFACES = {"api", "server", "mcp", "cli", "ui"}
# The vault's write path (vault.write.store and the parts it is built from) and the index.
FORBIDDEN_TO_SURFACES = ("memvault.vault.write.store", "memvault.vault.write.transaction", "memvault.vault.write.recovery",
                         "memvault.vault.format.atomic", "memvault.index")
# (importing module, imported module or private attribute) -> why it is allowed.
ALLOWED_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("memvault.settings", "memvault.vault.format.atomic"):
        "`config set` writes the config file with the vault's atomic_write (lazy import; no lower home yet)",
    ("memvault.vault.write.transaction", "memvault.vault.write.store"):
        "a Transaction names the Vault that opened it in a type annotation only (TYPE_CHECKING)",
    ("memvault.settings", "memvault.vault.format.entry"):
        "server.keys are checked against SCOPE_KEYS, whose one home is vault.entry (lazy; entry imports only errors)",
    ("memvault.settings", "_insert_after"):
        "tomlkit has no public way to insert a key after another (keeps the user's comments in place)",
    ("memvault.models.onnx_runtime", "memvault"):
        "whether onnxruntime was imported before memvault with telemetry on is known only at `import memvault`",
    ("memvault.server.run", "_exit"):
        "a second Ctrl-C exits at once: sys.exit would wait for a curation thread that must not hold the exit",
    ("memvault.curate.local_llm", "_exit"):
        "the model server child ends the moment its parent is gone, even while llama.cpp's threads load a model",
    ("memvault.vault.forget.history_filter", "_prunable"):
        "git-filter-repo has no option to keep an empty commit whose parent it pruned: an earlier erasure record",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> dict[str, str]:
    return {module_name(path): path.read_text(encoding="utf-8") for path in sorted(PACKAGE.rglob("*.py"))}


MODULES = sources()


def imports_of(module: str, source: str, known: set[str] | frozenset[str] = frozenset(MODULES)) -> set[str]:
    """The memvault modules `module` imports, anywhere in its code. `from memvault import errors` is an
    import of memvault.errors; `from memvault.vault.format.entry import Entry`, of memvault.vault.format.entry."""
    found: set[str] = set()
    is_package = module in known and (PACKAGE.parent / module.replace(".", "/") / "__init__.py").exists()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "memvault"}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            if base.split(".")[0] != "memvault":
                continue
            submodules = {f"{base}.{alias.name}" for alias in node.names} & set(known)
            found |= submodules or {base}
    found.discard(module)
    return found


def part_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layering_violations(module: str, source: str) -> list[str]:
    problems = []
    part = part_of(module)
    for imported in sorted(imports_of(module, source)):
        if (module, imported) in ALLOWED_EXCEPTIONS:
            continue
        target = part_of(imported)
        if target != part and target not in ALLOWED.get(part, set()):
            problems.append(f"{module} imports {imported} ({part} may import only {sorted(ALLOWED.get(part, []))})")
        if part in SURFACES and imported.startswith(FORBIDDEN_TO_SURFACES):
            problems.append(f"{module} imports {imported}: a surface goes through memvault.core")
    return problems


def private_accesses(module: str, source: str) -> list[str]:
    """`obj._name` where obj is not self or cls (dunders aside): reaching into another object."""
    problems = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute):
            continue
        name = node.attr
        if not name.startswith("_") or (name.startswith("__") and name.endswith("__")):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        if (module, name) in ALLOWED_EXCEPTIONS:
            continue
        problems.append(f"{module}:{node.lineno} reads {ast.unparse(node)}")
    return problems


FACADE_PARTS = {"core", "vault", "index"}  # where a Memvault's own parts may be named
HIDDEN_PARTS = {"vault", "keeper"}
SETTINGS_NAMES = {"settings", "config"}


def settings_section_fields() -> set[str]:
    """The keys of the settings' [vault] section: `x.vault.path` reads settings, not a Vault."""
    import dataclasses

    from memvault.settings import VaultSettings

    return {f.name for f in dataclasses.fields(VaultSettings)}


def facade_bypasses(module: str, source: str) -> list[str]:
    """`<object>.vault` / `<object>.keeper` outside core, vault and index, unless the object is the
    settings (named settings/config, or the `.vault` is followed by a [vault] setting) or the
    `memvault` package bound by `import memvault...`. Told apart by the AST, not by text."""
    if part_of(module) in FACADE_PARTS:
        return []
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    packages = {alias.asname or alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names if alias.name.split(".")[0] == "memvault"}
    fields = settings_section_fields()
    problems = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr not in HIDDEN_PARTS:
            continue
        owner = node.value
        owner_name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
        parent = parents.get(node)
        if owner_name in SETTINGS_NAMES or (isinstance(parent, ast.Attribute) and parent.attr in fields):
            continue
        if isinstance(owner, ast.Name) and owner.id in packages:  # memvault.vault.format.layout: a module
            continue
        problems.append(f"{module}:{node.lineno} reads {ast.unparse(node)}: go through the facade (memvault.core)")
    return problems


def test_every_part_of_memvault_is_placed_in_the_graph():
    assert {part_of(module) for module in MODULES} <= set(ALLOWED)


def test_imports_point_down_the_layers_only():
    problems = [p for module, source in MODULES.items() for p in layering_violations(module, source)]
    assert problems == []


def test_no_object_is_reached_into():
    problems = [p for module, source in MODULES.items() for p in private_accesses(module, source)]
    assert problems == []


def test_no_surface_reaches_past_the_facade():
    problems = [p for module, source in MODULES.items() for p in facade_bypasses(module, source)]
    assert problems == []


def test_no_import_cycles_between_modules():
    """Command modules never import the CLI app that imports them; routers never import the server app."""
    graph = {module: imports_of(module, source) - {"memvault"} for module, source in MODULES.items()
             if module != "memvault"}  # the package's lazy mem0 facade is not a dependency of anything
    for module, imported in graph.items():
        graph[module] = {target for target in imported if (module, target) not in ALLOWED_EXCEPTIONS
                         and not module.startswith(target + ".")}  # a module's own package __init__
    assert find_cycle(graph) is None


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a list of modules, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state and (found := visit(target)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_every_exception_is_still_needed_and_has_a_reason():
    for (module, name), reason in ALLOWED_EXCEPTIONS.items():
        assert reason.strip(), f"{module} {name}: no reason given"
        source = MODULES[module]
        used = name in imports_of(module, source) or any(
            isinstance(n, ast.Attribute) and n.attr == name for n in ast.walk(ast.parse(source)))
        assert used, f"{module} no longer uses {name}: drop its exception"


# -- the checks themselves can fail -----------------------------------------------------------------
@pytest.mark.parametrize(("module", "source", "expected"), [
    ("memvault.server.watching", "def f():\n    from memvault.index.catchup import hash_file\n",
     "memvault.server.watching imports memvault.index.catchup"),
    ("memvault.cli.commands.search", "from memvault.vault.write.store import Vault\n",
     "memvault.cli.commands.search imports memvault.vault.write.store: a surface goes through memvault.core"),
    ("memvault.vault.write.store", "from memvault.index import journal\n",
     "memvault.vault.write.store imports memvault.index.journal"),
    ("memvault.retrieve.search", "import memvault.core\n", "memvault.retrieve.search imports memvault.core"),
    ("memvault.curate.ingest", "from ..server import proxy\n", "memvault.curate.ingest imports memvault.server.proxy"),
])
def test_an_upward_or_forbidden_import_is_caught(module, source, expected):
    problems = layering_violations(module, source)
    assert any(p.startswith(expected) for p in problems), problems


def test_reaching_into_another_object_is_caught_but_self_and_dunders_are_not():
    source = "def f(core, self):\n    core._index_lock\n    self._own\n    core.__class__\n    type(core)._x\n"
    assert private_accesses("memvault.server.app", source) == [
        "memvault.server.app:2 reads core._index_lock", "memvault.server.app:5 reads type(core)._x"]


@pytest.mark.parametrize(("module", "source", "caught"), [
    ("memvault.cli.commands.entries", "def f(memvault, rel):\n    return memvault.vault.root / rel\n", True),
    ("memvault.mcp.tools", "def f(self):\n    return self.core.vault.conversations()\n", True),
    ("memvault.transfer.runner", "def f(self, tx):\n    self.memvault.keeper.record(tx.changes)\n", True),
    ("memvault.doctor.repairs", "def f(memvault):\n    with memvault.vault.lock():\n        pass\n", True),
    ("memvault.server.app", "def f(state):\n    return state.settings.vault.path\n", False),
    ("memvault.api.config", "def f(result):\n    return result.vault.max_entries\n", False),
    ("memvault.cli.app", "def f(config):\n    return config.vault\n", False),
    ("memvault.ui.views", "import memvault.vault.format.layout\nx = memvault.vault.format.layout.ENTRIES\n", False),
    ("memvault.ui.views", "from memvault.vault import layout\nfrom memvault.vault.format.entry import Entry\n", False),
    ("memvault.core.browsing", "def f(self):\n    return self.vault.root\n", False),
])
def test_reaching_past_the_facade_is_caught_and_settings_and_modules_are_not(module, source, caught):
    assert bool(facade_bypasses(module, source)) is caught


def test_a_cycle_is_caught():
    assert find_cycle({"memvault.cli.app": {"memvault.cli.commands.chat"},
                       "memvault.cli.commands.chat": {"memvault.cli.app"}}) is not None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
