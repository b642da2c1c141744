"""One commit of exactly some paths, written in this process: a write costs what it touches.

`git commit --only <paths>` builds a temporary index from HEAD's whole tree and refreshes the real
one (an lstat per file), and `add` + `write-tree` still read and rewrite git's whole index: on a
vault of 10k memories that was 46 ms of git CPU and 10 git processes an add. Here, as git would:
- the changed files' blobs and the trees on their paths are written as loose objects
  (vault.git.objects; HEAD's other trees are never read), then the commit object (its author,
  committer and date as `git commit-tree` writes them: vault.git.identity);
- git's index is set to the new blobs for these paths alone, so that a person's `git status` shows
  nothing staged or untracked (the entries carry no stat data: their next `git status` re-hashes
  these few files once). A large index is made split (`--split-index`, kept by later gits) and its
  small part is rewritten here (vault.git.split_index): a million memories are not read for an add;
- the branch moves only if HEAD is still where we started (compare-and-swap under git's locks, both
  reflogs written: vault.git.refs): a commit anyone made meanwhile is never overwritten.
Where git must decide (a date in the environment, a lock held, an index this does not rewrite), the
step is git's own: `commit-tree`, `update-index --index-info`, `update-ref HEAD <new> <old>`.
The index is written before the ref, as `git add` before `git commit` did: a crash between them
leaves the index ahead of HEAD, which the next writer's recovery puts back (`unstage_paths`).
The caller falls back to `add` + `commit --only` when this path does not apply (NotForUs).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from memvault.errors import VaultError
from memvault.vault.format import layout
from memvault.vault.git import split_index
from memvault.vault.git.identity import signature
from memvault.vault.git.objects import FILE, TreeConflict, rewrite_tree, store, write_tree
from memvault.vault.git.refs import move_branch

# `git` below is a memvault.vault.git.repository.VaultGit, which calls this module: not imported, so that the two
# modules do not import each other.
SPLIT_INDEX_BYTES = 1 << 20  # an index this large (about 7,000 files) is made split
NO_SHA = "0" * 40
# Attributes that make `git add` store other bytes than the file's (filters, line endings, ident):
# where the repository sets any, the blob is git's to make, not ours.
CONVERTING = re.compile(rb"\b(filter|eol|text|ident|working-tree-encoding)\b")


class NotForUs(Exception):
    """The fast path does not apply (no commit yet, converting attributes, a folder where a file
    goes, or HEAD moved meanwhile)."""


def commit_paths(git: Any, repo_paths: list[str], message: str) -> str | None:
    """Commit the work tree's bytes of `repo_paths` (a missing file is removed) on HEAD, and nothing
    else; the new commit's sha, None when the paths hold what HEAD holds. Raises NotForUs before
    touching git's index or refs when this path does not apply, or when HEAD moved meanwhile."""
    head = git.head_sha()  # read from the files: no git process
    if head is None:
        raise NotForUs("no commit yet")
    if converting_attributes(git):
        raise NotForUs("the repository's attributes convert files")
    if may_be_ignored(git, repo_paths) and any_ignored(git, repo_paths):
        raise NotForUs("a path is ignored")  # `git add` refuses it, naming the rule (git_errors.ignored_advice)
    blobs = {path: blob_of(git, git.work_dir / path) for path in repo_paths}
    old_tree = git.tree_of(head)
    try:
        new_tree = rewrite_tree(git, old_tree, {split(path): blob for path, blob in blobs.items()})
    except TreeConflict as exc:
        raise NotForUs(str(exc)) from None
    if new_tree is None:
        new_tree = write_tree(git, {})
    if new_tree == old_tree:
        return None  # a rewrite with the same bytes: nothing to record
    message = clean_message(message)
    commit, committer = write_commit(git, new_tree, head, message)
    update_index(git, blobs)
    reflog = re.sub(r"[ \t\n\r]+", " ", f"commit: {message.split(chr(10), 1)[0]}").strip(" ")  # as git's reflog has it
    if committer is not None and move_branch(git.git_dir, git.common_dir, commit, head, f"{committer}\t{reflog}"):
        return commit
    try:
        git.run("update-ref", "-m", reflog, "HEAD", commit, head)
    except VaultError as exc:
        raise NotForUs(f"HEAD moved meanwhile: {exc}") from None
    return commit


def write_commit(git: Any, tree: bytes, parent: str, message: str) -> tuple[str, str | None]:
    """The commit object of `tree` on `parent`: (its sha, the committer's signature when it was written
    here). Written in this process as git writes it (vault.git.identity); by `git commit-tree` when a
    date in the environment or an unnamed identity is git's to settle."""
    when = int(time.time())
    author, committer = signature(git, "author", when), signature(git, "committer", when)
    if author is not None and committer is not None:
        text = f"tree {tree.hex()}\nparent {parent}\nauthor {author}\ncommitter {committer}\n\n{message}"
        return store(git, b"commit", text.encode("utf-8", "surrogateescape")).hex(), committer
    try:
        return git.run("commit-tree", tree.hex(), "-p", parent, "-F", "-", input=message).strip(), None
    except VaultError as exc:  # named as the commit it is (an identity git refuses, a full disk)
        output = getattr(exc, "output", None)  # a GitFailed carries all git said
        if output is None:
            raise
        raise type(exc)(f"git commit failed: {git.explain(output)}", output) from None


