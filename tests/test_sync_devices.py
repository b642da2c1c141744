"""`memvault sync` between devices: real clones of a bare remote on disk, real git, real merge drivers."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.vault.devices.merge import KEPT_BOTH, RESUMMARIZE, merge_entry, merge_summary
from memvault.vault.format.reading import CONFLICT_MARKER
from tests.support.cli import Cli


def git(vault: Path, *args: str, check: bool = True) -> str:
    person = ["-c", "user.name=A Person", "-c", "user.email=person@example.org"]  # a person's own commits
    return subprocess.run(["git", "-C", str(vault), *person, *args], capture_output=True, text=True,
                          check=check).stdout


def bare_remote(tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    return remote


def devices(tmp_path: Path, names=("laptop", "desktop")) -> tuple[Path, list[Cli]]:
    """A bare remote, the first device made with `init --remote`, the others with `clone`."""
    remote = bare_remote(tmp_path)
    first = Cli(tmp_path / names[0])
    first.ok("init", "--remote", str(remote))
    others = []
    for name in names[1:]:
        Cli(tmp_path / "unused").ok("clone", str(remote), str(tmp_path / name))
        others.append(Cli(tmp_path / name))
    return remote, [first, *others]


def open_vault(path: Path) -> Memvault:
    return Memvault.open(settings_module.load(None, {"vault.path": str(path)}))


def tree(vault: Path) -> dict[str, bytes]:
    return {str(p.relative_to(vault)): p.read_bytes() for p in sorted(vault.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(vault).parts[:1] and ".memvault" not in p.parts}


def sync_all(*clis: Cli, rounds: int = 2) -> None:
    for _ in range(rounds):
        for cli in clis:
            cli.ok("sync")


def assert_clean(vault: Path) -> None:
    assert git(vault, "status", "--porcelain") == ""
    assert not (vault / ".git" / "MERGE_HEAD").exists()
    assert git(vault, "fsck", "--no-progress", "--no-dangling").strip() == ""  # dangling: a merge's scratch trees
    for path in vault.rglob("*.md"):
        if ".git" not in path.parts:
            assert not CONFLICT_MARKER.search(path.read_text(encoding="utf-8")), path


def live_fact_ids(vault: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for path in (vault / "entries").rglob("*.md"):
        if "deleted" not in path.relative_to(vault).parts:
            memory_id = path.stem.split("__")[-1]
            counts[memory_id] = counts.get(memory_id, 0) + 1
    return counts


def test_clone_and_init_remote_install_the_drivers_and_a_fresh_clone_searches(tmp_path):
    _, (laptop, desktop) = devices(tmp_path)
    laptop.ok("add", "The boiler service is due in March")
    laptop.ok("sync")
    report = desktop.ok("sync", "--json").json()
    assert report["outcome"] == "fast-forward" and len(report["changed"]) == 1
    assert desktop.ok("search", "boiler", "--json").json()[0]["text"] == "The boiler service is due in March"
    for cli in (laptop, desktop):
        config = git(cli.vault, "config", "--get-regexp", r"^merge\.memvault-")
        assert f"{sys.executable} -m memvault.vault.devices.merge entry %O %A %B %P" in config
        assert "merge=memvault-core" in (cli.vault / ".gitattributes").read_text()


def test_a_clone_of_a_bare_remote_whose_head_names_master_checks_out_the_vault_s_branch(tmp_path):
    """`git init --bare` names `master` as its HEAD; memvault pushes `main`. The clone checked out
    nothing, started a history of its own on `master`, and both devices said "Synced" forever apart."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "master", str(remote)], check=True)
    laptop = Cli(tmp_path / "laptop")
    laptop.ok("init", "--remote", str(remote))
    laptop.ok("add", "The boiler service is due in March")
    laptop.ok("sync")
    Cli(tmp_path / "unused").ok("clone", str(remote), str(tmp_path / "desktop"))
    desktop = Cli(tmp_path / "desktop")
    assert [item["text"] for item in desktop.ok("list", "--json").json()] == ["The boiler service is due in March"]
    desktop.ok("add", "The car is due for its MOT in May")
    desktop.ok("sync")
    laptop.ok("sync")
    assert sorted(item["text"] for item in laptop.ok("list", "--json").json()) == [
        "The boiler service is due in March", "The car is due for its MOT in May"]
    assert git(remote, "for-each-ref", "--format=%(refname)", "refs/heads").split() == ["refs/heads/main"]


