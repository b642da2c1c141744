"""The erase's rewrite in this process (memvault/vault/forget/tree_rewrite.py) makes what git-filter-repo
makes of the same vault, commit for commit, and leaves to filter-repo the history it does not handle."""

from __future__ import annotations

import shutil

import pytest

from memvault.vault.forget import erase, tree_rewrite
from tests.test_erase import git, leftovers, open_vault
from tests.test_erase_range import PASSPORT, hand_commit

pytestmark = pytest.mark.timeout(600)

SIGNATURE = b"gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEEexample\n -----END PGP SIGNATURE-----"


@pytest.fixture
def rewrites(monkeypatch):
    """Each history rewrite, in order: 'in process' or 'filter-repo' (the fallback, the guard's rewrite of
    every commit, or forced: append 'force' and the next erase's rewrite is filter-repo's)."""
    used: list[str] = []
    in_process, filter_repo = erase.rewrite_in_process, erase.filter_repo

    def first_in_process(*args):
        mapping = None if used[-1:] == ["force"] else in_process(*args)
        if mapping is not None:
            used.append("in process")
        return mapping

    def then_filter_repo(*args):
        used.append("filter-repo")
        return filter_repo(*args)

    monkeypatch.setattr(erase, "rewrite_in_process", first_in_process)
    monkeypatch.setattr(erase, "filter_repo", then_filter_repo)
    return used


def sign_head(root) -> None:
    """HEAD's commit made again with a signature header, as a signing git writes it."""
    head, _, message = git(root, "cat-file", "commit", "HEAD").partition(b"\n\n")
    signed = git(root, "hash-object", "-t", "commit", "-w", "--stdin",
                 data=head + b"\n" + SIGNATURE + b"\n\n" + message)
    git(root, "update-ref", "HEAD", signed.decode().strip())


def planted_history(root, m):
    """A vault whose history has all an erase meets: memvault's adds and an update, hand commits (one
    quoting the memory, a move, a signed one, an empty one on the memory's add), an earlier erasure
    record whose parent the next erase prunes, tags before and inside the rewritten range, and a
    remote-tracking ref. Returns the memory."""
    m.add_verbatim("Older note about the harbour.", conversation="c")
    moved = m.add_verbatim("Gina keeps bees on the roof.", conversation="c")
    hand_commit(root, "notes/diary.md", "Dear diary, nothing happened today.\n", "diary")
    git(root, "tag", "before")
    git(root, "-c", "user.name=me", "-c", "user.email=me@x", "tag", "-a", "-m", "an annotated tag", "annotated")
    gone = m.add_verbatim(PASSPORT, conversation="c")
    git(root, "-c", "user.name=me", "-c", "user.email=me@x", "commit", "-q", "--allow-empty", "-m", "a note to self")
    hand_commit(root, "notes/diary.md", f"Dear diary, nothing happened today.\n\n{PASSPORT}\n",
                f"diary: {PASSPORT}\n\nwritten on the train")
    for memory, folder in ((moved, "01"), (gone, "02")):  # the memory alone in its folder, at two paths
        old = m.get(memory.id)[0]
        (root / old.parent.parent / folder).mkdir()
        git(root, "mv", str(old), f"{old.parent.parent}/{folder}/{old.name}")
    git(root, "-c", "user.name=me", "-c", "user.email=me@x", "commit", "-q", "-m", "moved by hand")
    sign_head(root)
    git(root, "tag", "inside")
    m.vault.forget_paths()
    m.update(gone.id, "Frank's passport number is now K-77-BRAVO-112.")
    temporary = m.add_verbatim("Temporary note about the weather in Oslo.", conversation="c")
    m.erase(ids=[temporary.id])  # its record's parent is the update, which the next erase prunes
    m.add_verbatim("Frank likes sailing on Sundays.", conversation="c")
    remote = root.parent / "remote.git"
    git(root.parent, "clone", "-q", "--bare", str(root), str(remote))
    git(root, "remote", "add", "origin", str(remote))
    git(root, "fetch", "-q", "origin")
    git(root, "remote", "set-head", "origin", "main")  # a symbolic ref, as a clone has
    return gone


def history(root) -> list[tuple[bytes, bytes]]:
    """Every commit of every ref but the new erasure record (dated by the erase itself), oldest first:
    its bytes (tree, parents, author, committer, message) and its tree's listing."""
    refs = [ref for ref in git(root, "for-each-ref", "--format=%(refname)").decode().split()
            if ref != "refs/heads/main"]
    commits = git(root, "rev-list", "--topo-order", "--reverse", "HEAD^", *refs).decode().split()
    return [(git(root, "cat-file", "commit", sha), git(root, "ls-tree", "-r", sha)) for sha in commits]


def work_tree(root) -> list[tuple[str, bytes | None]]:
    """The files (path, bytes) and folders (path, None) of the work tree, but git's and memvault's own."""
    return sorted((str(path.relative_to(root)), path.read_bytes() if path.is_file() else None)
                  for path in root.rglob("*") if path.relative_to(root).parts[0] not in (".git", ".memvault"))


