"""The optional parts of memvault (pyproject.toml's extras) and the one error that names the extra a
command lacks. The core install (CLI, vault, index, search with the default embedder) needs none.

A command whose whole job needs an extra checks for it before it starts (`require`): a server that
would fail at its first request, or a page at its first render, says so at once instead. A library
that only some settings need (litellm: an LLM, a remote embedder) is checked where it is imported."""

from __future__ import annotations

import importlib.util

from memvault.errors import MemvaultError

# The modules each extra brings that memvault imports (the extras' packages are in pyproject.toml;
# tests/test_extras.py checks that the two agree).
EXTRAS: dict[str, tuple[str, ...]] = {
    "llm": ("litellm",),
    "ui": ("fastapi", "uvicorn", "jinja2"),
    # the proxy (litellm), the REST API, Swagger UI served locally, and the page at /ui
    "server": ("fastapi", "fastapi_offline", "uvicorn", "httpx", "jinja2", "litellm"),
    # the MCP SDK brings uvicorn and starlette for its HTTP transport; its chat tool needs an LLM
    "mcp": ("mcp", "litellm"),
    "chat": ("prompt_toolkit", "litellm"),
}


class MissingExtraError(MemvaultError):
    """An optional part of memvault is not installed. The CLI names the command that needed it."""

    def __init__(self, extra: str) -> None:
        self.extra = extra
        super().__init__(self.said_by("memvault"))

    def said_by(self, who: str) -> str:
        """The one line, with `who` ("memvault serve") as the one who needs the extra."""
        return f"{who} needs the {self.extra} extra: pip install 'memvault[{self.extra}]'"


def installed(module: str) -> bool:
    """Whether `module` can be imported, without importing it (find_spec reads no module's code)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module left half-imported
        return False


def require(extra: str) -> None:
    """Raise MissingExtraError unless every module of `extra` can be imported."""
    if not all(installed(module) for module in EXTRAS[extra]):
        raise MissingExtraError(extra)
