"""The layering of memvault, frozen: every `memvault` import (lazy ones in functions included) is read
with `ast` and checked against the graph below (docs/architecture.md, Data flow).

    errors, extras, config_paths      base (config_paths: where the config file and the default vault are)
    text            <- errors         text judgement: words compared, secrets found and redacted
    vault           <- text           files and git, in parts (VAULT_LAYERS):
                                      format <- git <- write, forget <- devices
    settings        <- vault          one settings object (scope names and atomic writes are the vault's)
    models                            embedder, reranker
    index           <- vault, models  the derived SQLite index
    retrieve        <- index          search
    curate          <- retrieve       LLM curation
    core            <- curate         the one facade (memvault.core.Memvault, one module per job)
    shapes                            what a door may name beneath the facade: a memory's shape, parsers
    converse, doctor                  built on core (and what is under it)
    transfer                          import and export, built on core
    api, server, mcp, cli, ui         doors: core, shapes and the doors they stand on, nothing beneath

No package imports another that imports it back, lazily or not, and no module imports one that
imports it back. No module reads a private attribute (`obj._name`) of an object other than its own
(`self`, `cls`). Outside core, vault and index no module reads a Memvault's `.vault` or `.keeper`
(the facade's own parts: `memvault.vault.root` would let a door write past every rule core holds);
`settings.vault` (a section of the settings) and `import memvault.vault` (a module) are other things
and pass. An exception needs an entry in ALLOWED_EXCEPTIONS with a one-line reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "memvault"
BASE = {"errors", "settings", "extras", "config_paths"}
BENEATH = {"text", "vault", "models", "index", "retrieve", "curate"}  # beneath the facade: never a door's
# Which parts of memvault each part may import (a part: memvault.<part>..., "memvault" is the package
# itself: its __version__, and the mem0 names it loads lazily from api).
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "extras": {"errors"},
    "config_paths": set(),
    "text": {"errors"},
    "vault": {"errors", "text"},
    "settings": {"errors", "vault", "config_paths"},
    "models": BASE,
    "index": BASE | {"text", "vault", "models"},
    "retrieve": BASE | {"text", "vault", "models", "index"},
    "curate": BASE | {"text", "vault", "models", "index", "retrieve"},
    "core": BASE | {"text", "vault", "models", "index", "retrieve", "curate"},
    "shapes": {"vault", "retrieve", "curate"},
    "converse": BASE | {"text", "vault", "curate", "core"},
    "doctor": BASE | {"memvault", "vault", "models", "index", "retrieve", "curate", "core"},
    "transfer": BASE | {"text", "vault", "curate", "core"},
    "api": BASE | {"memvault", "core", "shapes"},
    "server": BASE | {"memvault", "core", "shapes", "converse", "api"},
    "mcp": BASE | {"memvault", "core", "shapes", "converse", "api", "server"},
    "cli": BASE | {"memvault", "core", "shapes", "converse", "doctor", "api", "server", "mcp", "transfer", "ui"},
    "ui": BASE | {"core", "shapes", "server"},  # the web page: built on the server's guards, mounted by `serve`
    "__main__": {"cli"},
    "memvault": {"api"},
}
DOORS = {"api", "server", "mcp", "cli", "ui"}
# The vault's parts (memvault.vault.<part>), lowest first, and which parts each may import.
VAULT_LAYERS: dict[str, set[str]] = {
    "format": set(),
    "git": {"format"},
    "write": {"format", "git"},
    "forget": {"format", "git"},
    "devices": {"format", "git", "write", "forget"},
}
# (importing module, imported module or private attribute) -> why it is allowed.
ALLOWED_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("memvault.vault.write.transaction", "memvault.vault.write.store"):
        "a Transaction names the Vault that opened it in a type annotation only (TYPE_CHECKING)",
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
    # Doors that talk to the model itself, not to memory: the one LLM client is curate.llm's.
    ("memvault.server.proxy", "memvault.curate.llm"):
        "the proxy relays a chat to the configured LLM (lazy litellm, the upstream key): a relay, not memory",
    ("memvault.server.upstream", "memvault.curate.llm"):
        "the pass-through and the relay's client are the LLM client's (the same litellm, routing and key rules)",
    ("memvault.server.request_fields", "memvault.curate.llm"):
        "the fields refused in a relayed request are read from the installed litellm (lazily)",
    ("memvault.server.errors", "memvault.curate.llm"):
        "an upstream error is told from memvault's by the LLM client's own prefix (one pattern for both)",
    ("memvault.server.run", "memvault.curate.llm"):
        "`serve` starts memvault's own model server before the first client (llm.local_model)",
    ("memvault.cli.commands.chat", "memvault.curate.llm"):
        "`chat` talks to the model with the LLM client its flags make; memory goes through core (converse)",
    ("memvault.cli.commands.llm", "memvault.curate.local_llm"):
        "`memvault llm serve` runs the local model server in the foreground: a model process, not memory",
    ("memvault.server.turns", "memvault.curate.queue"):
        "the proxy's background worker drains curate's on-disk queue, curating each turn through Memvault "
        "(core has no worker of its own yet)",
    ("memvault.server.turns", "memvault.curate.refusals"):
        "the proxy hands a conversation's new refusals to its next answer: a tail of curate's refusals file",
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
        elif isinstance(node, ast.AnnAssign) and module == "memvault.shapes" and isinstance(node.value, ast.Dict):
            found |= set(ast.literal_eval(node.value).values())  # HOMES, MODULES: imported on first use
    found.discard(module)
    return found


def part_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def vault_part_of(module: str) -> str | None:
    """format, git, write, forget or devices for a module of the vault's parts; None for others."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and parts[1] == "vault" else None