def test_the_same_fact_edited_on_two_devices_keeps_the_later_edit_and_logs_the_other(tmp_path):
    _, (laptop, desktop) = devices(tmp_path)
    memory_id = laptop.ok("add", "The boiler service is due in March", "--json").json()["results"][0]["id"]
    sync_all(laptop, desktop, rounds=1)
    laptop.ok("edit", memory_id, "-m", "The boiler service is due in April")
    desktop.ok("edit", memory_id, "-m", "The boiler service is due in May")  # later: it wins
    sync_all(laptop, desktop)
    assert tree(laptop.vault) == tree(desktop.vault)
    for cli in (laptop, desktop):
        assert cli.ok("show", memory_id, "--json").json()["text"] == "The boiler service is due in May"
        assert_clean(cli.vault)
    [merge] = [c for c in laptop.ok("log", "--json", "-o", "sync").json() if c["events"]]
    assert merge["events"] == [f"MERGE-KEPT-LATER {memory_id}"]
    body = git(laptop.vault, "log", "-1", "--format=%B", merge["commit"])
    assert "The boiler service is due in April" in body  # the other edit, named; its text is in history
    texts = [e["new_memory"] for e in laptop.ok("history", memory_id, "--json").json() if e.get("new_memory")]
    assert "The boiler service is due in April" in texts


@pytest.mark.parametrize("unlike", [False, True])
def test_a_delete_on_one_device_wins_over_an_edit_on_another(tmp_path, unlike):
    _, (laptop, desktop) = devices(tmp_path)
    short = laptop.ok("add", "Fact to delete", "--json").json()["results"][0]["id"]
    sync_all(laptop, desktop, rounds=1)
    laptop.ok("rm", short)
    if unlike:  # a tombstone git cannot pair with the live file (a rename it does not see): a modify/delete
        [tomb] = (laptop.vault / "entries").rglob(f"*{short}.md")
        tomb.write_text(tomb.read_text().replace("Fact to delete", "x" * 400 + "\n" + "y " * 300))
        git(laptop.vault, "commit", "-qam", "a tombstone rewritten by hand")
    desktop.ok("edit", short, "-m", "Fact to delete, edited on the desktop into something with many other words")
    sync_all(desktop, laptop)
    for cli in (laptop, desktop):
        assert short not in live_fact_ids(cli.vault)
        assert cli.ok("show", short, "--json").json()["deleted_at"]
        assert cli.ok("search", "desktop edited words", "--json").json() == []
        assert_clean(cli.vault)
    assert tree(laptop.vault) == tree(desktop.vault)


def test_core_files_merge_line_by_line_and_clashing_lines_are_kept_both_for_doctor(tmp_path):
    _, (laptop, desktop) = devices(tmp_path)
    laptop.ok("core", "edit", "USER", "--text", "Name: Ann\nLikes: tea\nLives: Oslo")
    sync_all(laptop, desktop, rounds=1)
    laptop.ok("core", "edit", "USER", "--text", "Name: Ann Smith\nLikes: tea\nLives: Oslo")  # distinct lines
    desktop.ok("core", "edit", "USER", "--text", "Name: Ann\nLikes: tea\nLives: Bergen")
    sync_all(laptop, desktop)
    text = (laptop.vault / "core" / "USER.md").read_text()
    assert text == "Name: Ann Smith\nLikes: tea\nLives: Bergen\n" and KEPT_BOTH not in text
    laptop.ok("core", "edit", "USER", "--text", "Name: Ann Smith\nLikes: green tea\nLives: Bergen")
    desktop.ok("core", "edit", "USER", "--text", "Name: Ann Smith\nLikes: coffee\nLives: Bergen")
    sync_all(laptop, desktop)
    text = (desktop.vault / "core" / "USER.md").read_text()
    assert KEPT_BOTH in text and "Likes: green tea" in text and "Likes: coffee" in text
    assert tree(laptop.vault) == tree(desktop.vault)
    assert_clean(laptop.vault)
    doctor = laptop("doctor", "--json")
    assert "core/USER.md" in doctor.stdout and "both versions kept" in doctor.stdout


