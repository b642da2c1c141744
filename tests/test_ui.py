"""The web page in-process (FastAPI's TestClient over the real app, a real vault in git): every page
renders and escapes, writes are one commit and refused from elsewhere, time travel reads the past,
keys and scopes hold under /ui in `memvault serve`. The real browser: tests/test_ui_browser.py."""

from __future__ import annotations

import re
import subprocess

import pytest
from fastapi.testclient import TestClient

from tests.support.cli import run_memvault
from tests.support.server import isolated_env
from tests.support.ui import (
    BEFORE,
    CAT_FACT,
    CAT_TURN,
    CURATOR,
    TEA_BEFORE,
    TEA_NOW,
    XSS,
    YESTERDAY,
    build_vault,
    noon,
    settings_for,
)

SELF = {"origin": "http://127.0.0.1"}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    with isolated_env(home):
        yield build_vault(tmp_path_factory.mktemp("ui") / "vault"), home


@pytest.fixture()
def client(built):
    from memvault.ui.app import create_app

    found, home = built
    with isolated_env(home), TestClient(create_app(settings_for(found.root)), base_url="http://127.0.0.1") as c:
        yield c, found


def commits(root) -> int:
    return int(subprocess.run(["git", "-C", str(root), "rev-list", "--count", "HEAD"], capture_output=True,
                              text=True, check=True).stdout)


def git_log_all(root) -> str:
    return subprocess.run(["git", "-C", str(root), "log", "--all", "-p"], capture_output=True, text=True,
                          check=True).stdout


def token(html: str) -> str:
    return re.search(r'name="csrf_token" value="([0-9a-f]+)"', html).group(1)


def error_of(html: str) -> str:
    found = re.search(r'class="error"[^>]*>(.*?)</p>', html, re.S)
    return found.group(1) if found else ""


def test_every_page_renders_with_the_security_headers(client):
    c, found = client
    for path in ("/ui/", "/ui/memories", "/ui/memories?role=all", "/ui/c/trip", "/ui/c/alice",
                 f"/ui/m/{found.fact}", "/ui/search?q=tea", "/ui/log", f"/ui/changes?start={YESTERDAY}",
                 "/ui/graph?entity=Alice", "/ui/core/USER", f"/ui/journal/{YESTERDAY}", f"/ui/memories?at={YESTERDAY}"):
        answer = c.get(path)
        assert answer.status_code == 200, (path, error_of(answer.text))
        assert "script-src 'self'" in answer.headers["content-security-policy"], path
        assert "unsafe-inline" not in answer.headers["content-security-policy"]
        assert "<script>" not in answer.text and "onerror=" not in answer.text.replace("onerror=alert", ""), path


def test_stored_markup_is_shown_as_text_everywhere(client):
    c, found = client
    for path in ("/ui/memories", f"/ui/m/{found.xss}", "/ui/c/alice", "/ui/search?q=script+alert+img", "/ui/log"):
        html = c.get(path).text
        assert "<img src=x" not in html and "<script>fetch" not in html, path
    assert "&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;" in c.get(f"/ui/m/{found.xss}").text


def test_the_timeline_puts_each_fact_beside_its_turn(client):
    c, found = client
    html = c.get("/ui/c/trip").text
    turn = html[html.index(f'id="t-{found.turn}"'):]
    turn = turn[:turn.index("</li>\n<li") if "</li>\n<li" in turn else len(turn)]
    assert "Alice lives in Lisbon." in turn and "Alice works at Acme." in turn
    assert "Answer in British English." in html  # the rule


def test_memory_page_shows_history_and_provenance(client):
    c, found = client
    html = c.get(f"/ui/m/{found.tea}").text
    assert re.findall(r'class="op op-\w+">(\w+)<', html) == ["ADD", "UPDATE"]
    assert TEA_BEFORE in html and TEA_NOW in html and "<del>green</del>" in html and "<ins>jasmine</ins>" in html
    fact = c.get(f"/ui/m/{found.fact}").text
    assert f'href="/ui/m/{found.turn}"' in fact  # the source turn, linked
    assert "I moved to Lisbon" in fact  # its evidence


