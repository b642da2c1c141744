"""The services behind the facade, each built alone from what its constructor takes (a real vault in
tmp_path, no Memvault): a service that reached another through `self` (as the mixins did) fails here
with an AttributeError, and one that needs more than it declares cannot be built this way."""

from __future__ import annotations

import pytest

from memvault import settings
from memvault.core.adding import Adding
from memvault.core.base import Storage
from memvault.core.caller import Caller
from memvault.core.reading import Reading
from memvault.core.rules import Rules
from memvault.core.searching import Searching
from memvault.core.workspace import Workspace
from memvault.errors import NotFoundError
from memvault.vault.write.store import Vault


@pytest.fixture
def storage(tmp_path):
    vault = tmp_path / "vault"
    storage = Storage(settings.load(None, {"vault.path": str(vault)}), Vault.init(vault))
    yield storage
    storage.close()


def test_adding_reading_and_searching_alone(storage):
    searching = Searching(storage)
    reading = Reading(storage, searching)
    adding = Adding(storage, reading, searching)
    stored = adding.add_verbatim("Alice keeps bees on the roof", "garden", scopes={"user_id": "alice"})
    assert reading.get(stored.id, caller=Caller(user_id="alice"))[1].text == "Alice keeps bees on the roof"
    with pytest.raises(NotFoundError):
        reading.get(stored.id, caller=Caller(user_id="bob"))
    assert [hit.id for hit in searching.search("bees", scopes={"user_id": "alice"})] == [stored.id]
    assert searching.search("bees", scopes={"user_id": "bob"}) == []
    adding.update(stored.id, text="Alice keeps bees in the garden")
    assert [event.event for event in reading.history(stored.id)] == ["ADD", "UPDATE"]
    assert [entry.id for entry in adding.delete([stored.id])] == [stored.id]
    assert reading.list(role="memory").entries == []


def test_rules_and_the_workspace_alone(storage):
    searching = Searching(storage)
    reading = Reading(storage, searching)
    rules = Rules(storage, reading, Adding(storage, reading, searching))
    added = rules.add_rule("Answer in French", "chat", {"user_id": "alice"})
    assert added.event == "ADD"
    assert [rule.text for rule in rules.rules("chat", {"user_id": "alice"})] == ["Answer in French"]
    assert rules.rules("chat", {"user_id": "bob"}) == []
    workspace = Workspace(storage, searching)
    rel, changed = workspace.update_core("USER", "Alice, a beekeeper in Coimbra.")
    assert changed and workspace.read_core("USER") == (rel, "Alice, a beekeeper in Coimbra.\n")


SERVICES = {"base": "Storage", "searching": "Searching", "graph": "Graphing", "reading": "Reading",
            "adding": "Adding", "browsing": "Browsing", "rules": "Rules", "importing": "Importing",
            "turns": "TurnWriting", "erasing": "Erasing", "maintenance": "Maintenance", "workspace": "Workspace",
            "sessions": "Sessions", "shared": "Sharing", "syncing": "Syncing", "repairing": "Repairs"}


def reached_through_self(source: str, name: str) -> set[str]:
    """The names a class reads from `self` that it neither defines nor is given: a call into another
    service (or a mixin sibling) that no constructor declares."""
    import ast

    node = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == name)
    own = {item.name for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)}
    own |= {target.id for item in node.body if isinstance(item, ast.Assign | ast.AnnAssign)
            for target in (item.targets if isinstance(item, ast.Assign) else [item.target])
            if isinstance(target, ast.Name)}
    reads = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == "self":
            (own.add if isinstance(sub.ctx, ast.Store) else reads.add)(sub.attr)
    return reads - own - {"__dict__"}


@pytest.mark.parametrize("module", sorted(SERVICES))
def test_no_service_reaches_another_through_self(module):
    from pathlib import Path

    import memvault.core

    source = (Path(memvault.core.__file__).parent / f"{module}.py").read_text(encoding="utf-8")
    assert reached_through_self(source, SERVICES[module]) == set()


def test_the_check_can_fail():
    mixin = "class Rules:\n    def remove(self, memory_id):\n        return self.delete([memory_id])\n"
    assert reached_through_self(mixin, "Rules") == {"delete"}
    given = ("class Rules:\n    def __init__(self, adding):\n        self.adding = adding\n"
             "    def remove(self, memory_id):\n        return self.adding.delete([memory_id])\n")
    assert reached_through_self(given, "Rules") == set()


def test_the_architecture_doc_lists_the_facade_s_surface_by_service():
    """docs/architecture.md, The facade: each public name of `Memvault` is listed once, under the service
    its call is handed to (`Memvault` itself: open, clone, close and the properties)."""
    import re
    from pathlib import Path

    from memvault.core import Memvault

    doc = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc.split("The facade's public surface", 1)[1].split("Beside them", 1)[0]
    listed = {}
    for line in section.splitlines():
        if line.startswith("- `"):
            owner, names = line[2:].split(":", 1)
            for name in re.findall(r"`([^`]+)`", names):
                listed[name] = owner.strip("` ").removesuffix("` itself")
    public = {name for name in dir(Memvault) if not name.startswith("_")}
    assert set(listed) == public
    for name, owner in listed.items():
        attr = Memvault.__dict__[name]
        made_by = "Memvault" if isinstance(attr, property | classmethod) or name == "close" else \
            attr.__qualname__.split(".")[0]
        assert made_by == owner, name
