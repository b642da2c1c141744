"""Merge drivers: how a file two devices changed is merged, by kind, so no sync needs a person.

git runs `python -m memvault.vault.devices.merge KIND %O %A %B %P` (base, ours, theirs, path) for the paths
`.gitattributes` gives a memvault driver; the merged result goes into %A and exit 0 says it is resolved.
A driver never writes conflict markers into a memory:

- entry (facts, turns, rules): the later edit (`updated_at`, ties broken by the text's hash) is the
  file and the other stays in history; a tombstone (soft delete) wins over an edit of the fact.
- summary (`summary.md`, session summaries): both sides' lines kept, marked `resummarize` for the
  next curation; with no LLM that union is the summary.
- core (core/*.md): git's three-way line merge; where both changed the same lines, both versions are
  kept under a KEPT_BOTH heading that `memvault doctor` reports.
- journal (journal/<day>.md): the union of both sides' lines.

Each decision worth a person's eye is appended as a JSON line to $MEMVAULT_MERGE_NOTES (set by
`memvault sync`, which turns them into the merge commit's events). Without that variable (a person's
own `git merge`, `memvault pull`'s rebase, `git stash pop`: sides that may be in no commit) a driver
is git's plain line merge. Both sides are ordered before merging, so two devices merging the same
pair agree.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from memvault.vault.format.gitattributes import DRIVERS

NOTES_VARIABLE = "MEMVAULT_MERGE_NOTES"
RESUMMARIZE = "resummarize"  # front matter key of a summary merged from two devices' versions
KEPT_BOTH = "## Both versions kept by memvault sync"
KEPT_BOTH_END = "<!-- end of both versions: keep what is right, delete the rest and this heading -->"
SIDE_HEADING = "### Version {n}"


def driver_config(python: str | None = None) -> dict[str, str]:
    """The git config keys of every driver, running this interpreter (an absolute path)."""
    python = python or sys.executable
    config = {}
    for name, kind in DRIVERS.items():
        config[f"merge.{name}.name"] = f"memvault {kind} merge"
        config[f"merge.{name}.driver"] = f"{quote(python)} -m memvault.vault.devices.merge {kind} %O %A %B %P"
    return config


def quote(word: str) -> str:
    """A word for the shell git runs drivers with (an interpreter path may hold spaces)."""
    return word if word and all(c.isalnum() or c in "/._-+" for c in word) else "'" + word.replace("'", "'\\''") + "'"


# -- the merges, on text --------------------------------------------------------------------------------
def ordered(a: str, b: str, key) -> tuple[str, str]:
    """The two sides, earlier first by `key` then by the bytes: the same order on every device."""
    return tuple(sorted((a, b), key=lambda side: (key(side), digest(side))))  # type: ignore[return-value]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def parsed(text: str):
    from memvault.vault.format.markdown import parse

    try:
        return parse(text)
    except Exception:  # noqa: BLE001 - a broken side is merged as plain text, never a crash mid-merge
        return None


def merge_entry(base: str | None, ours: str, theirs: str, path: str) -> tuple[str, dict | None]:
    """A fact, turn or rule changed on both sides: one version, and a note when one was set aside."""
    a, b = parsed(ours), parsed(theirs)
    if a is not None and b is not None and a.role in ("summary", "session"):
        return merge_summary(base, ours, theirs, path)
    if a is None or b is None:  # a hand-broken file: keep the one that reads, else the later bytes
        kept = theirs if a is None and b is not None else ours if b is None and a is not None else max(ours, theirs)
        return kept, {"event": "MERGE-KEPT", "path": path, "why": "the other version did not parse"}
    if bool(a.deleted_at) != bool(b.deleted_at):  # a delete on one device is not undone by an edit on another
        kept = ours if a.deleted_at else theirs
        return kept, {"event": "MERGE-DELETE-WINS", "id": a.id, "path": path}
    first, later = ordered(ours, theirs, lambda side: when(parsed(side)))
    lost = parsed(first)
    return later, {"event": "MERGE-KEPT-LATER", "id": a.id, "path": path,
                   "other": " ".join(lost.text.split())[:200], "other_updated_at": str(lost.updated_at)}


def when(entry) -> str:
    moment = entry.deleted_at or entry.updated_at or entry.created_at
    return moment.isoformat() if moment else ""


def merge_summary(base: str | None, ours: str, theirs: str, path: str) -> tuple[str, dict | None]:
    """Both sides' lines, earlier version first; the result is marked for re-summarising."""
    from memvault.vault.format.markdown import render

    a, b = parsed(ours), parsed(theirs)
    if a is None or b is None:
        return union_lines(*ordered(ours, theirs, lambda _: "")), {"event": "MERGE-UNION", "path": path}
    first, later = sorted((a, b), key=lambda e: (when(e), e.hash))
    text = union_lines(first.text, later.text).strip("\n")
    merged = later.replace(text=text, extra={**later.extra, RESUMMARIZE: True},
                           deleted_at=first.deleted_at or later.deleted_at)
    return render(merged), {"event": "MERGE-UNION", "id": later.id, "path": path}


