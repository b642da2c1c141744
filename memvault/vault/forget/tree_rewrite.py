"""The erase's history rewrite done in this process, for the history it handles surely (a linear one:
`vault/forget/erase.py` `rewrite` falls back to git-filter-repo on `NotForUs`).

filter-repo has fast-import rebuild every rewritten commit's whole tree: at a million memories, 41 s
for 81 commits. Here each commit of the range (oldest first) gets its trees rewritten only along the
paths the erase touches (the erased memories' paths, every path their blobs had, the quoting files'),
as `vault/git/fastcommit.py` writes an add's; the rest of its tree is the old one, by id. The result
is filter-repo's, commit for commit (tests/test_erase_tree_rewrite.py compares the two):
- a path's new value is filter-repo's file change: none at an erased path; the new parent's where the
  commit did not change the path, or changed it to a dropped blob; the scrubbed blob for a quoting one;
- the message is cleaned (`history_filter.cleaned_message`); author, committer, dates and the other
  headers are copied byte for byte, but a rewritten commit's signature, which no longer holds;
- a commit left empty (its tree its new parent's) is pruned, and one empty from birth whose parent was
  pruned, as filter-repo prunes them; never an erasure record (`history_filter.KeepingRecords`);
- a commit whose tree, message and parent stay keeps its id;
- every ref on a rewritten commit moves (one atomic `update-ref --stdin`; deleted when nothing is
  left of its history), then the work tree and git's index follow HEAD at the changed paths alone
  (filter-repo's `reset --hard` stats a million files and writes the whole index: 9 s).
What it does not handle surely raises NotForUs before any ref moves: a merge in the range, an annotated
tag on a rewritten commit, replace refs, grafts, a shallow clone, a detached HEAD, an encoding or other
header than tree, parent, author, committer and signatures.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from memvault.vault.forget.history_filter import RECORD_MARK, cleaned_message
from memvault.vault.forget.scrub import Scrubber
from memvault.vault.format.atomic import atomic_write
from memvault.vault.git.fastcommit import update_index
from memvault.vault.git.objects import FILE, TREE, TreeConflict, read_tree, rewrite_tree, store, write_tree
from memvault.vault.git.repository import VaultGit

NO_SHA = "0" * 40  # filter-repo's commit map names a pruned commit's new id so
COPIED_HEADERS = (b"author", b"committer")
SIGNATURES = (b"gpgsig", b"gpgsig-sha256")  # a rewritten commit's no longer holds: dropped, as filter-repo does
LEAF = b""  # in a trie of paths: the path itself (a name is never empty)
EMPTY_TREE = bytes.fromhex("4b825dc642cb6eb9a060e54bf8d69288fbee4904")

Value = tuple[bytes, bytes]  # (mode, binary sha) of a file in a tree
Parts = tuple[bytes, ...]


class NotForUs(Exception):
    """History this rewrite does not handle surely: filter-repo rewrites it."""


@dataclass
class Edits:
    """What the rewrite does to each commit (hex blob ids, repository paths)."""

    paths: set[str]  # removed from every commit
    drop: set[str]  # blobs removed wherever they are
    replace: dict[str, str]  # blob -> its scrubbed version (written beforehand)
    touched: set[str]  # every path where any of those may be: the only ones read
    scrubber: Scrubber
    ids: list[bytes] = field(default_factory=list)  # erased ids (a message naming one gets a neutral subject)


@dataclass
class Commit:
    tree: bytes  # binary sha
    headers: list[bytes]  # every header line but tree and parent (a signature's continuation lines in it)
    message: bytes
    has_message: bool


def rewrite(root: Path, edits: Edits, revisions: list[str]) -> dict[str, str]:
    """Rewrite the commits `revisions` name (rev-list's: refs, less '^<commit>' kept as they are) and
    move the refs; old -> new id of each commit whose id changed (NO_SHA: pruned), as filter-repo's map."""
    git = VaultGit.open(root)
    try:
        check_history(git)
        rewriter = Rewriter(git, edits)
        for sha, parents in commits_oldest_first(git, revisions):
            rewriter.commit(sha, parents)
        head = git.head_sha()
        new_head = rewriter.moved_to.get(head, head) if head else None
        if head and new_head is None:
            raise NotForUs("nothing is left of HEAD's history")
        move_refs(git, rewriter.moved_to)
        if head != new_head:
            follow_head(git, rewriter, head, new_head)
        return rewriter.commit_map
    finally:
        git.close()


def check_history(git: VaultGit) -> None:
    """NotForUs for what changes which history git shows or where HEAD is, beside the refs themselves."""
    git_dir = git.root / ".git"
    if not git_dir.is_dir():
        raise NotForUs("the repository's git folder is elsewhere")
    for odd in ("info/grafts", "shallow"):
        if (git_dir / odd).exists():
            raise NotForUs(f"the repository has .git/{odd}")
    if not (git_dir / "HEAD").read_bytes().startswith(b"ref:"):
        raise NotForUs("HEAD is detached")
    if git.run("for-each-ref", "--count=1", "refs/replace/").strip():
        raise NotForUs("the repository has replace refs")


def commits_oldest_first(git: VaultGit, revisions: list[str]) -> list[tuple[str, list[str]]]:
    listed = git.run("rev-list", "--topo-order", "--reverse", "--parents", *(revisions or ["--all"]))
    rows = [line.split() for line in listed.splitlines() if line]
    return [(row[0], row[1:]) for row in rows]


class Rewriter:
    """The commits of the range rewritten one after the other, each after its parent."""

    def __init__(self, git: VaultGit, edits: Edits) -> None:
        self.git, self.edits = git, edits
        self.trie = trie(edits.touched)
        self.touched = [split(path) for path in sorted(edits.touched)]
        self.erased = {split(path) for path in edits.paths}
        self.drop = {bytes.fromhex(blob) for blob in edits.drop}
        self.replace = {bytes.fromhex(old): bytes.fromhex(new) for old, new in edits.replace.items()}
        self.moved_to: dict[str, str | None] = {}  # old commit -> new (itself: unchanged; a pruned one's
        self.commit_map: dict[str, str] = {}  # parent's; None: nothing left), and filter-repo's map
        self.pruned: set[str] = set()
        self.found: dict[tuple[bytes, int], dict[Parts, Value]] = {}  # (tree, trie node) -> values under it
        self.trees: dict[str, bytes] = {}  # commit -> tree (binary sha), of the old and the new commits

    def commit(self, sha: str, parents: list[str]) -> None:
        if len(parents) > 1:
            raise NotForUs(f"a merge commit ({sha[:12]}) in the range")
        old = parse_commit(self.git.read_object(bytes.fromhex(sha)))
        self.trees[sha] = old.tree
        parent = parents[0] if parents else None
        new_parent = self.moved_to.get(parent, parent) if parent else None
        new_tree = self.new_tree(old.tree, parent, new_parent)
        message = cleaned_message(old.message, self.edits.scrubber, self.edits.ids)
        if self.prunable(old.tree, new_tree, parent, new_parent, message):
            self.moved_to[sha] = new_parent
            self.pruned.add(sha)
            self.commit_map[sha] = NO_SHA
            return
        if (new_tree, message, new_parent) == (old.tree, old.message, parent):
            self.moved_to[sha] = sha
            return
        new = store(self.git, b"commit", commit_bytes(old, new_tree, new_parent, message)).hex()
        self.trees[new] = new_tree
        self.moved_to[sha] = self.commit_map[sha] = new

    def prunable(self, old_tree: bytes, new_tree: bytes, parent: str | None, new_parent: str | None,
                 message: bytes) -> bool:
        """filter-repo's test (RepoFilter._prunable, for one parent or none): a commit that changed
        files and now changes none, or one that changed none whose parent was pruned; never a record."""
        if RECORD_MARK in message:
            return False
        if old_tree == (self.tree(parent) if parent else EMPTY_TREE):  # empty from birth
            return parent in self.pruned
        return new_tree == (self.tree(new_parent) if new_parent else EMPTY_TREE)

    def tree(self, commit: str) -> bytes:
        if commit not in self.trees:
            self.trees[commit] = self.git.tree_of(commit)
        return self.trees[commit]

    def new_tree(self, tree: bytes, parent: str | None, new_parent: str | None) -> bytes:
        """The commit's tree as filter-repo would make it from its file changes against `parent`."""
        here = self.values(tree)
        before = self.values(self.tree(parent)) if parent else {}
        inherited = self.values(self.tree(new_parent)) if new_parent else {}
        changes: dict[Parts, Value | None] = {}
        for parts in self.touched:
            value = here.get(parts)
            if parts in self.erased:
                new = None
            elif value == before.get(parts) or (value is not None and value[1] in self.drop):
                new = inherited.get(parts)  # no change here (or its change dropped): the new parent's file
            elif value is not None and value[1] in self.replace:
                new = (value[0], self.replace[value[1]])
            else:
                new = value
            if new != value:
                changes[parts] = new
        if not changes:
            return tree
        try:
            new_tree = rewrite_tree(self.git, tree, changes) or write_tree(self.git, {})
        except TreeConflict as exc:  # a file where a folder was, or the other way round
            raise NotForUs(str(exc)) from None
        values = {**here, **changes}
        self.found[(new_tree, id(self.trie))] = {parts: value for parts, value in values.items() if value is not None}
        return new_tree

    def values(self, tree: bytes) -> dict[Parts, Value]:
        return self.under(tree, self.trie)

    def under(self, tree: bytes, node: dict) -> dict[Parts, Value]:
        """The files at the trie's paths below `tree` (by path parts relative to it), each tree read once."""
        key = (tree, id(node))
        if key not in self.found:
            values: dict[Parts, Value] = {}
            for name, (mode, sha) in read_tree(self.git, tree).items():
                inner = node.get(name)
                if inner is None:
                    continue
                if mode == TREE and inner.keys() - {LEAF}:
                    values.update({(name, *parts): value for parts, value in self.under(sha, inner).items()})
                elif LEAF in inner:
                    values[(name,)] = (mode, sha)
            self.found[key] = values
        return self.found[key]


def trie(paths: Iterable[str]) -> dict:
    root: dict = {}
    for path in paths:
        node = root
        for part in split(path):
            node = node.setdefault(part, {})
        node[LEAF] = {}
    return root


def split(path: str) -> Parts:
    return tuple(part.encode("utf-8", "surrogateescape") for part in path.split("/"))


def parse_commit(raw: bytes) -> Commit:
    head, separator, message = raw.partition(b"\n\n")
    lines = head.split(b"\n")
    tree, headers = b"", []
    for line in lines:
        if line.startswith(b" ") and headers:  # a continuation of the header before (a signature's)
            headers[-1] += b"\n" + line
            continue
        name, _, value = line.partition(b" ")
        if name == b"tree":
            tree = bytes.fromhex(value.decode())
        elif name == b"parent":
            continue  # rev-list's parents are the ones rewritten (no graft or replace ref: check_history)
        elif name in COPIED_HEADERS or name in SIGNATURES:
            headers.append(line)
        else:
            raise NotForUs(f"a commit header this does not copy ({name.decode(errors='replace')})")
    return Commit(tree, headers, message, bool(separator))


def commit_bytes(old: Commit, tree: bytes, parent: str | None, message: bytes) -> bytes:
    headers = [b"tree " + tree.hex().encode(), *([b"parent " + parent.encode()] if parent else []),
               *(h for h in old.headers if h.split(b" ", 1)[0] not in SIGNATURES)]
    return b"\n".join(headers) + b"\n" + (b"\n" + message if old.has_message else b"")


def move_refs(git: VaultGit, moved_to: dict[str, str | None]) -> None:
    """Every ref on a commit that changed id moves to its new one (deleted: nothing of its history is
    left), in one transaction; an annotated tag on one is filter-repo's to rewrite."""
    listed = git.run("for-each-ref", "--format=%(objectname) %(objecttype) %(*objectname) %(symref) %(refname)")
    if "\ufffd" in listed:
        raise NotForUs("a ref's name is not UTF-8")
    commands = []
    for line in listed.splitlines():
        sha, kind, peeled, symref, ref = line.split(" ", 4)  # `peeled` is empty but for an annotated tag
        target = peeled if kind == "tag" else sha
        if symref or moved_to.get(target, target) == target:  # a symbolic ref (origin/HEAD) follows its own
            continue
        if kind != "commit":
            raise NotForUs(f"{ref} is an annotated tag on a rewritten commit")
        new = moved_to[target]
        commands.append(f"update {ref} {new} {sha}\n" if new else f"delete {ref} {sha}\n")
    if commands:
        git.run("update-ref", "--stdin", input="".join(commands))  # all or none


def follow_head(git: VaultGit, rewriter: Rewriter, old: str, new: str) -> None:
    """The work tree and git's index move from HEAD's old commit to its new one at the paths the rewrite
    changed, as `reset --hard` would (it stats every file and writes the whole index: 9 s at a million);
    the index first, so that a kill between leaves erased bytes only where `erase.put_back_erased_files`
    finds them (a work-tree file whose bytes are an erased blob). The erase started from a clean work tree."""
    before, after = rewriter.values(rewriter.tree(old)), rewriter.values(rewriter.tree(new))
    changed = {"/".join(part.decode("utf-8", "surrogateescape") for part in parts): after.get(parts)
               for parts in before.keys() | after.keys() if before.get(parts) != after.get(parts)}
    if any(value is not None and value[0] != FILE for value in changed.values()):
        git.run("reset", "-q", "--hard")  # an executable file or a link: git's to write
        return
    update_index(git, {path: value[1] if value else None for path, value in changed.items()})
    for path, value in changed.items():
        file = git.work_dir / path
        if value is None:
            file.unlink(missing_ok=True)
            for folder in file.parents:  # git keeps no empty folder
                if folder == git.work_dir or any(folder.iterdir()):
                    break
                folder.rmdir()
        else:
            file.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(file, git.read_object(value[1]))