def end_a_session(vault: Path, turns: list[str], summary_line: str) -> None:
    """A session of 3 turns ended (its summary and the day's log, one commit), then the rolling summary
    rewritten as curation does (the previous one's text and a new line)."""
    from memvault.vault.format.entry import Entry, now
    from tests.test_policy import policy_llm
    from tests.test_sessions import talk

    core = open_vault(vault)
    llm = policy_llm({text: [text] for text in turns}, summary=f"Session: {summary_line}")
    talk(core, turns, llm)
    assert core.end_session("default", llm).summary is not None
    previous = core.vault.summary("default")
    with core.vault.transaction("add", "summary") as tx:
        tx.write(previous.replace(text=f"{previous.text}\n- {summary_line}", updated_at=now()) if previous else
                 Entry(f"- {summary_line}", role="summary", conversation_id="default"), event="SUMMARY")
    core.close()


def test_sessions_the_journal_and_the_rolling_summary_keep_both_sides(tmp_path):
    _, (laptop, desktop) = devices(tmp_path)
    end_a_session(laptop.vault, ["I like tea", "I live in Oslo", "I walk to work"], "likes tea")
    sync_all(laptop, desktop, rounds=1)
    end_a_session(laptop.vault, ["I swim on Sundays", "I own a cat", "I read at night"], "swims on Sundays")
    end_a_session(desktop.vault, ["I cycle daily", "I bake bread", "I play chess"], "cycles daily")
    sync_all(laptop, desktop)
    assert tree(laptop.vault) == tree(desktop.vault)
    [day] = list((laptop.vault / "journal").glob("*.md"))
    text = day.read_text()
    for fact in ("The user swims on Sundays", "The user cycles daily", "The user likes tea"):  # in the third person
        assert text.count(fact) == 1, text
    rolling = (laptop.vault / "entries" / "default" / "summaries" / "summary.md").read_text()
    assert "- swims on Sundays" in rolling and "- cycles daily" in rolling and f"{RESUMMARIZE}: true" in rolling
    assert len(list((laptop.vault / "entries" / "default" / "sessions").rglob("*.md"))) == 3
    assert_clean(laptop.vault)


def summary(text: str, when: str, **extra) -> str:
    return (f"---\nid: s-1\nrole: summary\nconversation_id: default\ncreated_at: '2026-01-01T00:00:00.000Z'\n"
            f"updated_at: '{when}'\n---\n{text}\n")


def test_summary_union_is_the_same_whichever_side_merges_and_is_marked_for_resummarising():
    base = summary("- likes tea", "2026-01-01T00:00:00.000Z")
    ours = summary("- likes tea\n- lives in Oslo", "2026-01-02T00:00:00.000Z")
    theirs = summary("- likes tea\n- works at night", "2026-01-03T00:00:00.000Z")
    one, note = merge_summary(base, ours, theirs, "entries/default/summaries/summary.md")
    two, _ = merge_summary(base, theirs, ours, "entries/default/summaries/summary.md")
    assert one == two and note["event"] == "MERGE-UNION"
    assert "- lives in Oslo" in one and "- works at night" in one and f"{RESUMMARIZE}: true" in one


def fact(text: str, when: str, deleted: str | None = None) -> str:
    tail = f"deleted_at: '{deleted}'\n" if deleted else ""
    return (f"---\nid: f-1\nrole: memory\nconversation_id: default\ncreated_at: '2026-01-01T00:00:00.000Z'\n"
            f"updated_at: '{when}'\n{tail}---\n{text}\n")


