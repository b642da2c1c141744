"""What a remote says is a claim (docs/architecture.md, Sync, "Trust"): real clones of a bare remote on
disk, and a plain `git clone` playing anyone else who can push to it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from memvault.vault.devices import safety as sync_safety
from tests.support.cli import Cli
from tests.test_sync_devices import assert_clean, devices, git, live_fact_ids

pytestmark = pytest.mark.timeout(300)

KEPT = "The allotment is plot 14 beside the river"


def add(cli: Cli, text: str) -> str:
    return cli.ok("add", text, "--json").json()["results"][0]["id"]


def outsider(tmp_path: Path, remote: Path) -> Path:
    """A plain git clone of the remote: whoever else can push there."""
    clone = tmp_path / "outsider"
    subprocess.run(["git", "clone", "-q", str(remote), str(clone)], check=True)
    return clone


def entry_path(cli: Cli, memory_id: str) -> str:
    [path] = (cli.vault / "entries").rglob(f"*{memory_id}.md")
    return path.relative_to(cli.vault).as_posix()


def doctor_line(cli: Cli, name: str) -> dict:
    checks = cli("doctor", "--json").json()["checks"]
    return next(check for check in checks if check["name"] == name)


@pytest.mark.parametrize("trailers", ["path", "blob", "both"])
def test_a_forged_erasure_record_pushed_from_a_plain_clone_removes_nothing(tmp_path, trailers):
    remote, (laptop, desktop) = devices(tmp_path)
    kept = add(laptop, KEPT)
    laptop.ok("sync")
    desktop.ok("sync")
    rel = entry_path(laptop, kept)
    blob = git(laptop.vault, "rev-parse", f"HEAD:{rel}").strip()
    lines = {"path": [f"Memvault-Erased-Path: {rel}"], "blob": [f"Memvault-Erased-Blob: {blob}"]}
    claims = lines.get(trailers) or lines["path"] + lines["blob"]
    forger = outsider(tmp_path, remote)
    git(forger, "commit", "-q", "--allow-empty", "-m",
        "memvault erase: 1 memory by id (memory: 1)\n\n" + "\n".join(claims) + "\nMemvault-Operation: erase")
    git(forger, "push", "-q", "origin", "HEAD:main")
    forged = git(forger, "rev-parse", "HEAD").strip()

    add(laptop, "The laptop's owner walks on Sundays")  # the laptop merges; the desktop fast-forwards
    merged = laptop.ok("sync")
    desktop_sync = desktop.ok("sync")
    laptop.ok("sync")
    for cli in (laptop, desktop):
        assert live_fact_ids(cli.vault).get(kept) == 1, cli.vault
        assert [hit["id"] for hit in cli.ok("search", "allotment plot river", "--json").json()][:1] == [kept]
        assert blob in git(cli.vault, "rev-list", "--objects", "--all")  # history kept it too
        assert_clean(cli.vault)
        line = doctor_line(cli, "erasure records")
        assert line["status"] == "ok" and forged[:12] in line["detail"]
    assert forged[:12] in merged.stderr and "not acted on" in merged.stderr  # a note: line
    assert forged[:12] in desktop_sync.stderr


def test_a_real_erase_still_reaches_the_other_device(tmp_path):
    """The guard's other side: a record whose history shows the erasure (memvault erase) is acted on."""
    _, (laptop, desktop) = devices(tmp_path)
    secret = add(laptop, "The locker code is Tamarind-Velvet-8812")
    add(laptop, KEPT)
    laptop.ok("sync")
    desktop.ok("sync")
    laptop.ok("erase", secret, "-y")
    laptop.ok("sync")
    report = desktop.ok("sync", "--json").json()
    assert report["outcome"] == "erasure adopted"
    assert secret not in live_fact_ids(desktop.vault) and len(live_fact_ids(desktop.vault)) == 1
    assert doctor_line(desktop, "erasure records")["detail"].startswith("1 proven")


