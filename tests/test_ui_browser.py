"""The web page in a real browser: Playwright's Python API driving Debian's chromium (one browser for
the module) against `memvault ui`'s app on a loopback port, over a vault with a past."""

from __future__ import annotations

import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.server import isolated_env
from tests.support.ui import (
    BEFORE,
    CAT_FACT,
    CAT_TURN,
    TEA_BEFORE,
    TEA_NOW,
    YESTERDAY,
    build_vault,
    serving,
    settings_for,
)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]


def missing(reason: str) -> None:
    """Skip with the reason; under CI (CI set) the browser must be there, so fail instead."""
    import os

    (pytest.fail if os.environ.get("CI") else pytest.skip)(reason)


def launch(playwright):
    """Debian's chromium under Playwright, or a skip that says what is missing."""
    import os

    if not os.path.exists(CHROMIUM):
        missing("no chromium at /usr/bin/chromium: `apt-get install chromium` (scripts/test does, as root)")
    return playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    try:
        from playwright import sync_api
    except ImportError:
        missing("playwright is not installed (pip install playwright; it is in .[dev])")
    home = tmp_path_factory.mktemp("home")
    with isolated_env(home):
        built = build_vault(tmp_path_factory.mktemp("browser") / "vault")
        with serving(settings_for(built.root)) as base, sync_api.sync_playwright() as playwright:
            browser = launch(playwright)
            try:
                yield base, built, browser
            finally:
                browser.close()


def new_tab(browser):
    """(context, tab): a fresh browser context, as a person's window."""
    context = browser.new_context(viewport={"width": 1100, "height": 800})
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    return context, tab


@pytest.fixture()
def page(site):
    base, built, browser = site
    context, tab = new_tab(browser)
    dialogs, requests = [], []
    tab.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    tab.on("request", lambda request: requests.append(request.url))
    yield tab, base, built, dialogs, requests
    context.close()