def test_the_rewrite_in_process_makes_what_filter_repo_makes(tmp_path, rewrites):
    root = tmp_path / "a" / "vault"
    m = open_vault(root)
    gone = planted_history(root, m)
    m.close()
    assert rewrites == ["in process"]  # the earlier erase's
    other = tmp_path / "b"
    shutil.copytree(root.parent, other, symlinks=True)
    results = []
    for where, forced in ((root, False), (other / "vault", True)):
        if forced:
            rewrites.append("force")
        m = open_vault(where)
        results.append(m.erase(ids=[gone.id]))
        m.close()
    assert rewrites == ["in process", "in process", "force", "filter-repo"]
    ours, theirs = history(root), history(other / "vault")
    assert len(ours) == len(theirs)
    for (commit, listing), (expected, expected_listing) in zip(ours, theirs, strict=True):
        assert (commit.decode(), listing.decode()) == (expected.decode(), expected_listing.decode())
    assert results[0].rewritten == results[1].rewritten > 0
    for name in ("commit-map", "remote-heads.json"):  # the old ids mapped (pruned ones to none), the remote's kept
        assert (root / ".memvault" / name).read_bytes() == (other / "vault" / ".memvault" / name).read_bytes()
    assert git(root, "for-each-ref", "refs/remotes") == b""
    for text in ("K-55-ALPHA-991", "K-77-BRAVO-112", gone.id):
        assert leftovers(root, text) == [], text
    assert git(root, "status", "--porcelain") == b""  # git's index follows HEAD
    assert work_tree(root) == work_tree(other / "vault")
    assert b"Erased-" in git(root, "log", "--format=%B", "--grep", "Temporary", "--grep", "erase:", "HEAD^")


@pytest.mark.parametrize("oddity", ["a merge", "an annotated tag on a rewritten commit"])
def test_history_it_does_not_handle_is_left_to_filter_repo(tmp_path, rewrites, oddity):
    root = tmp_path / "vault"
    m = open_vault(root)
    m.add_verbatim("Older note about the harbour.", conversation="c")
    gone = m.add_verbatim(PASSPORT, conversation="c")
    if oddity == "a merge":
        git(root, "checkout", "-q", "-b", "side", "HEAD^")
        hand_commit(root, "notes/side.md", "A note on a side branch.\n", "side note")
        git(root, "checkout", "-q", "main")
        git(root, "-c", "user.name=me", "-c", "user.email=me@x", "merge", "-q", "--no-ff", "-m", "merged", "side")
    else:
        git(root, "-c", "user.name=me", "-c", "user.email=me@x", "tag", "-a", "-m", "a release", "release")
    m.add_verbatim("Frank likes sailing on Sundays.", conversation="c")
    m.erase(ids=[gone.id])
    m.close()
    assert rewrites == ["filter-repo"]
    assert leftovers(root, "K-55-ALPHA-991") == []
    if oddity == "a merge":
        merges = git(root, "rev-list", "--merges", "HEAD").split()
        assert len(merges) == 1 and (root / "notes" / "side.md").exists()
    else:
        assert git(root, "cat-file", "-t", "release").strip() == b"tag"


def test_what_it_refuses_it_refuses_before_moving_any_ref(tmp_path):
    """A merge in the range, met midway: no ref has moved, the history is as it was."""
    root = tmp_path / "vault"
    m = open_vault(root)
    gone = m.add_verbatim(PASSPORT, conversation="c")
    git(root, "checkout", "-q", "-b", "side")
    hand_commit(root, "notes/side.md", "A note on a side branch.\n", "side note")
    git(root, "checkout", "-q", "main")
    hand_commit(root, "notes/main.md", "A note on main.\n", "main note")
    git(root, "-c", "user.name=me", "-c", "user.email=me@x", "merge", "-q", "--no-ff", "-m", "merged", "side")
    selection = erase.select(root, erase.Criteria(ids=(gone.id,)))
    refs = git(root, "for-each-ref")
    edits = tree_rewrite.Edits(paths=selection.paths, drop=selection.removed, replace={},
                               touched=selection.removed_at, scrubber=selection.scrubber())
    with pytest.raises(tree_rewrite.NotForUs, match="a merge commit"):
        tree_rewrite.rewrite(root, edits, [])
    assert git(root, "for-each-ref") == refs
    m.close()


class Killed(BaseException):
    """A kill, as far as the erase can tell: nothing after it runs."""


def test_a_kill_before_git_s_index_follows_head_is_finished_by_doctor_fix(tmp_path, monkeypatch):
    """The refs moved, git's index and the work tree not yet: `doctor --fix` puts the erased file out of
    both (the index first: had the work tree gone first, the index would keep the erased blob alive)."""
    from tests.support.cli import run_memvault

    root = tmp_path / "vault"
    m = open_vault(root)
    m.add_verbatim("Older note about the harbour.", conversation="c")
    gone = m.add_verbatim(PASSPORT, conversation="c")
    kept = m.add_verbatim("Frank likes sailing on Sundays.", conversation="c")

    def killed(*_args):
        raise Killed

    monkeypatch.setattr(tree_rewrite, "update_index", killed)
    with pytest.raises(Killed):
        m.erase(ids=[gone.id])
    m.close()
    assert leftovers(root, "K-55-ALPHA-991")
    fixed = run_memvault("doctor", "--vault", str(root), "--fix", timeout=300)
    assert b"finished the erase a crash cut short" in fixed.stdout + fixed.stderr, fixed.stdout + fixed.stderr
    assert leftovers(root, "K-55-ALPHA-991") == []
    assert git(root, "status", "--porcelain") == b""
    m = open_vault(root)
    assert m.get(kept.id)[1].text == "Frank likes sailing on Sundays."
    m.close()