def blob_of(git: Any, path: Path) -> bytes | None:
    """The blob of a work-tree file as `git add` stores it (None: the file is gone)."""
    if path.is_symlink():
        raise NotForUs(f"{path.name} is a symbolic link")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise NotForUs(f"{path.name} is a folder") from None
    return store(git, b"blob", data)


def split(path: str) -> tuple[bytes, ...]:
    return tuple(part.encode("utf-8", "surrogateescape") for part in path.split("/"))


def update_index(git: Any, blobs: dict[str, bytes | None]) -> None:
    """Git's index entries of these paths set to their new blobs (removed for None), no other entry
    touched: the user's own staged changes stay staged. A split index's small part is rewritten here
    (vault.git.split_index); anything else is `git update-index`'s."""
    if split_index.record(Path(git.git_dir), blobs, SPLIT_INDEX_BYTES):
        return
    lines = "".join(f"{FILE.decode()} {blob.hex()}\t{path}\0" if blob is not None else f"0 {NO_SHA}\t{path}\0"
                    for path, blob in blobs.items())
    git.run("update-index", *split_option(git), "-z", "--index-info", input=lines)


def split_option(git: Any) -> list[str]:
    """`--split-index` when git's index is large: a whole index is made split, and the entries a split
    one gathered (a migration's 100k renames) are pushed into a new shared part, so that each later
    write rewrites a small file again. A split part is judged by its entries alone: git's cache tree
    beside them (2 MB at a million files) is no reason to rewrite the shared part."""
    index = Path(git.git_dir) / "index"
    if not index.is_file():
        return []
    part = split_index.entries_bytes(Path(git.git_dir))
    return ["--split-index"] if (index.stat().st_size if part is None else part) > SPLIT_INDEX_BYTES else []


def may_be_ignored(git: Any, repo_paths: list[str]) -> bool:
    """Whether any ignore rule could apply to these paths: a .gitignore in a folder on their way (but
    the vault's own, which ignores .memvault/ alone), .git/info/exclude with a rule, a global ignore
    file, or a config that names one. Where none can, no `git check-ignore` runs."""
    work_dir = Path(git.work_dir)
    folders = {work_dir / folder for path in repo_paths for folder in (Path(path).parents)}
    for folder in folders:
        ignore = folder / ".gitignore"
        if ignore.exists() and (folder != git.root or rules(ignore) - {layout.GITIGNORE_LINE}):
            return True
    if rules(Path(git.git_dir) / "info" / "exclude"):
        return True
    home = Path.home()
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "git"
    if (xdg / "ignore").exists():
        return True
    configs = [Path(os.environ.get("GIT_CONFIG_GLOBAL") or home / ".gitconfig"), xdg / "config",
               Path(git.common_dir) / "config", Path("/etc/gitconfig")]
    return any(b"excludesfile" in read_bytes(config).lower() for config in configs)


def rules(path: Path) -> set[str]:
    """The rule lines of an ignore file (no blank or comment lines)."""
    lines = read_bytes(path).decode("utf-8", "replace").splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def any_ignored(git: Any, repo_paths: list[str]) -> bool:
    """Whether git ignores any of these paths (tracked or not: `--no-index` leaves git's index unread)."""
    from memvault.vault.git.process import run_git

    # Not git.run: check-ignore takes no --literal-pathspecs (its stdin paths are literal anyway).
    done = run_git(["git", "check-ignore", "--no-index", "--stdin", "-z"], git.work_dir,
                   "\0".join(repo_paths) + "\0", {})
    return done.returncode != 1  # 0: some are ignored; an error: let `git add` tell


def converting_attributes(git: Any) -> bool:
    """Whether .gitattributes (at the top of the work tree) or .git/info/attributes sets any attribute
    that makes git store other bytes than a file's. memvault's own .gitattributes sets merge drivers
    only; a person's attributes deeper in the tree are taken as not converting (memvault's files are
    LF text either way)."""
    for file in (Path(git.work_dir) / ".gitattributes", Path(git.git_dir) / "info" / "attributes"):
        try:
            text = file.read_bytes()
        except OSError:
            continue
        lines = (line.split(b"#", 1)[0] for line in text.splitlines())
        if any(CONVERTING.search(line) for line in lines):
            return True
    return False


def clean_message(message: str) -> str:
    """The message as `git commit` would store it (trailing spaces and blank-line runs removed, one
    newline at the end), comment lines kept: a memory's text may start with '#'."""
    lines = [line.rstrip() for line in message.strip("\n").split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n") + "\n"
