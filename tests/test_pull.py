"""`memvault pull` when two machines changed the same memory: real clones of a bare remote, real git.

The pull stops with one line that says what to do; while git is mid-rebase memvault writes nothing;
both versions are kept for the person who resolves it; after `git rebase --continue` and `memvault
reindex` the vault is whole again and the other machine receives the result.
"""

import subprocess

from tests.support.cli import Cli


def git(path, *args, check=True):
    # The person resolving the conflict: their own identity, and no editor for the commit message.
    return subprocess.run(["git", "-c", "user.name=Person", "-c", "user.email=person@example.invalid", *args],
                          cwd=path, capture_output=True, text=True, check=check, env=None).stdout


def machines(tmp_path):
    """A bare remote holding one memory, and two clones of it made into vaults."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    seed = Cli(tmp_path / "seed")
    seed.ok("init")
    git(seed.vault, "remote", "add", "origin", str(remote))
    [event] = seed.ok("add", "The boiler service is due in March", "--no-llm", "--json").json()["results"]
    seed.ok("push")
    clones = []
    for name in ("laptop", "desktop"):
        subprocess.run(["git", "clone", "-q", str(remote), str(tmp_path / name)], check=True)
        clone = Cli(tmp_path / name)
        clone.ok("init")  # an existing clone is used as is
        clones.append(clone)
    return event["id"], *clones


def test_both_machines_edit_the_same_memory_and_the_pull_stops_without_losing_either(tmp_path, monkeypatch):
    memory_id, laptop, desktop = machines(tmp_path)
    laptop.ok("edit", memory_id, "--text", "The boiler service is due in April")
    laptop.ok("push")
    desktop.ok("edit", memory_id, "--text", "The boiler service is due in May")

    pulled = desktop("pull")
    assert pulled.exit_code == 1
    assert len(pulled.stderr.strip().splitlines()) == 1 and "Traceback" not in pulled.stderr
    assert "git pull from origin stopped" in pulled.stderr and "memvault reindex" in pulled.stderr

    # Mid-rebase: memvault refuses to write, and doctor says why.
    refused = desktop("add", "A note while git is stuck", "--no-llm")
    assert refused.exit_code == 1 and "in the middle of a rebase" in refused.stderr
    doctor = desktop("doctor", "--json")
    assert any(c["name"] == "git state" and c["status"] == "fail" for c in doctor.json()["checks"])
    [path] = (desktop.vault / "entries").rglob(f"*{memory_id}.md")
    conflicted = path.read_text()
    assert "due in April" in conflicted and "due in May" in conflicted  # both kept for the person

    # The person keeps the desktop's text (in a rebase, "theirs" is the commit being replayed).
    git(desktop.vault, "checkout", "--theirs", "--", str(path))
    git(desktop.vault, "add", "--", str(path))
    monkeypatch.setenv("GIT_EDITOR", "true")
    git(desktop.vault, "rebase", "--continue")
    desktop.ok("reindex")
    [hit] = desktop.ok("search", "boiler service", "--json").json()
    assert (hit["id"], hit["text"]) == (memory_id, "The boiler service is due in May")
    events = [e["event"] for e in desktop.ok("history", memory_id, "--json").json()]
    assert events == ["ADD", "UPDATE", "UPDATE"]  # March, then the laptop's April, then May
    desktop.ok("add", "Writes work again", "--no-llm")
    desktop.ok("push")

    laptop.ok("pull")
    [hit] = laptop.ok("search", "boiler service", "--json").json()
    assert hit["text"] == "The boiler service is due in May"


def test_a_pull_with_nothing_in_common_changes_merges_cleanly(tmp_path):
    memory_id, laptop, desktop = machines(tmp_path)
    laptop.ok("edit", memory_id, "--text", "The boiler service is due in April")
    laptop.ok("push")
    desktop.ok("add", "The dentist appointment moved to Tuesday", "--no-llm")
    desktop.ok("pull")
    texts = sorted(e["text"] for e in desktop.ok("list", "--json").json())
    assert texts == ["The boiler service is due in April", "The dentist appointment moved to Tuesday"]
    subjects = git(desktop.vault, "log", "--format=%s").splitlines()
    assert subjects[0].startswith("memvault add:") and subjects[1].startswith("memvault update:")  # rebased


def test_an_uncommitted_hand_edit_that_clashes_with_the_pull_is_kept_in_the_stash(tmp_path):
    """`git pull --autostash` exits 0 when the stash cannot be re-applied, leaving conflict markers in
    the file: memvault puts the pulled version back, keeps the hand edit in the stash, and says so."""
    memory_id, laptop, desktop = machines(tmp_path)
    laptop.ok("edit", memory_id, "--text", "The boiler service is due in April")
    laptop.ok("push")
    [path] = (desktop.vault / "entries").rglob(f"*{memory_id}.md")
    path.write_text(path.read_text().replace("due in March", "due in June"))  # by hand, not committed
    pulled = desktop("pull")
    assert pulled.exit_code == 1 and "git pull from origin stopped" in pulled.stderr
    assert "stash" in pulled.stderr and len(pulled.stderr.strip().splitlines()) == 1
    assert "<<<<<<<" not in path.read_text() and "due in April" in path.read_text()
    assert "due in June" in git(desktop.vault, "stash", "show", "-p")  # the hand edit is not lost
    [hit] = desktop.ok("search", "boiler service", "--json").json()
    assert (hit["id"], hit["text"]) == (memory_id, "The boiler service is due in April")  # indexed as pulled
    desktop.ok("add", "Writes still work after the clash", "--no-llm")


def test_a_file_with_conflict_markers_is_a_broken_file_never_a_memory(tmp_path):
    memory_id, laptop, desktop = machines(tmp_path)
    [path] = (desktop.vault / "entries").rglob(f"*{memory_id}.md")
    text = path.read_text()
    path.write_text(text.replace("The boiler service is due in March",
                                 "<<<<<<< HEAD\nThe boiler service is due in March\n=======\n"
                                 "The boiler service is due in June\n>>>>>>> theirs"))
    reindexed = desktop("reindex")
    assert reindexed.exit_code == 1 and "conflict markers" in reindexed.stderr
    assert desktop.ok("search", "boiler service", "--json").json() == []


def test_a_pull_from_a_remote_that_is_not_there_says_what_git_said_in_one_line(tmp_path):
    vault = Cli(tmp_path / "vault")
    vault.ok("init")
    git(vault.vault, "remote", "add", "origin", str(tmp_path / "nowhere.git"))
    pulled = vault("pull")
    assert pulled.exit_code == 1
    [line] = pulled.stderr.strip().splitlines()
    assert "does not appear to be a git repository" in line and not line.endswith("'"), line


def test_a_pull_first_sets_this_machines_merge_drivers(tmp_path):
    """A vault whose .git/config names a merge driver by an old module path (a vault made before the
    vault's modules moved, or on another machine) gets this machine's drivers before git merges."""
    from memvault.vault.devices.merge import driver_config

    _, laptop, desktop = machines(tmp_path)
    for key in driver_config():
        if key.endswith(".driver"):
            git(desktop.vault, "config", "--local", key, "python3 -m memvault.vault.gone %O %A %B %P")
    laptop.ok("add", "The car's MOT is in June", "--no-llm")
    laptop.ok("push")
    desktop.ok("pull")
    listed = git(desktop.vault, "config", "--local", "--get-regexp", r"^merge\.memvault-")
    have = dict(line.split(" ", 1) for line in listed.splitlines())
    assert have == {key.lower(): value for key, value in driver_config().items()}