def layering_violations(module: str, source: str) -> list[str]:
    problems = []
    part = part_of(module)
    for imported in sorted(imports_of(module, source)):
        if (module, imported) in ALLOWED_EXCEPTIONS:
            continue
        target = part_of(imported)
        if part in DOORS and target in BENEATH:
            problems.append(f"{module} imports {imported}: a door goes through memvault.core (or memvault.shapes)")
        elif target != part and target not in ALLOWED.get(part, set()):
            problems.append(f"{module} imports {imported} ({part} may import only {sorted(ALLOWED.get(part, []))})")
        inner, other = vault_part_of(module), vault_part_of(imported)
        if inner and other and other != inner and other not in VAULT_LAYERS.get(inner, set()):
            problems.append(f"{module} imports {imported} (vault.{inner} may import only "
                            f"{sorted(VAULT_LAYERS.get(inner, []))} of the vault's parts)")
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


def test_the_vault_folder_is_its_parts():
    """No flat module in memvault/vault/: each lives in a part (format, git, write, forget, devices),
    and each part is placed in VAULT_LAYERS."""
    flat = sorted(path.name for path in (PACKAGE / "vault").glob("*.py") if path.name != "__init__.py")
    assert flat == []
    parts = {path.name for path in (PACKAGE / "vault").iterdir() if (path / "__init__.py").exists()}
    assert parts == set(VAULT_LAYERS)
    assert {vault_part_of(module) for module in MODULES if vault_part_of(module)} == set(VAULT_LAYERS)


def test_the_vault_package_is_light():
    """`import memvault.vault` loads none of its parts: a command loads the parts it uses."""
    assert imports_of("memvault.vault", MODULES["memvault.vault"]) == set()


def test_imports_point_down_the_layers_only():
    problems = [p for module, source in MODULES.items() for p in layering_violations(module, source)]
    assert problems == []


def test_no_object_is_reached_into():
    problems = [p for module, source in MODULES.items() for p in private_accesses(module, source)]
    assert problems == []