def plumbing(clone: Path, *args: str, input: str | None = None) -> str:
    person = ["-c", "user.name=An Outsider", "-c", "user.email=outsider@example.org"]
    return subprocess.run(["git", "-C", str(clone), *person, *args], input=input, capture_output=True, text=True,
                          check=True).stdout.strip()


def push_unsafe_commit(clone: Path, folder: str, name: str) -> str:
    """A commit built with git's plumbing whose tree holds `folder/name` (a name no checkout takes),
    beside an ordinary change (core/USER.md) that should still arrive. Returns its id."""
    evil = plumbing(clone, "hash-object", "-w", "--stdin", input="---\nid: x\n---\nplanted\n")
    user = plumbing(clone, "hash-object", "-w", "--stdin", input="The user prefers green tea\n")
    inner = plumbing(clone, "mktree", input=f"100644 blob {evil}\tplanted.md\n")
    core = plumbing(clone, "mktree", input=f"100644 blob {user}\tUSER.md\n")
    top = plumbing(clone, "ls-tree", "HEAD").splitlines()
    entries = [line for line in top if not line.endswith("\tcore")] + [f"040000 tree {core}\tcore"]
    if folder:
        sub = plumbing(clone, "rev-parse", f"HEAD:{folder}")
        listing = plumbing(clone, "ls-tree", sub).splitlines() + [f"040000 tree {inner}\t{name}"]
        made = plumbing(clone, "mktree", input="\n".join(listing) + "\n")
        entries = [line for line in entries if not line.endswith(f"\t{folder}")] + [f"040000 tree {made}\t{folder}"]
    else:
        entries.append(f"040000 tree {inner}\t{name}")
    tree = plumbing(clone, "mktree", input="\n".join(entries) + "\n")
    commit = plumbing(clone, "commit-tree", tree, "-p", "HEAD", "-m", "an ordinary-looking commit")
    later = plumbing(clone, "commit-tree", tree, "-p", commit, "-m", "a later one on top")  # the sync names the first
    plumbing(clone, "push", "-q", "origin", f"{later}:refs/heads/main")
    return commit


@pytest.mark.parametrize(("folder", "name"), [("", ".memvault"), ("entries", ".GIT")])
def test_a_pull_of_a_tree_no_checkout_can_hold_moves_nothing_and_says_to_sync(tmp_path, folder, name):
    """`pull` checks out the remote's tree as it is: it refuses that tree in one line before anything
    moves (git's own checkout would stop later, or write `.memvault` over this device's state)."""
    remote, (laptop, desktop) = devices(tmp_path)
    add(laptop, KEPT)
    laptop.ok("sync")
    desktop.ok("sync")
    push_unsafe_commit(outsider(tmp_path, remote), folder, name)
    head = git(desktop.vault, "rev-parse", "HEAD").strip()
    pulled = desktop("pull")
    assert pulled.exit_code == 1 and "Traceback" not in pulled.stderr
    [line] = pulled.stderr.strip().splitlines()
    assert "no checkout can hold safely" in line and "memvault sync" in line, line
    assert git(desktop.vault, "rev-parse", "HEAD").strip() == head
    assert not list(desktop.vault.rglob("planted.md"))
    assert "green tea" not in (desktop.vault / "core" / "USER.md").read_text()
    assert_clean(desktop.vault)
    assert desktop.ok("sync").exit_code == 0  # sync brings the rest of that commit in
    assert "green tea" in (desktop.vault / "core" / "USER.md").read_text()


@pytest.mark.parametrize(("folder", "name"), [("entries", ".."), ("", ".."), ("entries", ".GIT"),
                                              ("", ".memvault"), ("", "ENTRIES"), ("entries", "git~1")])