@pytest.mark.parametrize("swap", [False, True])
def test_entry_merge_is_symmetric_and_tombstones_win(swap):
    base = fact("tea", "2026-01-01T00:00:00.000Z")
    early, late = fact("green tea", "2026-01-02T00:00:00.000Z"), fact("black tea", "2026-01-03T00:00:00.000Z")
    pair = (late, early) if swap else (early, late)
    assert merge_entry(base, *pair, "p")[0] == late
    tomb = fact("tea", "2026-01-01T00:00:00.000Z", deleted="2026-01-02T00:00:00.000Z")
    pair = (late, tomb) if swap else (tomb, late)  # the edit is later than the delete, and still loses
    merged, note = merge_entry(base, *pair, "p")
    assert merged == tomb and note["event"] == "MERGE-DELETE-WINS"
    tie_a, tie_b = fact("one", "2026-01-02T00:00:00.000Z"), fact("two", "2026-01-02T00:00:00.000Z")
    assert merge_entry(base, tie_a, tie_b, "p")[0] == merge_entry(base, tie_b, tie_a, "p")[0]


def test_a_merge_git_cannot_express_ends_usable_with_a_one_line_report(tmp_path):
    _, (laptop, desktop) = devices(tmp_path)
    (laptop.vault / "notes").mkdir()
    (laptop.vault / "notes" / "plan.txt").write_text("a plan\n")
    git(laptop.vault, "add", "notes")
    git(laptop.vault, "commit", "-qm", "notes folder")
    (desktop.vault / "notes").write_text("notes as one file\n")
    git(desktop.vault, "add", "notes")
    git(desktop.vault, "commit", "-qm", "notes file")
    laptop.ok("sync")
    result = desktop.ok("sync")
    [note] = [line for line in result.stderr.splitlines() if line.startswith("note:")]
    assert note.startswith("note: notes: a folder on one device, a file on the other; both kept")
    laptop.ok("sync")
    assert tree(laptop.vault) == tree(desktop.vault)
    assert (laptop.vault / "notes" / "plan.txt").is_file() and (laptop.vault / "notes~HEAD").is_file()
    for cli in (laptop, desktop):
        assert_clean(cli.vault)
        cli.ok("add", f"still usable on {cli.vault.name}")
    sync_all(laptop, desktop)
    assert tree(laptop.vault) == tree(desktop.vault)


def test_an_older_vault_gets_the_drivers_through_a_migration_commit(tmp_path):
    remote = bare_remote(tmp_path)
    old = Cli(tmp_path / "old")
    old.ok("init")
    (old.vault / ".gitattributes").unlink()
    git(old.vault, "commit", "-qam", "a vault from before sync")
    git(old.vault, "config", "--remove-section", "merge.memvault-entry")
    git(old.vault, "remote", "add", "origin", str(remote))
    old.ok("sync")
    assert "merge=memvault-entry" in (old.vault / ".gitattributes").read_text()
    assert "memvault: merge drivers for sync" in git(old.vault, "log", "--format=%s")
    assert "memvault.vault.devices.merge entry" in git(old.vault, "config", "merge.memvault-entry.driver")


def test_exit_codes_mean_something(tmp_path):
    _, (laptop,) = devices(tmp_path, names=("laptop",))
    git(laptop.vault, "remote", "set-url", "origin", str(tmp_path / "nowhere.git"))
    assert laptop("sync").exit_code == 4
    assert laptop("sync", "nosuchremote").exit_code == 1
    from filelock import FileLock

    git(laptop.vault, "remote", "set-url", "origin", str(tmp_path / "remote.git"))
    with FileLock(str(laptop.vault / ".memvault" / "sync.lock")):
        result = laptop("sync")
    assert result.exit_code == 3 and "another `memvault sync`" in result.stderr
    assert laptop("sync", "--quiet").stdout == ""


