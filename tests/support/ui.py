"""A small vault with a past, and the page served from it, for the web page's tests and screenshots.

The vault: facts written yesterday (git dates in the past, as tests/test_time_travel.py makes them),
one of them edited today; a conversation whose user turn produced a fact with a triple (the graph),
and today a second turn curated by a scripted model (a new edge of the graph, a fact that records
its model); a memory whose text is an XSS attempt; a rule; a core file with words in it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from memvault.settings import Settings

XSS = '<img src=x onerror=alert(1)><script>fetch("/stolen")</script>'
TEA_BEFORE = "Alice drinks green tea every morning"
TEA_NOW = "Alice drinks jasmine tea every morning"
TODAY = datetime.now(UTC).date()
YESTERDAY = (TODAY - timedelta(days=1)).isoformat()
BEFORE = (TODAY - timedelta(days=2)).isoformat()
CURATOR = "openai/scripted-curator"  # the model name the scripted LLM stands for
CAT_TURN = "Alice here again: I adopted a cat named Miso."
CAT_FACT = "Alice has a cat named Miso."


@dataclass
class Built:
    root: Path
    tea: str
    xss: str
    turn: str
    fact: str
    note: str  # a plain fact that tests may edit
    cat: str  # today's curated fact (its model recorded), taken from the turn `cat_turn`
    cat_turn: str


@contextmanager
def dated(day: str) -> Iterator[None]:
    """Commits made inside carry git dates of that day (noon UTC)."""
    from tests.test_time_travel import on

    saved = {key: os.environ.get(key) for key in on(day)}
    os.environ.update(on(day))
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def noon(day: str) -> datetime:
    return datetime.combine(date.fromisoformat(day), datetime.min.time(), UTC) + timedelta(hours=12)


def settings_for(root: Path, **server: object) -> Settings:
    settings = Settings()
    settings.vault.path = str(root)
    settings.server.port = 0
    for key, value in server.items():
        setattr(settings.server, key, value)
    return settings


def build_vault(root: Path) -> Built:
    from memvault.core import Memvault
    from memvault.vault.format.entry import Entry

    with dated(BEFORE):
        core = Memvault.open(settings_for(root), create=True)
        core.ensure_core()
    try:
        with dated(YESTERDAY):
            tea = Entry(TEA_BEFORE, conversation_id="alice", created_at=noon(YESTERDAY))
            xss = Entry(XSS, conversation_id="alice", created_at=noon(YESTERDAY) + timedelta(minutes=1))
            note = Entry("Bob plays the violin on Sundays.", conversation_id="alice",
                         created_at=noon(YESTERDAY) + timedelta(minutes=2))
            core.add_entries([tea, xss, note], "memvault add: 3 memories")
            turn = Entry("I moved to Lisbon last spring, and I work at Acme.", role="user", conversation_id="trip",
                         created_at=noon(YESTERDAY) + timedelta(minutes=5))
            fact = Entry("Alice lives in Lisbon.", conversation_id="trip", source=turn.id, subject="Alice",
                         predicate="LIVES_IN", object="Lisbon", evidence="I moved to Lisbon",
                         created_at=turn.created_at + timedelta(seconds=2))
            work = Entry("Alice works at Acme.", conversation_id="trip", source=turn.id, subject="Alice",
                         predicate="WORKS_AT", object="Acme", created_at=turn.created_at + timedelta(seconds=3))
            core.add_entries([turn, fact, work], "memvault chat: a turn and its facts", operation="chat")
            core.add_rule("Answer in British English.", "trip")
        core.update(tea.id, text=TEA_NOW)  # today
        core.update_core("USER", "The user is Alice. She lives in Lisbon.\n")
        cat = core.add(CAT_TURN, "trip", llm=curator())
    finally:
        core.close()
    [added] = [event for event in cat.events if event.event == "ADD"]
    return Built(root, tea.id, xss.id, turn.id, fact.id, note.id, added.id, cat.turn.id)


def curator():
    """A scripted LLM that names its model as the real client does (`.settings.model`): it extracts
    today's fact about the cat, with its triple, and adds it."""
    import json
    from types import SimpleNamespace

    from tests.support.scripted_llm import ScriptedLLM

    fact = {"text": CAT_FACT, "subject": "Alice", "predicate": "HAS_CAT", "object": "Miso",
            "evidence": "I adopted a cat named Miso"}
    llm = ScriptedLLM([("Latest user message (extract from this only):", json.dumps([fact])),
                       ("Stored memories:", json.dumps([{"fact": 0, "event": "ADD", "text": CAT_FACT}])),
                       ("Previous summary:", "Alice lives in Lisbon, works at Acme and has a cat.")], default="[]")
    llm.settings = SimpleNamespace(model=CURATOR)
    return llm


@contextmanager
def serving(settings: Settings) -> Iterator[str]:
    """`memvault ui`'s app on a free loopback port in a thread; yields the page's base URL."""
    from memvault.server.run import running
    from memvault.ui.app import create_app

    with running(settings, app=create_app(settings)) as base:
        yield base


def shoot(browser, base: str, built: Built, out: Path) -> list[Path]:
    """Screenshots of the main pages (docs/web-page.md), wide and one narrow; returns the files."""
    shots = {
        "overview": "/ui/", "conversation": "/ui/c/trip", "memory": f"/ui/m/{built.tea}",
        "search": "/ui/search?q=where+does+Alice+live", "graph": "/ui/graph?entity=Alice",
        "as-of": f"/ui/m/{built.tea}?at={YESTERDAY}", "log": "/ui/log",
    }
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for width, suffix in ((1100, ""), (390, "-narrow")):
        context = browser.new_context(viewport={"width": width, "height": 760}, device_scale_factor=1)
        tab = context.new_page()
        for name, path in shots.items():
            if suffix and name not in ("conversation", "memory"):
                continue
            tab.goto(base + path)
            if name == "search":
                tab.locator("details").first.evaluate("element => element.open = true")
            written.append(out / f"ui-{name}{suffix}.png")
            tab.screenshot(path=str(written[-1]), full_page=name != "memory")
        context.close()
    return written