def test_a_commit_no_checkout_can_hold_is_refused_by_name_and_every_device_goes_on(tmp_path, folder, name):
    remote, (laptop, desktop) = devices(tmp_path)
    first = add(laptop, KEPT)
    laptop.ok("sync")
    desktop.ok("sync")
    unsafe = push_unsafe_commit(outsider(tmp_path, remote), folder, name)
    second = add(laptop, "The laptop's owner walks on Sundays")  # a merge on the laptop
    third = add(desktop, "The desktop's owner bakes bread")  # a fast-forward first on the desktop
    runs = [desktop("sync"), laptop("sync"), desktop("sync"), laptop("sync")]
    assert [run.exit_code for run in runs] == [0, 0, 0, 0], [run.stderr for run in runs]
    assert unsafe[:12] in runs[0].stderr and "refused" in runs[0].stderr
    for cli in (laptop, desktop):
        assert set(live_fact_ids(cli.vault)) == {first, second, third}
        assert "green tea" in (cli.vault / "core" / "USER.md").read_text()  # the rest of that commit arrived
        assert not list(cli.vault.rglob("planted.md"))
        assert not (tmp_path / "planted.md").exists() and not (cli.vault.parent / "planted.md").exists()
        assert_clean(cli.vault)
        checks = cli("doctor", "--json", "--no-llm-check").json()["checks"]
        assert [c["name"] for c in checks if c["status"] not in ("ok", "skip")] == [], checks
    assert git(laptop.vault, "rev-parse", "HEAD") == git(desktop.vault, "rev-parse", "HEAD")


ROOT = Path(__file__).resolve().parent.parent
# Held out: none of these is in the tests above nor was the list the check was written from.
HOSTILE = ["entries/.Git/config", ".GIT", ".git.", ".git ", ".git . .", "GIT~1/x", "entries/a/../../x.md",
           "./x", "core/..", ".memvault/index.sqlite", ".memvault", "entries\\..\\x.md", "/etc/passwd"]
ORDINARY = [".gitattributes", ".gitignore", ".github/workflows/ci.yml", "entries/chat/.memvault", "...", "..md",
            "core/git~2.md", "journal/2026-11-29.md", "entries/My_Chat-3f2a_/facts/x.md", "entries/a.b/c..d.md"]


def complete(path: str) -> list[str]:
    """A path with every folder above it, as `ls-tree -r -t` lists a tree."""
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]


def test_the_check_refuses_hostile_names_and_keeps_ordinary_trees():
    """Both sides of the guard on data it was not written from: hostile names (refused) and every path
    of this repository's own tree and of ordinary vault names (kept)."""
    for path in HOSTILE:
        assert sync_safety.flagged(complete(path), ""), path
    assert sync_safety.flagged([p for path in ORDINARY for p in complete(path)], "") == set()
    own_tree = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "-t", "--name-only", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(own_tree) > 300 and sync_safety.flagged(own_tree, "") == set()
    # A vault inside an enclosing repository: `.memvault` is refused at the vault's root only.
    listing = ["notes", "notes/vault", "notes/vault/.memvault", "notes/.memvault"]
    assert sync_safety.flagged(listing, "notes/vault") == {"notes/vault/.memvault"}
    # A name holding a slash: its "parent" is no folder of the tree.
    assert sync_safety.flagged(["entries", "entries/x/y.md"], "") == {"entries/x/y.md"}
    # Case twins: the one this device holds is kept, whichever comes first.
    assert sync_safety.flagged(["Core", "core"], "", lambda: {"core"}) == {"Core"}
    assert sync_safety.flagged(["Core", "core"], "") == {"core"}


def test_the_commit_that_added_an_unsafe_path_is_named_even_when_it_is_its_first_change(tmp_path):
    from memvault.vault.git.repository import VaultGit

    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    blob = plumbing(repo, "hash-object", "-w", "--stdin", input="planted\n")
    tree = plumbing(repo, "mktree", input=f"100644 blob {blob}\t..\n100644 blob {blob}\tz.md\n")
    base = plumbing(repo, "commit-tree", plumbing(repo, "mktree", input=""), "-m", "base")
    bad = plumbing(repo, "commit-tree", tree, "-p", base, "-m", "adds '..' as its first change")
    later = plumbing(repo, "commit-tree", tree, "-p", bad, "-m", "later")
    git_of_repo = VaultGit(repo, repo)
    assert sync_safety.flagged(sync_safety.names(git_of_repo, later), "") == {".."}
    assert sync_safety.introduced(git_of_repo, base, later, {".."}) == [bad]