def test_time_travel_shows_yesterdays_text_and_what_changed(client):
    c, found = client
    then = c.get(f"/ui/m/{found.tea}?at={YESTERDAY}").text
    shown = re.search(r'id="memory-text">(.*?)</div>', then, re.S).group(1)
    assert shown == TEA_BEFORE
    listing = c.get(f"/ui/memories?at={YESTERDAY}").text
    assert TEA_BEFORE in listing and TEA_NOW not in listing
    changes = c.get(f"/ui/changes?start={YESTERDAY}").text
    assert "<del>green</del>" in changes and "<ins>jasmine</ins>" in changes
    times = subprocess.run(["git", "-C", str(found.root), "log", "--format=%ct"], capture_output=True, text=True,
                           check=True).stdout.split()
    since = sum(int(t) > noon(YESTERDAY).timestamp() + 12 * 3600 for t in times)  # today's commits
    assert since >= 3 and f"{since} commit(s)" in changes


def links_of(html: str) -> list[str]:
    return [link.replace("&amp;", "&") for link in re.findall(r'href="(/ui/[^"]*)"', html)
            if not link.startswith("/ui/static/")]


def test_every_page_travels_in_time_and_keeps_its_moment(client):
    """At yesterday, each page shows yesterday's vault, says so, links onward at the same moment,
    and offers no edit."""
    c, found = client
    now, then = c.get("/ui/").text, c.get(f"/ui/?at={YESTERDAY}").text
    trip = re.compile(r'>trip</a></td>\s*<td><a[^>]*>(\d+)</a></td>\s*<td>(\d+)</td>')
    assert trip.search(now).groups() == ("3", "2") and trip.search(then).groups() == ("2", "1")  # facts, turns
    timeline = c.get(f"/ui/c/trip?at={YESTERDAY}").text
    assert "Alice lives in Lisbon." in timeline and CAT_TURN not in timeline and CAT_FACT not in timeline
    assert CAT_TURN in c.get("/ui/c/trip").text
    graph = c.get(f"/ui/graph?entity=Alice&at={YESTERDAY}").text
    assert graph.count("<circle") == 3 and graph.count("<line") == 2 and CAT_FACT not in graph
    core_then = c.get(f"/ui/core/USER?at={YESTERDAY}").text
    assert "The user is Alice" not in core_then and "The user is Alice" in c.get("/ui/core/USER").text
    log_then = c.get(f"/ui/log?at={YESTERDAY}").text
    assert "memvault chat: a turn and its facts" in log_then and "memvault core: edit USER.md" not in log_then
    assert "memvault core: edit USER.md" in c.get("/ui/log").text
    assert "memvault core: create" in c.get(f"/ui/log?at={BEFORE}").text
    assert "a turn and its facts" not in c.get(f"/ui/log?at={BEFORE}").text
    for path in ("/ui/", "/ui/c/trip", "/ui/graph?entity=Alice", "/ui/core/USER", "/ui/log", "/ui/memories",
                 f"/ui/m/{found.fact}", "/ui/search?q=tea"):
        joiner = "&" if "?" in path else "?"
        html = c.get(f"{path}{joiner}at={YESTERDAY}").text
        assert f'class="banner" role="status">As of <strong>{YESTERDAY}</strong>' in html, path
        assert 'method="post"' not in html, path  # no edit while viewing the past
        back = re.search(r'<a href="([^"]*)">Back to now</a>', html).group(1).replace("&amp;", "&")
        assert back == path, path
        onward = [link for link in links_of(html) if link != back and not link.startswith("/ui/changes")]
        # onward links keep the moment (the log's and history's "as then" links name their commit)
        assert onward and all(re.search(r"[?&]at=", link) for link in onward), (path, onward)
    assert f"start={YESTERDAY}" in c.get(f"/ui/?at={YESTERDAY}").text  # the Changes link: since then


def test_a_curated_fact_shows_its_model_and_source_turn(client):
    c, found = client
    html = c.get(f"/ui/m/{found.cat}").text
    model = re.search(r"<dt>model</dt><dd>(.*?)</dd>", html).group(1)
    assert model == CURATOR
    assert f'<dt>source turn</dt><dd><a href="/ui/m/{found.cat_turn}">' in html
    assert CAT_TURN in c.get(f"/ui/m/{found.cat_turn}").text
    older = c.get(f"/ui/m/{found.fact}").text  # written before provenance was recorded
    assert re.search(r"<dt>model</dt><dd>(.*?)</dd>", older).group(1) == "not recorded"
    assert re.search(r"<dt>session</dt><dd>(.*?)</dd>", older).group(1) == "not recorded"


