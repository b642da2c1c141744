"""The documentation site (mkdocs.yml, docs/) builds with `mkdocs build --strict`, offline: a broken
link or anchor, or a page in docs/ left out of the nav, fails the build, so links cannot rot."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    pytest.importorskip("mkdocs", reason="mkdocs is in the dev extra: pip install -e '.[dev]'")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, timeout=120, cwd=config.parent)


def test_the_site_builds_strictly_with_every_page_of_docs(tmp_path):
    done = build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    pages = {path.relative_to(ROOT / "docs").with_suffix("") for path in (ROOT / "docs").glob("*.md")}
    for page in pages:
        built = tmp_path / "site" / ("index.html" if page.name == "index" else f"{page}/index.html")
        assert built.is_file(), f"docs/{page}.md was not built"
    assert "architecture/" in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    loaded = [(html.name, found) for html in (tmp_path / "site").rglob("*.html")
              for found in re.findall(r'(?:src=|<link[^>]*href=)"(https?://[^"]+)"', html.read_text(encoding="utf-8"))]
    assert loaded == []  # read offline: nothing loaded from another host


@pytest.mark.parametrize("broken", ["[gone](no-such-page.md)", "[gone](architecture.md#no-such-section)"])
def test_a_broken_link_fails_the_build(tmp_path, broken):
    """The same site with one bad link added: strict mode refuses it (the guard above can fail)."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    index = copy / "docs" / "index.md"
    index.write_text(index.read_text(encoding="utf-8") + f"\nSee {broken}.\n", encoding="utf-8")
    done = build(copy / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0 and broken.split("(")[1].rstrip(")").split("#")[-1] in done.stderr, done.stderr
