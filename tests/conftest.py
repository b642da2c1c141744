"""Every test runs with its own HOME and XDG folders, so nothing touches the user's files or caches."""

import os

import pytest

# mem0ai (installed for the compatibility tests) phones home unless told not to: never from a test.
os.environ["MEM0_TELEMETRY"] = "False"
# litellm fetches its model cost map at import unless this is set. memvault sets it before importing
# litellm; set for the whole session too, so a fixture that set it and is torn down while a server's
# warm-up thread is still importing litellm restores it instead of removing it (a DNS lookup, seen).
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from tests.support import crash_points, scheduling
from tests.support.server import isolate


def pytest_configure(config):
    crash_points.run_seed()  # chosen once, before pytest-xdist starts its workers: they inherit it


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    crash_points.select(config, items)
    scheduling.check(items)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        scheduling.order(items)


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: how tests are shared among its workers
def pytest_xdist_make_scheduler(config, log):
    return scheduling.make_scheduler(config, log)


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(crash_points.summary())


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    isolate(monkeypatch, home)
    # One cache folder for the session: the model's saved graph (models/saved_graph.py, 90 MB) is made
    # once, not by every test's process. memvault keeps nothing else there.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "shared-cache"))
    yield home


from tests.support.local_llm import local_llm_fixture  # noqa: E402

# One real local OpenAI-compatible model server (SmolLM2 via xllamacpp) shared by the end-to-end tests.
local_llm = local_llm_fixture(scope="session")