def test_search_explains_its_ranking(client):
    c, _ = client
    html = c.get("/ui/search?q=where+does+Alice+live").text
    assert "Alice lives in Lisbon." in html
    assert "<meter" in html and "relevance" in html
    assert 'href="/ui/core/USER"' in html  # a core file found links to its page, not to a memory


def test_the_graph_is_an_svg_with_the_facts_behind_its_edges(client):
    c, found = client
    html = c.get("/ui/graph?entity=Alice").text
    assert html.count("<circle") == 4 and html.count("<line") == 3  # Lisbon, Acme, and today's cat
    assert f'href="/ui/m/{found.fact}"' in html and f'href="/ui/m/{found.cat}"' in html


def test_an_edit_is_one_commit_and_bad_edits_change_nothing(client):
    c, found = client
    page = c.get(f"/ui/m/{found.xss}").text
    before = commits(found.root)
    done = c.post(f"/ui/m/{found.note}/text", data={"text": "Bob plays the cello.", "csrf_token": token(page)},
                  headers=SELF, follow_redirects=False)
    assert done.status_code == 303 and commits(found.root) == before + 1
    assert "Bob plays the cello." in c.get(f"/ui/m/{found.note}").text
    content = c.get(f"/ui/m/{found.note}").text
    file_text = re.search(r'<textarea id="content"[^>]*>(.*?)</textarea>', content, re.S).group(1)
    for bad, why in ((file_text.replace("id: ", "id: 0", 1), "id"), ("---\n: [\n---\nx", "front matter"),
                     (file_text.replace("Bob plays the cello.", "   "), "empty")):
        import html as html_module

        answer = c.post(f"/ui/m/{found.note}/file", data={"content": html_module.unescape(bad),
                                                           "csrf_token": token(page)}, headers=SELF)
        assert answer.status_code == 400, why
        assert "nothing changed" in error_of(answer.text), why
    assert commits(found.root) == before + 1


def test_writes_from_elsewhere_are_refused(client):
    c, found = client
    good = token(c.get("/ui/core/USER").text)
    before = commits(found.root)
    for headers, sent in (({"origin": "http://evil.example"}, good), ({"origin": "http://127.0.0.1:9"}, good),
                          ({}, good), (SELF, "0" * 64), (SELF, ""),
                          ({**SELF, "sec-fetch-site": "cross-site"}, good)):
        answer = c.post(f"/ui/m/{found.tea}/text", data={"text": "pwned", "csrf_token": sent}, headers=headers)
        assert answer.status_code == 403, headers
    assert commits(found.root) == before


def test_delete_then_restore(client):
    c, found = client
    good = token(c.get("/ui/core/USER").text)
    assert c.post(f"/ui/m/{found.xss}/delete", data={"csrf_token": good}, headers=SELF).status_code == 200
    assert XSS not in c.get("/ui/memories").text.replace("&lt;", "<").replace("&gt;", ">").replace("&#34;", '"')
    page = c.post(f"/ui/m/{found.xss}/restore", data={"csrf_token": good}, headers=SELF).text
    assert re.findall(r'class="op op-\w+">(\w+)<', page) == ["ADD", "DELETE", "RESTORE"]
    unconfirmed = c.post(f"/ui/m/{found.xss}/erase", data={"csrf_token": good, "confirm": "nope"}, headers=SELF)
    assert unconfirmed.status_code == 400 and "to confirm erasing it" in unconfirmed.text
    assert "onerror" in git_log_all(found.root)  # nothing erased without the confirmation
    erased = c.post(f"/ui/m/{found.xss}/erase", data={"csrf_token": good, "confirm": found.xss[:8]}, headers=SELF)
    assert erased.status_code == 200 and "onerror" not in git_log_all(found.root)  # gone from every commit
    assert "erase" in git_log_all(found.root).lower()  # and the erasure record says something was


