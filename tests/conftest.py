"""Every test runs with its own HOME and XDG folders, so nothing touches the user's files or caches."""

import os

import pytest


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"), ("XDG_CACHE_HOME", ".cache")):
        monkeypatch.setenv(var, str(home / sub))
    for var in list(os.environ):
        if var.startswith("MEMVAULT_") or var.startswith("GIT_"):
            monkeypatch.delenv(var, raising=False)
    # No global git identity: memvault must cope on its own.
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "no-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    yield home


from tests.support.local_llm import local_llm_fixture  # noqa: E402

# One real local OpenAI-compatible model server (SmolLM2 via xllamacpp) shared by the end-to-end tests.
local_llm = local_llm_fixture(scope="session")
