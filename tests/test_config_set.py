"""`memvault config set` keeps the user's file as written (comments, layout, other values), writes it
readable by its owner only, and `config show` says what an "auto" value comes to."""

import json
import os
import stat

import pytest
from typer.testing import CliRunner

from memvault import settings

MINE = """\
# my memvault settings: the LLM runs on the desk machine
[llm]
model = "ollama/qwen3:4b"   # fast enough
api_base = "http://192.168.1.9:11434"

# search
[retrieval]
top_k = 3  # short answers
"""


def config_cli(*args):
    from memvault.cli.app import app

    result = CliRunner().invoke(app, ["config", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_set_keeps_comments_layout_and_other_values(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text(MINE)
    assert config_cli("set", "retrieval.top_k", "9", "--config", str(config))[0] == 0
    assert config_cli("set", "llm.api_key", "sk-secret", "--config", str(config))[0] == 0
    assert config_cli("set", "server.port", "9000", "--config", str(config))[0] == 0
    expected = MINE.replace("top_k = 3  # short answers", "top_k = 9  # short answers").replace(
        'api_base = "http://192.168.1.9:11434"\n', 'api_base = "http://192.168.1.9:11434"\napi_key = "sk-secret"\n')
    assert config.read_text() == expected + '\n[server]\nport = 9000\n'
    loaded = settings.load(config)
    assert (loaded.retrieval.top_k, loaded.llm.api_key, loaded.llm.model, loaded.server.port) == (
        9, "sk-secret", "ollama/qwen3:4b", 9000)


def test_the_file_is_created_and_kept_0600(tmp_path):
    old_umask = os.umask(0o022)  # the usual umask: a plain write would make the file 0644
    try:
        config = tmp_path / "new" / "config.toml"
        assert config_cli("set", "llm.api_key", "sk-secret", "--config", str(config))[0] == 0
        assert mode(config) == 0o600
        config.chmod(0o644)  # written by hand or by an older memvault
        assert config_cli("set", "llm.model", "openai/gpt-4o-mini", "--config", str(config))[0] == 0
        assert mode(config) == 0o600
        assert sorted(p.name for p in config.parent.iterdir()) == ["config.toml"]  # no temporary file left
    finally:
        os.umask(old_umask)


def test_a_symlinked_config_stays_a_link(tmp_path):
    target = tmp_path / "dotfiles" / "memvault.toml"
    target.parent.mkdir()
    target.write_text(MINE)
    link = tmp_path / "config.toml"
    link.symlink_to(target)
    assert config_cli("set", "retrieval.top_k", "4", "--config", str(link))[0] == 0
    assert link.is_symlink() and "top_k = 4  # short answers" in target.read_text()


def test_a_bad_file_or_value_is_one_line_and_the_file_is_untouched(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text("[retrieval\n")
    code, _, err = config_cli("set", "retrieval.top_k", "9", "--config", str(config))
    assert code == 1 and "not valid TOML" in err and "Traceback" not in err
    config.write_text(MINE)
    code, _, err = config_cli("set", "retrieval.top_k", "many", "--config", str(config))
    assert code == 1 and "retrieval.top_k must be int" in err
    code, _, err = config_cli("set", "retrieval.nosuch", "1", "--config", str(config))
    assert code == 1 and "unknown setting 'retrieval.nosuch'" in err
    assert config.read_text() == MINE


@pytest.mark.parametrize("reranker, shown", [("", "auto: 0.0029 (without a cross-encoder)"),
                                             ("/models/ce", "auto: 0.35 (with a cross-encoder)")])
def test_show_says_what_auto_comes_to(tmp_path, reranker, shown):
    config = tmp_path / "config.toml"
    config.write_text(f'[retrieval]\nreranker = "{reranker}"\n')
    code, out, _ = config_cli("show", "--config", str(config))
    assert code == 0
    [line] = [line for line in out.splitlines() if line.startswith("retrieval.score_threshold")]
    assert line.split("\t")[1:] == [shown, "default"]
    data = json.loads(config_cli("show", "--json", "--config", str(config))[1])
    assert data["retrieval.score_threshold"] == {"value": None, "source": "default"}


def test_a_threshold_can_be_set_and_set_back_to_auto(tmp_path):
    config = tmp_path / "config.toml"
    config_cli("set", "retrieval.score_threshold", "0.35", "--config", str(config))
    assert settings.load(config).retrieval.score_threshold == 0.35
    code, _, err = config_cli("set", "retrieval.score_threshold", "auto", "--config", str(config))
    assert code == 0 and err.startswith("retrieval.score_threshold = auto in ")
    assert 'score_threshold = "auto"' in config.read_text()
    loaded = settings.load(config)
    assert loaded.retrieval.score_threshold is None and loaded.sources["retrieval.score_threshold"] == str(config)


def test_dotted_keys_and_inline_tables_keep_their_form(tmp_path):
    config = tmp_path / "config.toml"
    config.write_text('llm.model = "x"  # dotted\nserver = {port = 1}\n')
    config_cli("set", "llm.api_key", "k", "--config", str(config))
    config_cli("set", "server.port", "2", "--config", str(config))
    text = config.read_text()
    assert 'llm.model = "x"  # dotted\nllm.api_key = "k"\n' in text and "server = {port = 2}" in text
    assert settings.load(config).server.port == 2
