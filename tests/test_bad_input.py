"""Bad input (issue 11, items 5-9): files, texts, filters, sizes and names that used to crash memvault,
eat gigabytes or slip through, each now one clear error (or one reported broken file), through the
real CLI, a real uvicorn server, real files, git and the real embedding model."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from memvault.errors import EntryFormatError, UsageError
from memvault.server.run import running
from memvault.vault.format import layout
from memvault.vault.format.entry import Entry
from memvault.vault.format.markdown import parse
from tests.support.cli import Cli, run_memvault
from tests.support.server import isolated_env, server_settings
from tests.support.upstream import served_upstream

pytestmark = pytest.mark.timeout(300)

MAX_TEXT = 5_000
MAX_BODY = 300_000
MAX_FILE = 20_000
GOOD = "---\nid: {id}\nrole: memory\nconversation_id: notes\ncreated_at: 2024-01-01\n---\n{text}\n"
RECURSIVE = GOOD.replace("\n---\n{text}", "\nmetadata: {{a: &x [*x]}}\n---\n{text}")
IDS = [f"{n:08d}-1111-4111-8111-111111111111" for n in range(10)]


def hand_file(vault: Path, name: str, content: str | bytes) -> Path:
    path = vault / "entries" / "notes" / "facts" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def git_head(vault: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=vault, capture_output=True, text=True).stdout


def one_line_error(reply: httpx.Response, status: int) -> str:
    assert reply.status_code == status, reply.text
    message = reply.json()["error"]["message"]
    assert message and "\n" not in message and "Traceback" not in message
    return message


@pytest.fixture
def cli(tmp_path):
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    return cli


@pytest.fixture(scope="module")
def upstream():
    with served_upstream() as fake:  # answers every chat at once: the proxy's plumbing is under test, not a model
        yield fake


@pytest.fixture(scope="module")
def server(upstream, tmp_path_factory):
    base = tmp_path_factory.mktemp("badinput")
    vault = base / "vault"
    (vault / "entries" / "notes" / "facts").mkdir(parents=True)
    # A broken file before start-up: `serve` used to die in its first reindex.
    hand_file(vault, f"20240101T000000000Z__{IDS[0]}.md", RECURSIVE.format(id=IDS[0], text="loops"))
    settings = server_settings(vault, api_base=upstream.root + "/v1")
    settings.retrieval.score_threshold = 0.0
    settings.limits.max_text_chars = MAX_TEXT
    settings.limits.max_request_bytes = MAX_BODY
    settings.limits.max_file_bytes = MAX_FILE
    with isolated_env(base / "home"), running(settings) as url, httpx.Client(base_url=url, timeout=120) as client:
        yield SimpleNamespace(client=client, vault=vault, settings=settings)


def post_json(client: httpx.Client, path: str, body) -> httpx.Response:
    """A JSON body sent as bytes: httpx refuses to encode a lone surrogate, a raw client need not."""
    return client.post(path, content=json.dumps(body), headers={"content-type": "application/json"})


def searchable(server, text: str, user_id: str) -> bool:
    body = {"query": text, "limit": 50, "user_id": user_id}
    reply = server.client.post("/v1/memories/search/", json=body)
    return reply.status_code == 200 and any(hit["memory"] == text for hit in reply.json()["results"])


def wait_until(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


# -- 5. front matter YAML parses but memvault cannot represent -------------------------------------------------------

FRONT = "---\nid: a\nrole: memory\nconversation_id: x\ncreated_at: 2024-01-01\n"


@pytest.mark.parametrize("front, reason", [
    ("metadata: {a: &x [*x]}\n", "nested deeper than 32"),  # a recursive alias: an endless tree
    ("metadata: &m {a: *m}\n", "nested deeper than 32"),
    ("lol: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
     "metadata: {k: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]}\n", "more than 10,000 values"),  # billion laughs
    ("metadata: {1: one}\n", "not a string"),
    ("metadata: {a: .nan}\n", "finite"),
    ("metadata: {a: !!float 1e400}\n", "finite"),
    ("metadata: {a: !!binary aGVsbG8=}\n", "bytes"),
    ("metadata: {a: !!set {x, y}}\n", "set"),
    ("metadata: {a: !!omap [x: 1]}\n", "tuple"),
    ("metadata:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(40)), "nested deeper than 32"),
    ("id: {a: 1}\n", "plain value"),
    ("metadata: {a: " + "[" * 50_000 + "]" * 50_000 + "}\n", "nested deeper than"),  # libyaml's stack
])
def test_front_matter_memvault_cannot_represent_is_an_entry_format_error(front, reason):
    with pytest.raises(EntryFormatError, match=reason):
        parse(FRONT + front + "---\ntext", "f.md")  # a repeated key (id) wins over the first


def test_reindex_reports_each_unrepresentable_file_and_indexes_every_other(tmp_path):
    """A real process: libyaml overflowed its C stack on 50,000 nested brackets (a segfault), and a
    recursive alias ended reindex with `internal error: ValueError: Circular reference`."""
    vault = tmp_path / "vault"
    assert run_memvault("init", "--vault", str(vault)).returncode == 0
    hand_file(vault, "recursive.md", RECURSIVE.format(id=IDS[1], text="loops"))
    hand_file(vault, "deep.md", FRONT.replace("id: a", f"id: {IDS[2]}") + "metadata: {a: " + "[" * 50_000
              + "]" * 50_000 + "}\n---\ndeep\n")
    hand_file(vault, "nan.md", FRONT.replace("id: a", f"id: {IDS[3]}") + "metadata: {a: .nan}\n---\nnan\n")
    hand_file(vault, "good.md", GOOD.format(id=IDS[4], text="Ravi keeps bees on the roof"))
    done = run_memvault("reindex", "--full", "--vault", str(vault))
    stderr = done.stderr.decode()
    assert done.returncode == 1, stderr  # as for any broken file: reported, and cron hears of it
    assert "Traceback" not in stderr and "internal error" not in stderr
    for name in ("recursive.md", "deep.md", "nan.md"):
        assert f"entries/notes/facts/{name}" in stderr
    found = run_memvault("search", "bees on the roof", "--json", "--vault", str(vault))
    assert [hit["id"] for hit in json.loads(found.stdout)] == [IDS[4]]


def test_serve_starts_beside_a_broken_file_and_its_watcher_survives_new_ones(server):
    assert server.client.get("/health").json()["watching"]
    hand_file(server.vault, f"20240101T000000000Z__{IDS[5]}.md", RECURSIVE.format(id=IDS[5], text="again"))
    time.sleep(1.5)  # its own burst: the watcher handles it (and used to die of it)
    hand_file(server.vault, f"20240101T000000000Z__{IDS[6]}.md",
              GOOD.format(id=IDS[6], text="Mina repairs clocks").replace("role:", "user_id: mina\nrole:"))
    assert wait_until(lambda: searchable(server, "Mina repairs clocks", "mina")), "a later hand edit was not indexed"
    assert server.client.get("/health").json()["watching"]


# -- 6. lone surrogates ----------------------------------------------------------------------------------------------

def test_rest_add_and_update_with_a_lone_surrogate_are_400_and_write_nothing(server):
    head = git_head(server.vault)
    reply = post_json(server.client, "/v1/memories/", {"messages": [{"role": "user", "content": "a\ud800b"}],
                                                       "infer": False, "user_id": "sam"})
    assert "lone surrogate U+D800" in one_line_error(reply, 400)
    reply = post_json(server.client, "/v1/memories/", {"messages": "fine text", "infer": False, "user_id": "sam",
                                                       "metadata": {"k": "x\udfffy"}})
    assert "lone surrogate U+DFFF" in one_line_error(reply, 400)
    assert git_head(server.vault) == head and not (server.vault / "entries" / "user-sam").exists()
    memory_id = server.client.post("/v1/memories/", json={"messages": "Sam likes tea", "infer": False,
                                                          "user_id": "sam"}).json()["results"][0]["id"]
    reply = server.client.put(f"/v1/memories/{memory_id}/", content=json.dumps({"text": "\ud83d only half"}),
                              headers={"content-type": "application/json"})
    assert "unicode" in one_line_error(reply, 422)  # refused by the request's validation already
    assert server.client.get(f"/v1/memories/{memory_id}/").json()["memory"] == "Sam likes tea"


def test_proxy_message_with_a_lone_surrogate_is_400_and_never_reaches_the_llm(server, upstream):
    before = len(upstream.chat_requests())
    reply = post_json(server.client, "/v1/chat/completions",
                      {"model": "fake", "messages": [{"role": "user", "content": "hi \ud83d"}]})
    assert "lone surrogate U+D83D" in one_line_error(reply, 400)
    assert len(upstream.chat_requests()) == before


def test_cli_add_of_bytes_that_are_not_utf8_is_a_usage_error(tmp_path):
    """A shell passes bytes; Python turns invalid UTF-8 in argv into lone surrogates."""
    vault = tmp_path / "vault"
    run_memvault("init", "--vault", str(vault))
    done = subprocess.run([sys.executable, "-m", "memvault", "add", b"caf\xe9", "--no-llm", "--vault", str(vault)],
                          capture_output=True, timeout=60)
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert stderr.startswith("memvault: error: the memory text contains a lone surrogate U+DCE9")
    assert len(stderr.splitlines()) == 1


def test_python_api_refuses_a_lone_surrogate(tmp_path):
    from memvault import Memory

    memory = Memory(vault=str(tmp_path / "vault"))
    try:
        with pytest.raises(UsageError, match="lone surrogate"):
            memory.add("a\ud800b", user_id="ana", infer=False)
        with pytest.raises(UsageError, match="lone surrogate"):
            memory.add("fine", user_id="ana\udc00", infer=False)
        assert memory.get_all(user_id="ana")["results"] == []
    finally:
        memory.close()


# -- 7. filter values the database cannot take -----------------------------------------------------------------------

def test_cli_filter_with_a_huge_integer_or_nested_3000_deep_is_a_usage_error(cli):
    cli.ok("add", "Olga plays chess", "--meta", "n=1")
    done = cli("search", "chess", "--filter", json.dumps({"n": 2**70}))
    assert done.exit_code == 2 and "does not fit in 64 bits" in done.stderr
    done = cli("search", "chess", "--filter", '{"a":' * 3000 + "1" + "}" * 3000)
    assert done.exit_code == 2 and "nested too deeply" in done.stderr
    done = cli("search", "chess", "--filter", json.dumps({"n": {"gt": float("nan")}}))  # Python's JSON reads NaN
    assert done.exit_code == 2 and "finite" in done.stderr


def test_rest_filters_beyond_the_caps_are_400_with_a_message(server):
    many_terms = {"OR": [{"n": i} for i in range(5000)]}
    reply = server.client.post("/v1/memories/search/", json={"query": "x", "user_id": "sam", "filters": many_terms})
    assert "more than 200 conditions" in one_line_error(reply, 400)
    long_list = {"n": {"in": list(range(40_000))}}
    reply = server.client.post("/v1/memories/search/", json={"query": "x", "user_id": "sam", "filters": long_list})
    assert "more than 1,000" in one_line_error(reply, 400)
    reply = server.client.post("/v1/memories/search/", json={"query": "x", "user_id": "sam", "filters": {"n": 2**64}})
    assert "64 bits" in one_line_error(reply, 400)
    deep = '{"a":' * 3000 + "1" + "}" * 3000
    reply = server.client.post("/v1/memories/search/", headers={"content-type": "application/json"},
                               content='{"query": "x", "user_id": "sam", "filters": ' + deep + "}")
    assert one_line_error(reply, 400)  # the body's parser refuses it, in one line
    # In a query string it is longer than the 8 KB a request line may have: refused before it is read.
    assert server.client.get("/v1/memories/", params={"user_id": "sam", "filters": deep}).status_code == 414


def test_rest_add_with_metadata_nested_500_deep_is_400(server):
    deep: dict = {}
    node = deep
    for _ in range(500):
        node["a"] = {}
        node = node["a"]
    reply = server.client.post("/v1/memories/", json={"messages": "deep", "infer": False, "user_id": "sam",
                                                      "metadata": deep})
    assert "nested deeper than 32 levels" in one_line_error(reply, 400)


# -- 8. size caps ----------------------------------------------------------------------------------------------------

def test_request_body_over_the_cap_is_413_declared_or_streamed(server):
    big = {"messages": "x" * (MAX_BODY + 10), "infer": False, "user_id": "sam"}
    reply = server.client.post("/v1/memories/", json=big)
    assert "limits.max_request_bytes" in one_line_error(reply, 413)

    def chunks():  # no Content-Length: the body is counted as it arrives
        yield b'{"messages": "'
        for _ in range(40):
            yield b"y" * 10_000
        yield b'", "infer": false, "user_id": "sam"}'

    reply = server.client.post("/v1/memories/", content=chunks(), headers={"content-type": "application/json"})
    assert "limits.max_request_bytes" in one_line_error(reply, 413)
    assert server.client.get("/health").status_code == 200


def test_memory_text_and_proxy_message_over_max_text_chars_are_400(server, upstream):
    reply = server.client.post("/v1/memories/", json={"messages": "z" * (MAX_TEXT + 1), "infer": False,
                                                      "user_id": "sam"})
    assert "limits.max_text_chars" in one_line_error(reply, 400)
    before = len(upstream.chat_requests())
    reply = server.client.post("/v1/chat/completions", json={"model": "fake", "messages": [
        {"role": "user", "content": "w" * (MAX_TEXT + 1)}]})
    assert "limits.max_text_chars" in one_line_error(reply, 400)
    assert len(upstream.chat_requests()) == before


def test_a_hand_file_over_max_file_bytes_is_reported_and_never_indexed(cli):
    hand_file(cli.vault, "huge.md", GOOD.format(id=IDS[7], text="big " * 300_000))  # 1.2 MB > 1 MiB default
    hand_file(cli.vault, "small.md", GOOD.format(id=IDS[8], text="Lena grows tomatoes"))
    done = cli("reindex")
    assert done.exit_code == 1
    assert "entries/notes/facts/huge.md: larger than limits.max_file_bytes (1,048,576 bytes)" in done.stderr
    assert {entry["id"] for entry in cli.ok("list", "--json").json()} == {IDS[8]}
    assert IDS[7] not in {hit["id"] for hit in cli.ok("search", "big big", "--json").json()}
    listed = cli.ok("list", "--json", env={"MEMVAULT_LIMITS_MAX_FILE_BYTES": "100"})
    assert "small.md: larger than limits.max_file_bytes (100 bytes)" in listed.stderr


def test_cli_add_over_max_text_chars_is_a_usage_error(cli):
    done = cli("add", "-", "--no-llm", input="q" * 100_001)
    assert done.exit_code == 2 and "more than limits.max_text_chars (100,000)" in done.stderr


def test_the_embedder_cuts_texts_to_its_bound_before_tokenising():
    """One 'word' of 5,000 letters is one [UNK] token, so what follows it would be inside the model's
    256-token window if the whole text were tokenised; cut first, the model never sees it."""
    from memvault.models.embedders import OnnxMiniLM

    embedder = OnnxMiniLM()
    assert embedder.max_chars == 4096
    head = "a" * 5000
    cut, whole, alone = embedder.embed([head[:4096], head + " the cat sat on the mat", head], kind="passage")
    assert float(cut @ whole) > 0.9999 and float(cut @ alone) > 0.9999


# -- 9. the smaller ones ---------------------------------------------------------------------------------------------

HOSTILE = "before \x1b]0;pwned\x07\x1b[31mred\x1b[0m \u202eevil\u202c after\r"


def test_control_and_bidi_characters_are_escaped_for_the_terminal_but_kept_in_json(cli):
    cli.ok("add", HOSTILE, "--no-llm")
    piped = cli.ok("list").stdout
    assert "\x1b" not in piped and "\u202e" not in piped and "\r" not in piped
    assert "\\x1b]0;pwned\\x07" in piped and "\\u202e" in piped
    terminal = cli.ok("list", env={"FORCE_COLOR": "1", "COLUMNS": "300"}).stdout
    assert "\x1b]0;pwned" not in terminal and "\u202e" not in terminal and "\x1b[31mred" not in terminal
    assert cli.ok("list", "--json").json()[0]["text"] == HOSTILE.strip()
    added = cli.ok("add", "\x1b[2J wipe", "--no-llm")
    assert "\x1b[2J" not in added.stdout and "\\x1b[2J wipe" in added.stdout  # the result line, for pipes


def test_add_shortens_what_it_echoes(cli):
    done = cli.ok("add", "-", "--no-llm", input="m" * 50_000)
    assert len(done.stdout) < 1_000 and "more characters)" in done.stdout
    assert len(cli.ok("list", "--json").json()[0]["text"]) == 50_000


@pytest.mark.parametrize("option", ["--threshold", "--recency-weight", "--mmr-lambda"])
@pytest.mark.parametrize("value", ["nan", "-nan", "NaN"])
def test_float_options_refuse_nan(cli, option, value):
    """nan passes every range check (each comparison is false); inf was already out of range."""
    done = cli("search", "anything", option, value)
    assert done.exit_code == 2 and "nan is not a finite number" in done.stderr


def test_non_finite_settings_are_config_errors(cli):
    done = cli("search", "anything", env={"MEMVAULT_RETRIEVAL_SCORE_THRESHOLD": "nan"})
    assert done.exit_code == 1 and "retrieval.score_threshold must be a finite number" in done.stderr


def test_memvault_config_naming_a_missing_file_is_an_error_like_config(cli, tmp_path):
    missing = tmp_path / "nowhere.toml"
    by_env = cli("list", env={"MEMVAULT_CONFIG": str(missing)})
    assert by_env.exit_code == 1 and f"config file not found: {missing}" in by_env.stderr
    assert "MEMVAULT_CONFIG" in by_env.stderr
    by_flag = cli("list", "--config", str(missing))
    assert by_flag.exit_code == 1 and f"config file not found: {missing}" in by_flag.stderr
    # `config set` may still create the file it names.
    assert cli.runner.invoke(__import__("memvault.cli.app", fromlist=["app"]).app,
                             ["config", "set", "retrieval.top_k", "3"], env={"MEMVAULT_CONFIG": str(missing)}
                             ).exit_code == 0


@pytest.mark.parametrize("variable, key", [("MEMVAULT_API_KEY", "server.api_key"),
                                           ("MEMVAULT_LLM_API_KEY", "llm.api_key")])
def test_api_keys_of_only_whitespace_are_refused_and_surrounding_whitespace_is_trimmed(monkeypatch, variable, key):
    from memvault import settings
    from memvault.errors import ConfigError

    monkeypatch.setenv(variable, " ")
    with pytest.raises(ConfigError, match=f"{key} is only whitespace"):
        settings.load()
    monkeypatch.setenv(variable, "  sk-123\n")
    assert settings.load().get(key) == "sk-123"


def test_every_llm_path_reaches_a_keyless_local_server(upstream, tmp_path, monkeypatch):
    """llm.api_base set, no key anywhere: the proxy sent "none" as the key, and REST, chat and doctor
    (the LLM client) failed with "Missing credentials"."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    env = {"MEMVAULT_LLM_MODEL": "openai/fake", "MEMVAULT_LLM_API_BASE": upstream.root + "/v1"}
    cli = Cli(tmp_path / "vault")
    cli.ok("init")
    before = len(upstream.chat_requests())
    doctor = cli("doctor", "--json", env=env)
    checks = {check["name"]: check for check in json.loads(doctor.stdout)["checks"]}
    assert checks["llm"]["status"] == "ok", checks["llm"]
    assert cli("chat", "-m", "hello there", env=env).exit_code == 0
    added = cli("add", "I keep bees", "--json", env=env)
    assert added.exit_code == 0 and "Missing credentials" not in added.stderr
    sent = upstream.requests[-1]["headers"]
    assert len(upstream.chat_requests()) >= before + 3 and sent["authorization"] == "Bearer none"