def test_core_files_and_rules_are_edited_in_one_commit_each(client):
    c, found = client
    good = token(c.get("/ui/core/USER").text)
    before = commits(found.root)
    c.post("/ui/core/MEMORY", data={"text": "Project: the page.\r\n", "csrf_token": good}, headers=SELF)
    assert "Project: the page." in c.get("/ui/core/MEMORY").text
    c.post("/ui/c/trip/rules", data={"text": "Keep answers short.", "csrf_token": good}, headers=SELF)
    assert "Keep answers short." in c.get("/ui/c/trip").text
    assert commits(found.root) == before + 2


def test_bad_input_is_a_clear_error_page(client):
    c, _ = client
    for path, status in (("/ui/m/nope", 404), ("/ui/core/../../etc", 404), ("/ui/core/PASSWD", 400),
                         ("/ui/memories?at=1999-01-01", 400), ("/ui/search?q=x&at=--output=x", 400),
                         ("/ui/graph?entity=x&depth=99", 400), ("/ui/journal/yesterday", 400),
                         ("/ui/c/trip?at=1999-01-01", 400), ("/ui/core/USER?at=--output=x", 400),
                         ("/ui/?at=2999-01-01", 400), ("/ui/log?at=nope%0A", 400)):
        answer = c.get(path)
        assert answer.status_code == status, path
        assert "Traceback" not in answer.text


def test_serve_mounts_the_page_behind_its_keys(built):
    import httpx

    from memvault.server.app import create_app
    from memvault.server.run import running
    from memvault.ui.app import mount

    found, home = built
    keys = {"alice-key": {"user_id": ("alice",)}}
    settings = settings_for(found.root, api_key="admin-key", keys=keys)
    with isolated_env(home), running(settings, app=create_app(settings, page=mount)) as base:
        refused = httpx.get(base + "/ui/")
        assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Basic")
        assert httpx.get(base + "/ui/", auth=("me", "admin-key")).status_code == 200
        assert httpx.get(base + "/ui/", auth=("me", "wrong")).status_code == 401
        admin = httpx.get(base + "/ui/memories?role=all", auth=("me", "admin-key")).text
        assert "Alice lives in" in admin
        # a scoped key sees its own scope only: none of these memories is alice's user_id
        scoped = httpx.get(base + "/ui/memories?role=all", auth=("me", "alice-key")).text
        assert "Alice lives in" not in scoped
        assert httpx.get(base + f"/ui/m/{found.fact}", auth=("me", "alice-key")).status_code == 404
        assert httpx.get(base + "/ui/log", auth=("me", "alice-key")).status_code == 403
        # the past is walled as the present: the past's index is read with the key's scopes
        then = httpx.get(base + f"/ui/c/trip?at={YESTERDAY}", auth=("me", "alice-key"))
        assert then.status_code == 200 and "Alice lives in" not in then.text
        assert "Alice lives in" in httpx.get(base + f"/ui/c/trip?at={YESTERDAY}", auth=("me", "admin-key")).text
        graph = httpx.get(base + f"/ui/graph?entity=Alice&at={YESTERDAY}", auth=("me", "alice-key")).text
        assert "<circle" not in graph and "<circle" in httpx.get(
            base + f"/ui/graph?entity=Alice&at={YESTERDAY}", auth=("me", "admin-key")).text
        assert httpx.get(base + f"/ui/log?at={YESTERDAY}", auth=("me", "alice-key")).status_code == 403
        assert httpx.get(base + "/ui/", headers={"host": "evil.example"}, auth=("me", "admin-key")).status_code == 421


def test_memvault_serve_serves_the_page_it_hands_the_server(built):
    """The server never imports the page (no package cycle): the CLI's `serve` hands it over."""
    import httpx

    from tests.support.server import memvault_serve

    found, home = built
    with isolated_env(home), memvault_serve(found.root, {}) as base:
        page = httpx.get(base + "/ui/memories?role=all", timeout=60)
    assert page.status_code == 200 and "Alice lives in" in page.text


def test_ui_refuses_a_public_bind_without_a_key(tmp_path):
    done = run_memvault("ui", "--host", "0.0.0.0", "--no-browser", "--vault", str(tmp_path / "v"))
    stderr = done.stderr.decode()
    assert done.returncode == 1
    assert stderr.strip().count("\n") == 0 and "refusing to bind 0.0.0.0 without an API key" in stderr


