"""Time travel: `search --as-of` and `show --as-of` answer from the vault as it was then (git), with
the real model, index, files and git, and leave today's index exactly as it was."""

import gc
import hashlib
import shutil

import pytest

from tests.support.cli import Cli

DAYS = ("2026-03-01", "2026-04-01", "2026-05-01")  # the fact is added, updated, deleted: one a day
TEAL, CRIMSON = "Alice's favourite colour is teal", "Alice's favourite colour is crimson"


def on(day: str) -> dict[str, str]:
    """Git's author and committer dates for a command run 'on' that day (noon UTC)."""
    stamp = f"{day}T12:00:00+00:00"
    return {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A vault where a fact was added, updated and deleted on three days; an unrelated one stays."""
    cli = Cli(tmp_path_factory.mktemp("tt") / "vault")
    cli.ok("init", env=on("2026-02-15"))
    cli.ok("add", "Bob walks his dog every morning", "-c", "alice", "--no-llm", env=on(DAYS[0]))
    [added] = cli.ok("add", TEAL, "-c", "alice", "--no-llm", "--json", env=on(DAYS[0])).json()["results"]
    cli.ok("edit", added["id"], "--text", CRIMSON, env=on(DAYS[1]))
    cli.ok("rm", added["id"], env=on(DAYS[2]))
    cli.ok("search", "dog", "-c", "alice")  # today's index, built and caught up
    return cli, added["id"]


def search(cli: Cli, *extra: str, query: str = "what is Alice's favourite colour") -> list[str]:
    return [hit["text"] for hit in cli.ok("search", query, "-c", "alice", "--json", "--top-k", "5", *extra).json()]


def fingerprint(vault) -> tuple[str, ...]:
    """The bytes of today's index files: any write to them changes this. In-process CLI runs leave
    their index connection to the collector, whose close checkpoints the WAL whenever it runs:
    collected here first, so only a write by the code under test can change the bytes. A missing WAL
    and an empty one hold the same (nothing): a read-only reader of today's index may create it."""
    gc.collect()
    state = vault / ".memvault"
    return tuple(hashlib.sha256(p.read_bytes() if p.exists() else b"").hexdigest()
                 for p in (state / "index.sqlite", state / "index.sqlite-wal"))


def test_search_as_of_each_date_finds_the_text_of_that_date(history):
    cli, memory_id = history
    now = search(cli)  # first: a search today may record the stats of files written just before it
    assert TEAL not in now and CRIMSON not in now  # deleted today
    today = fingerprint(cli.vault)
    assert TEAL in search(cli, "--as-of", DAYS[0]) and CRIMSON not in search(cli, "--as-of", DAYS[0])
    assert CRIMSON in search(cli, "--as-of", DAYS[1]) and TEAL not in search(cli, "--as-of", DAYS[1])
    assert search(cli, "--as-of", DAYS[2]) == []
    assert search(cli, "--as-of", DAYS[2], query="dog") == ["Bob walks his dog every morning"]
    assert search(cli, "--as-of", "HEAD~1")[0] == CRIMSON  # a commit names a past too
    assert fingerprint(cli.vault) == today  # today's index was never written


def test_show_as_of_each_date_prints_the_file_of_that_date(history):
    cli, memory_id = history
    assert TEAL in cli.ok("show", memory_id[:8], "--as-of", DAYS[0]).stdout
    shown = cli.ok("show", memory_id, "--as-of", DAYS[1], "--json").json()
    assert shown["text"] == CRIMSON and shown["commit"] and shown["as_of"].startswith(DAYS[1])
    deleted = cli.ok("show", memory_id, "--as-of", DAYS[2], "--json").json()
    assert deleted["deleted_at"] and "/deleted/" in deleted["path"]  # the tombstone, as it was then
    before = cli("show", memory_id, "--as-of", "2026-02-20")
    assert before.exit_code != 0 and "no memory with id" in before.stderr


def test_a_past_index_is_built_once_per_commit_and_reused(history):
    cli, _ = history
    search(cli, "--as-of", DAYS[0])
    past = cli.vault / ".memvault" / "asof"
    built = {p.name: p.joinpath("index.sqlite").stat().st_mtime_ns for p in past.iterdir() if p.is_dir()}
    search(cli, "--as-of", f"{DAYS[0]}T23:00:00Z")  # the same commit, asked another way
    assert {p.name: p.joinpath("index.sqlite").stat().st_mtime_ns for p in past.iterdir() if p.is_dir()} == built


@pytest.mark.parametrize("asked, message", [
    ("2026-02-01", "no commit at or before"),  # before the vault's first commit
    ("2026-13-40", "not a valid date"),
    ("--exec=rm", "neither a date"),  # never read by git as an option
    ("no-such-branch", "neither a date"),
])
def test_a_bad_as_of_is_a_one_line_error(history, asked, message):
    cli, _ = history
    result = cli("search", "colour", "--as-of", asked)
    assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_the_api_takes_as_of(tmp_path, monkeypatch):
    import memvault
    from memvault.settings import Settings

    with memvault.Memory(vault=tmp_path / "vault", settings=Settings()) as memory:
        for day, step in zip(DAYS, ("add", "update", "delete"), strict=True):
            for name, value in on(day).items():
                monkeypatch.setenv(name, value)
            if step == "add":
                [added] = memory.add(TEAL, user_id="alice", infer=False)["results"]
            elif step == "update":
                memory.update(added["id"], CRIMSON)
            else:
                memory.delete(added["id"])
        def found(as_of):
            return [hit["memory"] for hit in memory.search("favourite colour", user_id="alice", as_of=as_of)["results"]]
        assert found(DAYS[0]) == [TEAL] and found(DAYS[1]) == [CRIMSON] and found(DAYS[2]) == [] == found(None)
        with pytest.raises(memvault.errors.MemvaultError, match="neither a date"):
            found("not a day")


def test_a_past_index_embeds_only_the_texts_todays_index_lacks(history):
    from memvault import settings as settings_mod
    from memvault.core import Memvault
    from memvault.index.past import past_index
    from memvault.vault.git.timetravel import resolve

    cli, _ = history
    memvault = Memvault.open(settings_mod.load(None, {"vault.path": str(cli.vault)}))
    model, asked = memvault.embedder(), []

    class Counting:
        identity, dims, batch_size = model.identity, model.dims, 64

        def embed(self, texts, kind="passage"):
            asked.extend(texts)
            return model.embed(texts, kind)

    past = resolve(memvault.vault.git, DAYS[0])
    shutil.rmtree(memvault.vault.state_dir / "asof" / past.sha)  # built afresh here
    with past_index(memvault.vault, Counting(), past) as index:
        assert index.count() == 2
    assert asked == [TEAL]  # Bob's text is today's too: its vector was copied, not embedded again
    memvault.close()


def test_a_past_index_takes_today_s_vectors_of_the_texts_today_holds(history):
    # Bob's fact is in today's index: its stored vector is reused; the deleted fact's texts are not.
    import numpy as np

    from memvault.index.past import vectors_of
    from memvault.index.store import FILE_NAME

    cli, _ = history
    bob = "Bob walks his dog every morning"
    texts = {hashlib.md5(t.encode()).hexdigest(): t for t in (bob, TEAL, CRIMSON)}
    found = vectors_of(cli.vault / ".memvault" / FILE_NAME, "minilm-l6-v2-int8:384", texts)
    assert set(found) == {bob} and found[bob].shape == (384,)
    assert abs(float(np.linalg.norm(found[bob])) - 1.0) < 1e-4  # a stored unit vector, not a placeholder
    assert vectors_of(cli.vault / ".memvault" / FILE_NAME, "another-model:384", texts) == {}