def test_an_uncommitted_edit_where_the_merge_must_write_blocks_the_sync_and_loses_nothing(tmp_path):
    _, (laptop, desktop) = devices(tmp_path)
    memory_id = laptop.ok("add", "The boiler service is due in March", "--json").json()["results"][0]["id"]
    sync_all(laptop, desktop, rounds=1)
    laptop.ok("edit", memory_id, "-m", "The boiler service is due in April")
    laptop.ok("sync")
    [path] = (desktop.vault / "entries").rglob(f"*{memory_id}.md")
    path.write_text(path.read_text().replace("due in March", "due in June"))  # by hand, not committed
    result = desktop("sync")
    assert result.exit_code == 6 and "doctor --fix" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "due in June" in path.read_text() and not (desktop.vault / ".git" / "MERGE_HEAD").exists()
    assert not (desktop.vault / ".memvault" / "sync.json").exists()
    desktop.ok("doctor", "--fix")
    desktop.ok("sync")
    laptop.ok("sync")
    assert tree(laptop.vault) == tree(desktop.vault)


def served(url: str, query: str) -> list[str]:
    """What the running server's REST search finds for `query` (user ann), waiting up to a minute."""
    import httpx

    found: list = []
    deadline = time.monotonic() + 60
    while not found and time.monotonic() < deadline:
        time.sleep(0.3)
        found = httpx.get(f"{url}/v1/memories/search/", params={"query": query, "user_id": "ann"},
                          timeout=30).json().get("results", [])
    return [hit["memory"] for hit in found]


@pytest.mark.parametrize("interval", [0.3, 0.0])
def test_a_running_serve_serves_what_a_sync_brought(tmp_path, interval):
    """With sync.interval the server syncs itself; without, a sync from cron changes the files and
    the server's watcher indexes them."""
    from memvault.server.run import running
    from tests.support.server import server_settings

    _, (laptop, desktop) = devices(tmp_path)
    settings = server_settings(desktop.vault)
    settings.sync.interval = interval
    with running(settings) as url:
        laptop.ok("add", "The piano tuner comes on Friday", "--user", "ann")
        laptop.ok("sync")
        if not interval:
            time.sleep(1)  # the watcher is up
            subprocess.run([sys.executable, "-m", "memvault", "sync", "-q", "--vault", str(desktop.vault)], check=True)
        assert served(url, "piano tuner") == ["The piano tuner comes on Friday"]


def test_a_vault_moved_to_another_machine_merges_with_this_machines_python(tmp_path):
    _, (laptop, desktop) = devices(tmp_path)
    memory_id = laptop.ok("add", "The boiler service is due in March", "--json").json()["results"][0]["id"]
    sync_all(laptop, desktop, rounds=1)
    # The clone's .git/config names an interpreter this machine does not have (copied from elsewhere).
    git(desktop.vault, "config", "merge.memvault-entry.driver",
        "/elsewhere/bin/python -m memvault.vault.devices.merge entry %O %A %B %P")
    laptop.ok("edit", memory_id, "-m", "The boiler service is due in April")
    desktop.ok("edit", memory_id, "-m", "The boiler service is due in May")
    sync_all(laptop, desktop)
    assert sys.executable in git(desktop.vault, "config", "merge.memvault-entry.driver")
    assert tree(laptop.vault) == tree(desktop.vault)
    assert desktop.ok("show", memory_id, "--json").json()["text"] == "The boiler service is due in May"
    assert_clean(desktop.vault)


def test_rules_from_two_devices_are_kept_within_the_cap_the_same_way_everywhere(tmp_path):
    _, (laptop, desktop) = devices(tmp_path)
    cap = {"MEMVAULT_RULES_MAX_ACTIVE": "3"}
    for cli, rules in ((laptop, ["Answer in English", "Use metric units"]), (desktop, ["Be brief", "Cite sources"])):
        for rule in rules:
            cli.ok("rules", "add", rule, env=cap)
    laptop.ok("sync", env=cap)
    desktop.ok("sync", env=cap)
    laptop.ok("sync", env=cap)
    assert tree(laptop.vault) == tree(desktop.vault)
    active = [rule["text"] for rule in desktop.ok("rules", "list", "--json", env=cap).json()]
    assert len(active) == 3 and "Answer in English" not in active  # the oldest archived