def test_no_surface_reaches_past_the_facade():
    problems = [p for module, source in MODULES.items() for p in facade_bypasses(module, source)]
    assert problems == []


def package_graph() -> dict[str, set[str]]:
    """Which part imports which (memvault.vault's parts apart: vault.format, vault.git...), lazy imports
    included; the package root (its lazy mem0 names) and ALLOWED_EXCEPTIONS left out."""
    def node(module: str) -> str:
        inner = vault_part_of(module)
        return f"vault.{inner}" if inner else part_of(module)

    graph: dict[str, set[str]] = {}
    for module, source in MODULES.items():
        if module == "memvault":
            continue
        for imported in imports_of(module, source) - {"memvault"}:
            if (module, imported) not in ALLOWED_EXCEPTIONS and node(imported) != node(module):
                graph.setdefault(node(module), set()).add(node(imported))
    return graph


def test_no_package_imports_one_that_imports_it_back():
    """settings and the vault, the server and the web page each imported the other (lazily): no more."""
    assert find_cycle(package_graph()) is None


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


def test_every_name_a_door_may_use_beneath_the_facade_is_there():
    import memvault.shapes as shapes

    for name in [*shapes.HOMES, *shapes.MODULES]:
        assert getattr(shapes, name) is not None
    assert {module for module in imports_of("memvault.shapes", MODULES["memvault.shapes"])} <= set(MODULES)


def test_numbers_written_out_to_break_a_cycle_agree_with_their_homes():
    """The vault reads files up to limits.max_file_bytes' default without importing settings, and
    redaction walks metadata without importing the vault: the same numbers as their homes."""
    from memvault.settings import LimitsSettings
    from memvault.text.redact import MAX_DEPTH
    from memvault.vault.format.fields import MAX_METADATA_DEPTH
    from memvault.vault.format.reading import MAX_FILE_BYTES

    assert LimitsSettings().max_file_bytes == MAX_FILE_BYTES
    assert MAX_DEPTH == 2 * MAX_METADATA_DEPTH


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
     "memvault.server.watching imports memvault.index.catchup: a door goes through memvault.core"),
    ("memvault.cli.commands.search", "from memvault.vault.write.store import Vault\n",
     "memvault.cli.commands.search imports memvault.vault.write.store: a door goes through memvault.core"),
    ("memvault.ui.views", "from memvault.vault.format.entry import Entry\n",
     "memvault.ui.views imports memvault.vault.format.entry: a door goes through memvault.core"),
    ("memvault.api.memory", "def f():\n    from memvault.retrieve.filters import filter_from_json\n",
     "memvault.api.memory imports memvault.retrieve.filters: a door"),
    ("memvault.mcp.tools", "from memvault.curate import llm\n",
     "memvault.mcp.tools imports memvault.curate.llm: a door"),
    ("memvault.vault.write.store", "from memvault.vault.devices.merge import KEPT_BOTH\n",
     "memvault.vault.write.store imports memvault.vault.devices.merge (vault.write may import only"),
    ("memvault.vault.format.layout", "from memvault.vault.git import log\n",
     "memvault.vault.format.layout imports memvault.vault.git.log (vault.format"),
    ("memvault.vault.format.reading", "from memvault.settings import LimitsSettings\n",
     "memvault.vault.format.reading imports memvault.settings (vault may import only"),
    ("memvault.server.app", "def f():\n    from memvault.ui.app import mount\n",
     "memvault.server.app imports memvault.ui.app (server may import only"),
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


def test_a_door_may_name_shapes_and_core():
    source = "from memvault.shapes import Entry, layout\nfrom memvault.core import Memvault\n"
    assert layering_violations("memvault.cli.commands.entries", source) == []


def test_a_cycle_is_caught():
    assert find_cycle({"memvault.cli.app": {"memvault.cli.commands.chat"},
                       "memvault.cli.commands.chat": {"memvault.cli.app"}}) is not None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