def commits(root) -> list[str]:
    return subprocess.run(["git", "-C", str(root), "log", "--format=%s"], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def test_search_finds_a_memory(page):
    tab, base, _, _, _ = page
    tab.goto(base + "/ui/")
    tab.keyboard.press("/")  # the keyboard shortcut focuses the search box
    tab.keyboard.type("where does Alice live")
    tab.keyboard.press("Enter")
    tab.wait_for_url("**/ui/search?**")
    assert "Alice lives in Lisbon." in tab.locator("ol.hits").inner_text()
    assert tab.locator("ol.hits meter").count() > 0  # the explain stages, as bars


def test_an_edit_is_one_commit_and_history_keeps_the_old_text(page):
    tab, base, built, _, _ = page
    before = commits(built.root)
    tab.goto(f"{base}/ui/m/{built.note}")
    tab.fill("#text", "Bob plays the cello on Sundays.")
    tab.click("text=Save text")
    tab.wait_for_url("**saved=1")
    after = commits(built.root)
    assert len(after) == len(before) + 1 and after[0].startswith("memvault update: Bob plays the cello")
    assert tab.inner_text("#memory-text") == "Bob plays the cello on Sundays."
    history = tab.locator("ol.history").inner_text()
    assert "Bob plays the violin on Sundays." in history and "Bob plays the cello on Sundays." in history


def test_the_time_picker_shows_yesterdays_text(page):
    tab, base, built, _, _ = page
    tab.goto(f"{base}/ui/m/{built.tea}")
    assert tab.inner_text("#memory-text") == TEA_NOW
    tab.fill("#at", YESTERDAY)
    tab.click(".timepicker button")
    tab.wait_for_url(f"**at={YESTERDAY}")
    assert tab.inner_text("#memory-text") == TEA_BEFORE
    assert YESTERDAY in tab.inner_text(".banner")


def test_a_stored_script_stays_inert(page):
    tab, base, built, dialogs, requests = page
    for path in (f"/ui/m/{built.xss}", "/ui/memories", "/ui/c/alice", "/ui/search?q=img+script+fetch", "/ui/log"):
        tab.goto(base + path)
        tab.wait_for_load_state("networkidle")
    assert dialogs == []
    assert all(url.startswith(base + "/ui/") for url in requests), [u for u in requests if "/ui/" not in u]
    assert not any(url.endswith(("/x", "/stolen")) for url in requests)
    assert tab.locator("img").count() == 0 and tab.locator("main script").count() == 0


class Attacker(BaseHTTPRequestHandler):
    """A page elsewhere (another port) whose form posts an edit to the vault's page."""

    target = ""

    def do_GET(self):  # noqa: N802 - http.server's name
        body = (f'<form id="f" method="post" action="{self.target}"><input name="text" value="pwned">'
                '<input name="csrf_token" value="guess"></form><script>document.getElementById("f").submit()</script>')
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


def test_a_cross_origin_post_is_refused(page):
    tab, base, built, _, _ = page
    Attacker.target = f"{base}/ui/m/{built.tea}/text"
    server = ThreadingHTTPServer(("127.0.0.1", 0), Attacker)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    before = commits(built.root)
    try:
        with tab.expect_response(lambda r: r.request.method == "POST") as answer:
            tab.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        assert answer.value.status == 403
    finally:
        server.shutdown()
    assert commits(built.root) == before
    tab.goto(f"{base}/ui/m/{built.tea}")
    assert tab.inner_text("#memory-text") == TEA_NOW


def test_the_graph_renders(page, tmp_path):
    tab, base, _, _, _ = page
    tab.goto(base + "/ui/graph?entity=Alice")
    svg = tab.locator("svg.graph")
    assert svg.is_visible()
    assert tab.locator("svg.graph circle").count() == 4 and tab.locator("svg.graph line").count() == 3
    box = svg.bounding_box()
    assert box["width"] > 300 and box["height"] > 300
    labels = tab.locator("svg.graph text").all_text_contents()
    assert {"alice", "lisbon", "acme", "miso"} <= set(labels)
    assert svg.screenshot(path=str(tmp_path / "graph.png"))


def test_the_readme_screenshots_are_taken(site, tmp_path):
    """The pictures of docs/web-page.md (scripts/screenshots.py writes them to docs/)."""
    from tests.support.ui import shoot

    base, built, browser = site
    for path in shoot(browser, base, built, tmp_path):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5_000, path.name


def test_the_graph_and_the_timeline_at_yesterday_show_yesterdays_state(page):
    """The time box on the graph keeps the entity; from there the links stay at yesterday (the
    overview, then the conversation's timeline) until "Back to now"."""
    tab, base, _, _, _ = page
    tab.goto(base + "/ui/graph?entity=Alice")
    assert tab.locator("svg.graph circle").count() == 4
    tab.fill("#at", YESTERDAY)
    tab.click(".timepicker button")
    tab.wait_for_url(f"**at={YESTERDAY}**")
    assert "entity=Alice" in tab.url
    assert tab.locator("svg.graph circle").count() == 3 and tab.locator("svg.graph line").count() == 2
    assert "miso" not in tab.locator("svg.graph text").all_text_contents()
    assert YESTERDAY in tab.inner_text(".banner")
    tab.click("header nav >> text=memvault")  # the overview, still at yesterday
    tab.click("table.rows >> text=trip")
    tab.wait_for_url("**/ui/c/trip?at=*")
    timeline = tab.inner_text("ol.timeline")
    assert "Alice lives in Lisbon." in timeline and CAT_TURN not in timeline and CAT_FACT not in timeline
    assert tab.locator("form[method=post]").count() == 0  # no edit in the past
    tab.click(".banner >> text=Back to now")
    tab.wait_for_url("**/ui/c/trip")
    assert CAT_TURN in tab.inner_text("ol.timeline") and CAT_FACT in tab.inner_text("ol.timeline")


# -- a newcomer's rough edges (issue 37) ------------------------------------------------------------
@pytest.fixture()
def accepting(site):
    """A tab that answers the page's confirmations with OK (a person who meant to click)."""
    base, built, browser = site
    context, tab = new_tab(browser)
    tab.on("dialog", lambda dialog: dialog.accept())
    yield tab, base, built
    context.close()


def search_hits(tab, base, query: str) -> str:
    tab.goto(f"{base}/ui/search?q={query.replace(' ', '+')}")
    return tab.locator("main").inner_text()


def test_a_memory_restored_on_the_page_is_searched_again_at_once(accepting):
    from tests.support.cli import Cli

    tab, base, built = accepting
    assert TEA_NOW in search_hits(tab, base, "what tea does Alice drink")
    tab.goto(f"{base}/ui/m/{built.tea}")
    tab.click("button:has-text('Delete')")
    tab.wait_for_url("**saved=deleted")
    assert TEA_NOW not in search_hits(tab, base, "what tea does Alice drink")
    tab.goto(f"{base}/ui/m/{built.tea}")
    tab.click("button:has-text('Restore')")
    tab.wait_for_url("**saved=restored")
    assert TEA_NOW in search_hits(tab, base, "what tea does Alice drink")  # no reindex, no watcher
    cli = Cli(built.root)
    assert TEA_NOW in cli.ok("search", "what tea does Alice drink").stdout
    assert "not indexed" not in cli("doctor").stdout


def test_a_memory_as_of_yesterday_lists_its_history_up_to_then(page):
    tab, base, built, _, _ = page
    tab.goto(f"{base}/ui/m/{built.tea}")
    assert "UPDATE" in tab.inner_text("ol.history")  # made today
    tab.goto(f"{base}/ui/m/{built.tea}?at={YESTERDAY}")
    history = tab.inner_text("ol.history")
    assert "ADD" in history and TEA_BEFORE in history
    assert not any(later in history for later in ("UPDATE", "DELETE", "RESTORE", TEA_NOW))


def test_a_moment_before_the_vault_says_so_and_offers_its_first_commit(page):
    from datetime import date, timedelta

    tab, base, _, _, _ = page
    earlier = (date.fromisoformat(BEFORE) - timedelta(days=1)).isoformat()
    tab.goto(base + "/ui/graph?entity=Alice")
    tab.fill("#at", earlier)
    tab.click(".timepicker button")
    tab.wait_for_url(f"**at={earlier}**")
    said = tab.inner_text("main")
    assert f"The vault did not exist yet on {earlier}: its first commit" in said and BEFORE in said
    assert "search" not in said.lower()
    tab.click("text=See the vault at its first commit")
    tab.wait_for_url("**entity=Alice**")
    assert "As of" in tab.inner_text(".banner") and tab.locator("svg.graph circle").count() == 0


def test_the_changes_page_opens_on_the_last_week(page):
    tab, base, _, _, _ = page
    tab.goto(base + "/ui/")
    tab.click("header nav >> text=Changes")
    tab.wait_for_url("**/ui/changes")
    shown = tab.inner_text("main")
    assert "The last 7 days" in shown
    assert tab.locator("ol.changes li .op").count() >= 6 and "Alice lives in Lisbon." in shown


def test_saving_an_unchanged_text_makes_no_commit_and_says_so(page):
    tab, base, built, _, _ = page
    before = commits(built.root)
    tab.goto(f"{base}/ui/m/{built.fact}")
    tab.click("text=Save text")  # the text as it is
    tab.wait_for_url("**saved=unchanged")
    assert tab.inner_text("p.ok") == "Nothing changed: no commit was made."
    assert commits(built.root) == before


def test_every_page_finds_all_it_asks_for_and_has_an_icon(page):
    tab, base, built, _, _ = page
    failed, icons = [], []
    tab.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    tab.on("response", lambda r: icons.append((r.status, r.headers.get("content-type")))
           if "favicon" in r.url else None)
    for path in ("/ui/", f"/ui/m/{built.tea}", "/ui/memories", "/ui/log", "/ui/changes", "/ui/graph?entity=Alice"):
        tab.goto(base + path)
        tab.wait_for_load_state("networkidle")
    assert failed == []
    icon = tab.locator("link[rel=icon]").get_attribute("href")
    fetched = tab.request.get(base + icon)
    assert fetched.status == 200 and fetched.headers["content-type"].startswith("image/svg+xml")
    assert all(status == 200 for status, _ in icons)
