"""Screenshots of the web page for the README: `python scripts/screenshots.py [OUT]` (default docs/).

A scratch vault with a past (tests/support/ui.py, the browser tests' own), served by `memvault ui`'s
app, photographed by Debian's chromium through Playwright; tests/test_ui_browser.py takes the same
pictures on every run, so these stay true."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.support.ui import build_vault, serving, settings_for, shoot  # noqa: E402
from tests.test_ui_browser import ARGS, CHROMIUM  # noqa: E402


def main() -> None:
    from playwright.sync_api import sync_playwright

    out = Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "docs"
    with tempfile.TemporaryDirectory() as tmp:
        built = build_vault(Path(tmp) / "vault")
        with serving(settings_for(built.root)) as base, sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            for path in shoot(browser, base, built, out):
                print(path.relative_to(REPO) if path.is_relative_to(REPO) else path)
            browser.close()


if __name__ == "__main__":
    main()
