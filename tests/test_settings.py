import pytest

from memvault import settings
from memvault.errors import ConfigError


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_precedence_default_file_env_flag(tmp_path, monkeypatch):
    config = write(tmp_path / "c.toml", '[retrieval]\ntop_k = 7\nrecency_weight = 0.5\n[llm]\nmodel = "file/model"\n')
    monkeypatch.setenv("MEMVAULT_RETRIEVAL_RECENCY_WEIGHT", "0.1")
    monkeypatch.setenv("MEMVAULT_LLM_MODEL", "env/model")
    loaded = settings.load(config, {"llm.model": "flag/model"})
    assert loaded.retrieval.top_k == 7 and loaded.sources["retrieval.top_k"] == str(config)
    assert loaded.retrieval.recency_weight == 0.1
    assert loaded.sources["retrieval.recency_weight"] == "env MEMVAULT_RETRIEVAL_RECENCY_WEIGHT"
    assert loaded.llm.model == "flag/model" and loaded.sources["llm.model"] == "flag"
    assert loaded.retrieval.mmr_lambda == 0.7 and loaded.sources["retrieval.mmr_lambda"] == "default"


def test_default_config_file_under_xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    write(tmp_path / "memvault" / "config.toml", "[vault]\nmax_entries = 42\n")
    assert settings.load().vault.max_entries == 42


@pytest.mark.parametrize("text, message", [
    ("[retrieval]\ntop_kk = 3\n", "unknown setting 'retrieval.top_kk'"),
    ("[nosuch]\nx = 1\n", "unknown setting 'nosuch.x'"),
    ("top_k = 3\n", "unknown setting 'top_k'"),
    ("[retrieval]\ntop_k = 'many'\n", "retrieval.top_k must be int"),
    ("[server]\nallow_reset = 'maybe'\n", "server.allow_reset must be bool"),
    ("[retrieval\n", "not valid TOML"),
])
def test_bad_config_names_the_key_and_the_file(tmp_path, text, message):
    config = write(tmp_path / "bad.toml", text)
    with pytest.raises(ConfigError, match=message) as info:
        settings.load(config)
    assert str(config) in str(info.value)


def test_bad_environment_value_names_the_variable(monkeypatch):
    monkeypatch.setenv("MEMVAULT_RETRIEVAL_TOP_K", "lots")
    with pytest.raises(ConfigError, match="env MEMVAULT_RETRIEVAL_TOP_K: retrieval.top_k must be int"):
        settings.load()


def test_config_cli_set_show_path(tmp_path):
    config = str(tmp_path / "conf" / "config.toml")
    from typer.testing import CliRunner

    from memvault.cli.app import app

    runner = CliRunner()
    assert runner.invoke(app, ["config", "set", "retrieval.top_k", "9", "--config", config]).exit_code == 0
    assert runner.invoke(app, ["config", "set", "llm.api_key", "sk-secret", "--config", config]).exit_code == 0
    shown = runner.invoke(app, ["config", "show", "--json", "--config", config])
    data = __import__("json").loads(shown.stdout)
    assert data["retrieval.top_k"] == {"value": 9, "source": config}
    assert data["llm.api_key"]["value"] == "***"
    bad = runner.invoke(app, ["config", "set", "retrieval.top_k", "x", "--config", config])
    assert bad.exit_code == 1 and "must be int" in bad.stderr
    assert runner.invoke(app, ["config", "path", "--config", config]).stdout.strip() == config


def test_a_bare_settings_object_opens_no_vault_in_the_current_folder(tmp_path, monkeypatch):
    """Settings() has no vault path (settings.load fills the default): opening it must not make a vault,
    or a `.memvault/`, in whatever folder the process happens to run in."""
    from memvault.core import Memvault
    from memvault.errors import UsageError
    from memvault.settings import Settings

    monkeypatch.chdir(tmp_path)
    for create in (False, True):
        with pytest.raises(UsageError, match="no vault path"):
            Memvault.open(Settings(), create=create)
    assert list(tmp_path.iterdir()) == []
