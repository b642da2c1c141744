"""Pages from templates: Jinja2 with autoescape on for every template, so a stored text is always
shown as text; the security headers on every answer; URLs that keep the page's moment (`at`)."""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from memvault.ui import PREFIX
from memvault.ui.security import HEADERS

PAGE_SIZE = 50
MAX_PAGE = 200


@functools.cache
def environment():
    from jinja2 import Environment, PackageLoader, StrictUndefined, pass_context

    env = Environment(loader=PackageLoader("memvault.ui", "templates"), autoescape=True, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True)
    env.globals.update(url=pass_context(link), PREFIX=PREFIX)
    env.filters.update(when=when, short_id=lambda value: (value or "")[:8], conversation_path=conversation_path)
    return env


def conversation_path(conversation: str) -> str:
    """A conversation page's path: by its folder (layout.folder_for), a name that is safe in a URL
    whatever the conversation is called ("a/b", "..", "con."); the page reads the id back from it."""
    from memvault.shapes import folder_for

    return "/c/" + folder_for(conversation)


def url(path: str, **params: Any) -> str:
    """A link under the page's prefix; parameters that are None or "" are left out."""
    kept = {key: value for key, value in params.items() if value not in (None, "")}
    return PREFIX + path + ("?" + urlencode(kept) if kept else "")


def link(context, path: str, **params: Any) -> str:
    """A template's link: `url`, keeping the moment the page shows (`at`) unless one is given
    (`at=None`: back to now), so a person travelling in time stays there from page to page."""
    if "at" not in params and context.get("at"):
        params["at"] = context["at"]
    return url(path, **params)


def when(value: Any) -> str:
    """A time as 'YYYY-MM-DD HH:MM UTC' (epoch seconds or a datetime)."""
    if value in (None, ""):
        return ""
    moment = datetime.fromtimestamp(value, UTC) if isinstance(value, int | float) else value
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def page(template: str, status: int = 200, **context: Any):
    """The HTML answer of a template, with the security headers."""
    from starlette.responses import HTMLResponse

    html = environment().get_template(template).render(**context)
    return HTMLResponse(html, status_code=status, headers=HEADERS)


def paging(offset: int | None, limit: int | None) -> tuple[int, int]:
    return max(0, int(offset or 0)), min(MAX_PAGE, max(1, int(limit or PAGE_SIZE)))