@pytest.mark.parametrize("name, reason", [
    ("con.txt", "reserved device name"),
    ("LPT1.log", "reserved device name"),
    ("com\u00b9", "reserved device name"),
    ("work.", "trailing '.'"),
    ("con", "reserved device name"),
])
def test_new_conversation_folders_must_be_portable(cli, name, reason):
    # The id works (issue 16: any id a client sends), in a hashed folder every system keeps.
    done = cli.ok("add", "text", "--no-llm", "-c", name, "--json").json()["results"][0]
    assert not (cli.vault / "entries" / name).exists()
    folder = next((cli.vault / "entries").iterdir()).name
    assert folder != name and layout.is_portable_name(folder), reason
    assert [row["id"] for row in cli.ok("list", "-c", name, "--json").json()] == [done["id"]]


def test_a_name_differing_only_in_case_is_refused_but_existing_folders_stay_usable(cli):
    cli.ok("add", "at work", "--no-llm", "-c", "work")
    done = cli("add", "at Work", "--no-llm", "-c", "Work")
    assert done.exit_code == 2 and "differs only in case from the existing 'work'" in done.stderr
    # A folder an older memvault made (Linux allowed it) stays readable and writable.
    old = cli.vault / "entries" / "Work." / "facts"
    old.mkdir(parents=True)
    (old / f"20240101T000000000Z__{IDS[9]}.md").write_text(
        GOOD.format(id=IDS[9], text="from an older vault").replace("conversation_id: notes", "conversation_id: Work."))
    subprocess.run(["git", "add", "-A"], cwd=cli.vault, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "older vault"],
                   cwd=cli.vault, check=True)
    cli.ok("add", "still usable", "--no-llm", "-c", "Work.")
    assert {e["text"] for e in cli.ok("list", "-c", "Work.", "--json").json()} == {"from an older vault",
                                                                                  "still usable"}
    cli.ok("rm", IDS[9])


def test_render_refuses_what_no_file_can_hold():
    from memvault.vault.format.markdown import render

    with pytest.raises(UsageError, match="'user_id' contains a lone surrogate"):
        render(Entry("ok", user_id="a\ud800"))
    with pytest.raises(UsageError, match="finite"):
        render(Entry("ok", metadata={"x": float("inf")}))