def test_a_merge_never_brings_back_what_an_erasure_record_lists(tmp_path):
    _, (laptop, desktop) = devices(tmp_path)
    secret = laptop.ok("add", "My locker hint is the dog's birthday", "--json").json()["results"][0]["id"]
    sync_all(laptop, desktop, rounds=1)
    [path] = (laptop.vault / "entries").rglob(f"*{secret}.md")
    rel = path.relative_to(laptop.vault).as_posix()
    assert git(laptop.vault, "rev-parse", f"HEAD:{rel}").strip()
    # A record is acted on only when its history shows the erasure (tests/test_sync_trust.py): a real erase.
    laptop.ok("erase", secret, "-y")
    desktop.ok("edit", secret, "-m", "My locker hint is the dog's birthday, 4 May")  # the other device edits it
    other = desktop.ok("add", "An unrelated memory of the desktop", "--json").json()["results"][0]["id"]
    sync_all(laptop, desktop)
    for cli in (laptop, desktop):
        assert not list((cli.vault / "entries").rglob(f"*{secret}.md"))
        assert live_fact_ids(cli.vault).get(other) == 1
        assert cli.ok("search", "locker hint", "--json").json() == []
    assert tree(laptop.vault) == tree(desktop.vault)


def test_a_three_way_merge_drops_a_path_an_erasure_record_lists(tmp_path):
    """The merge itself, not an adoption, takes out what a record lists by path (`sync_settle.drop_listed`).
    The laptop erases a memory that reached the desktop only as a copy a person made by hand and edited
    (the same path, another blob), and a record names the path (`Memvault-Erased-Path`, a trailer the
    reader takes beside memvault's own blob trailers). The desktop holds no blob the records list, so
    its sync merges three ways, and the merge drops its copy."""
    _, (laptop, desktop) = devices(tmp_path)
    secret = laptop.ok("add", "My locker hint is the dog's birthday", "--json").json()["results"][0]["id"]
    [path] = (laptop.vault / "entries").rglob(f"*{secret}.md")
    rel = path.relative_to(laptop.vault).as_posix()
    copy = desktop.vault / rel
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text(path.read_text(encoding="utf-8").replace("birthday", "birthday, 4 May"), encoding="utf-8")
    git(desktop.vault, "add", rel)
    git(desktop.vault, "commit", "-qm", "copied from the laptop by hand")
    other = desktop.ok("add", "An unrelated memory of the desktop", "--json").json()["results"][0]["id"]
    laptop.ok("erase", secret, "-y")  # no commit of the laptop's holds the path now: a record of it is proven
    git(laptop.vault, "commit", "-q", "--allow-empty", "-m",
        f"memvault erase: 1 memory by path\n\nMemvault-Erased-Path: {rel}\nMemvault-Operation: erase")
    assert laptop.ok("sync", "--json").json()["outcome"] == "pushed"  # only its own commits were new

    report = desktop.ok("sync", "--json").json()
    assert report["outcome"] == "merged"  # three ways: the desktop holds no blob the records list
    assert f"{rel}: erased on a device, removed" in report["fallbacks"]
    assert not copy.exists() and not git(desktop.vault, "ls-tree", "-r", "--name-only", "HEAD", "--", rel).strip()
    laptop.ok("sync")
    for cli in (laptop, desktop):
        assert not list((cli.vault / "entries").rglob(f"*{secret}.md"))
        assert live_fact_ids(cli.vault).get(other) == 1
        assert cli.ok("search", "locker hint", "--json").json() == []
        assert_clean(cli.vault)
    assert tree(laptop.vault) == tree(desktop.vault)


def test_init_remote_joins_a_vault_that_already_has_memories_to_a_remote_that_has_others(tmp_path):
    remote, (laptop,) = devices(tmp_path, names=("laptop",))
    laptop.ok("add", "A memory from the laptop")
    laptop.ok("sync")
    desktop = Cli(tmp_path / "desktop")
    desktop.ok("init")
    desktop.ok("add", "A memory the desktop had before joining")
    desktop.ok("init", "--remote", str(remote))  # two unrelated histories: merged, nothing lost
    laptop.ok("sync")
    assert tree(laptop.vault) == tree(desktop.vault)
    texts = sorted(entry["text"] for entry in laptop.ok("list", "--json").json())
    assert texts == ["A memory from the laptop", "A memory the desktop had before joining"]
    assert_clean(desktop.vault)
