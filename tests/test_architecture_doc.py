"""docs/architecture.md is the map the code cites: every citation names a section it has."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
CITATION = re.compile(r"docs/architecture\.md,\s+([A-Z][a-z]+(?: [a-z]+)*)")


def sources():
    for folder in ("memvault", "scripts", "tests"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in (".py", ".sh") and path.is_file():
                yield path, path.read_text(encoding="utf-8")


def test_every_citation_names_a_section_of_the_document():
    sections = set(re.findall(r"^## (.+)$", DOC.read_text(encoding="utf-8"), re.MULTILINE))
    cited = {(path.relative_to(ROOT).as_posix(), name) for path, text in sources() for name in CITATION.findall(text)}
    assert cited, "the code cites docs/architecture.md"
    assert not [(where, name) for where, name in cited if name not in sections], sections


def test_nothing_cites_the_design_file_the_repository_does_not_have():
    stale = [path.relative_to(ROOT).as_posix() for path, text in sources()
             if re.search(r"DESIGN(\.md|'s| s\d)", text) and path.name != Path(__file__).name]
    assert not stale


# -- what the document says of the code, checked against it -------------------------------------------------
def doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def section(title: str) -> str:
    text = doc_text()
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end > 0 else None]


def resolves(path: str) -> bool:
    """A module path as the document writes it: from the repository's root, from memvault/, or from
    one of the folders the sentence is about (`git/log.py` beside `memvault/vault/git/repository.py`)."""
    bases = [ROOT, ROOT / "memvault", ROOT / "memvault" / "vault", ROOT / "tests"]
    return any((base / path).is_file() or (base / path).is_dir() for base in bases)


def test_every_module_path_the_document_names_is_there():
    """A module moved or renamed (the vault's parts, issue 35) leaves no stale path behind."""
    named = set(re.findall(r"`((?:[\w.-]+/)+[\w.-]+\.py)`", doc_text()))
    assert len(named) > 100
    assert sorted(path for path in named if not resolves(path)) == []


def test_the_vault_parts_table_names_every_module_of_the_parts():
    rows = re.findall(r"^\| `((?:text|vault)/[\w/]+\.py)` \|", section("The vault's parts"), re.MULTILINE)
    on_disk = {path.relative_to(ROOT / "memvault").as_posix() for folder in ("text", "vault")
               for path in (ROOT / "memvault" / folder).rglob("*.py") if path.name != "__init__.py"}
    assert len(rows) == len(set(rows))
    assert set(rows) == on_disk


def test_the_import_graph_paragraph_is_the_graph_the_architecture_test_holds():
    from tests.test_architecture import ALLOWED, ALLOWED_EXCEPTIONS, DOORS, VAULT_LAYERS, part_of

    text = " ".join(section("Data flow").split())
    chain = re.search(r"Imports point one way: `([^`]+)`", text)[1].split(" ← ")
    assert chain[-1] == "doors"
    for lower, upper in zip(chain[:-2], chain[1:-1], strict=True):
        assert lower in ALLOWED[upper] and upper not in ALLOWED[lower], (lower, upper)
    assert all(chain[-2] in ALLOWED[door] for door in DOORS)
    vault = re.search(r"the vault's own parts point one way too: `([^`]+)`", text)[1]
    layers = [[part.strip() for part in level.split(",")] for level in vault.split(" ← ")]
    seen: set[str] = set()
    for level in layers:
        for part in level:
            assert VAULT_LAYERS[part] <= seen and not VAULT_LAYERS[part] & set(level), part
        seen |= set(level)
    assert seen == set(VAULT_LAYERS)
    named = set(re.findall(r"`(curate\.\w+)`", text))
    excepted = {imported.removeprefix("memvault.") for (module, imported) in ALLOWED_EXCEPTIONS
                if part_of(module) in DOORS and imported.startswith("memvault.")}
    assert named == excepted