def union_lines(first: str, second: str) -> str:
    """`first`, then each line of `second` it lacks (blank lines kept only as separators)."""
    have = {line for line in first.splitlines() if line.strip()}
    extra = [line for line in second.splitlines() if line.strip() and line not in have]
    text = first.rstrip("\n")
    if extra:
        text += "\n\n" + "\n".join(dict.fromkeys(extra))
    return text + "\n"


def merge_file(base: str, ours: str, theirs: str, union: bool = False) -> tuple[str, bool]:
    """git's three-way line merge: (text, whether it had conflicting hunks). `union` keeps both sides'
    lines of a conflicting hunk instead of marking it."""
    with tempfile.TemporaryDirectory(prefix="memvault-merge-") as folder:
        names = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            (Path(folder) / name).write_text(text, encoding="utf-8", errors="surrogateescape")
            names.append(str(Path(folder) / name))
        args = ["git", "merge-file", "-p", *(["--union"] if union else []), "-L", "ours", "-L", "base", "-L", "theirs",
                *names]
        done = subprocess.run(args, capture_output=True, text=True, encoding="utf-8", errors="surrogateescape")
    if done.returncode < 0 or done.returncode > 127:
        raise RuntimeError(f"git merge-file failed: {done.stderr.strip()}")
    return done.stdout, done.returncode > 0


def merge_core(base: str | None, ours: str, theirs: str, path: str) -> tuple[str, dict | None]:
    """A three-way line merge; hunks both sides changed are kept, both, under the KEPT_BOTH heading."""
    first, second = ordered(ours, theirs, lambda _: "")
    text, clashed = merge_file(base or "", first, second)
    if not clashed:
        return text, None
    return kept_both(text), {"event": "MERGE-KEPT-BOTH", "path": path}


def kept_both(text: str) -> str:
    """git's conflict markers replaced by a heading a person (and doctor) can find, both versions under it."""
    out: list[str] = []
    side: list[str] | None = None
    versions: list[list[str]] = []
    for line in text.splitlines():
        if side is None and line.startswith("<<<<<<< "):
            versions, side = [], []
        elif side is not None and line == "=======":
            versions.append(side)
            side = []
        elif side is not None and line.startswith(">>>>>>> "):
            versions.append(side)
            out += ["", KEPT_BOTH, ""]
            for n, lines in enumerate(versions, 1):
                out += [SIDE_HEADING.format(n=n), "", *lines, ""]
            out += [KEPT_BOTH_END, ""]
            side = None
        elif side is not None:
            side.append(line)
        else:
            out.append(line)
    return "\n".join(out).strip("\n") + "\n"


def merge_journal(base: str | None, ours: str, theirs: str, path: str) -> tuple[str, dict | None]:
    """A day's log written on two devices: every line of both (each list line once)."""
    first, second = ordered(ours, theirs, lambda _: "")
    text, _ = merge_file(base or "", first, second, union=True)
    seen: set[str] = set()
    kept = []
    for line in text.splitlines():
        if line.startswith("- ") and line in seen:
            continue
        seen.add(line)
        kept.append(line)
    return "\n".join(kept) + "\n", {"event": "MERGE-UNION", "path": path}


MERGES = {"entry": merge_entry, "summary": merge_summary, "core": merge_core, "journal": merge_journal}


def merge(kind: str, base: str | None, ours: str, theirs: str, path: str) -> tuple[str, dict | None]:
    """The merge of `kind`; a side that did not change leaves the other as it is, whatever the kind."""
    if ours == theirs or (base is not None and theirs == base):
        return ours, None
    if base is not None and ours == base:
        return theirs, None
    return MERGES[kind](base, ours, theirs, path)


# -- the driver git runs --------------------------------------------------------------------------------
def read(path: str) -> str:
    return Path(path).read_bytes().decode("utf-8", "surrogateescape")


def note(record: dict) -> None:
    """Append a decision to the notes file `memvault sync` reads (when it is the one merging)."""
    target = os.environ.get(NOTES_VARIABLE)
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")


def main(argv: list[str]) -> int:
    """`python -m memvault.vault.devices.merge KIND BASE OURS THEIRS PATH`: the merge in OURS, exit 0."""
    if len(argv) != 5 or argv[0] not in MERGES:
        sys.stderr.write("usage: python -m memvault.vault.devices.merge {entry,summary,core,journal} "
                         "BASE OURS THEIRS PATH\n")
        return 2
    kind, base_file, ours_file, theirs_file, path = argv
    if not os.environ.get(NOTES_VARIABLE):
        # Not `memvault sync`: a person's `git merge`, `memvault pull`'s rebase, or a stash being put
        # back, where "the later edit wins" could drop an edit that is in no commit. git's own merge.
        done = subprocess.run(["git", "merge-file", "-L", "ours", "-L", "base", "-L", "theirs",
                               ours_file, base_file, theirs_file])
        return 0 if done.returncode == 0 else 1
    base = read(base_file) if os.path.getsize(base_file) or kind == "core" else None  # empty: added on both sides
    merged, record = merge(kind, base, read(ours_file), read(theirs_file), path)
    Path(ours_file).write_bytes(merged.encode("utf-8", "surrogateescape"))
    if record:
        note({"kind": kind, **record})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
