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