def test_ui_on_a_missing_vault_says_so_in_one_line(tmp_path):
    done = run_memvault("ui", "--no-browser", "--port", "0", "--vault", str(tmp_path / "nothing"))
    assert done.returncode != 0
    assert "Traceback" not in done.stderr.decode() and len(done.stderr.decode().strip().splitlines()) == 1


def test_the_time_box_opens_a_page_that_can_show_the_past(client):
    c, found = client
    assert 'class="timepicker" action="/ui/log"' in c.get("/ui/log").text  # every page travels in place
    assert 'class="timepicker" action="/ui/memories"' in c.get(f"/ui/changes?start={YESTERDAY}").text
    assert f'class="timepicker" action="/ui/m/{found.tea}"' in c.get(f"/ui/m/{found.tea}").text
    search = c.get("/ui/search?q=tea").text
    assert 'class="timepicker" action="/ui/search"' in search and 'type="hidden" name="q" value="tea"' in search


def git_processes(monkeypatch) -> list[list[str]]:
    """The git commands started from now on (GitPython's and memvault's own), in any thread."""
    import subprocess

    started: list[list[str]] = []
    real = subprocess.Popen.__init__

    def counting(self, args, *rest, **kwargs):
        if isinstance(args, list | tuple) and args and str(args[0]).endswith("git"):
            started.append([str(a) for a in args])
        real(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", counting)
    return started


def test_past_texts_are_read_in_one_git_process_per_page(client, monkeypatch):
    """A memory's history and the changes between two moments read every old and new text through
    one `git cat-file --batch`, not a `git show` per text; a page of one past reads its rows once,
    builds no past index (nothing on it ranks), and the next visit reads the rows kept."""
    import memvault.index.past
    import memvault.index.past_rows

    c, found = client
    started = git_processes(monkeypatch)

    def text_reads() -> list[list[str]]:  # `git show <commit>:<path>`, or memvault's own cat-file --batch
        return [args for args in started if ("show" in args and "-s" not in args)
                or ("cat-file" in args and "--literal-pathspecs" in args)]

    assert c.get(f"/ui/m/{found.tea}").status_code == 200  # ADD and UPDATE: three texts
    assert len(text_reads()) == 1, started
    started.clear()
    changes = c.get(f"/ui/changes?start={YESTERDAY}").text
    assert changes.count('<li><span class="op') >= 4 and len(text_reads()) == 1, started
    opened, built = [], []
    real, real_rows = memvault.index.past.past_index, memvault.index.past_rows._build
    monkeypatch.setattr(memvault.index.past, "past_index", lambda *a: opened.append(a) or real(*a))
    monkeypatch.setattr(memvault.index.past_rows, "_build", lambda *a: built.append(a) or real_rows(*a))
    kept = memvault.index.past_rows._kept
    monkeypatch.setattr(memvault.index.past_rows, "_kept", type(kept)(kept.maxsize))  # none kept yet
    for _ in range(2):
        assert c.get(f"/ui/c/trip?at={YESTERDAY}").status_code == 200  # its timeline, sessions and rules
        assert c.get(f"/ui/?at={YESTERDAY}").status_code == 200
        assert c.get(f"/ui/graph?entity=Alice&at={YESTERDAY}").status_code == 200
    assert len(built) == 1 and not opened


def test_a_memory_purged_since_still_shows_as_it_was(tmp_path):
    """Deleted and purged today, yesterday's page of the memory still opens (with no history today)."""
    from memvault.core import Memvault
    from memvault.ui.app import create_app
    from memvault.vault.format.entry import Entry
    from tests.support.ui import dated

    with isolated_env(tmp_path / "home"):
        with dated(YESTERDAY):
            core = Memvault.open(settings_for(tmp_path / "v"), create=True)
            [gone] = core.add_entries([Entry("Carol collects stamps.", created_at=noon(YESTERDAY))], "memvault add")
        core.delete([gone.id])
        core.gc(purge_older_than="0s")
        core.close()
        with TestClient(create_app(settings_for(tmp_path / "v")), base_url="http://127.0.0.1") as c:
            assert c.get(f"/ui/m/{gone.id}").status_code == 404
            then = c.get(f"/ui/m/{gone.id}?at={YESTERDAY}")
            assert then.status_code == 200 and "Carol collects stamps." in then.text
