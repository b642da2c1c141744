"""The history rewrite of `memvault erase`, run by git-filter-repo in a child process (filter-repo works
in its current directory, which a server's threads share; and it exits on error). `vault/forget/erase.py`
starts it with `python -m memvault.vault.forget.history_filter` in the repository and the plan as JSON on
stdin (never in a file: it holds what is being erased):

    {"paths": [...], "drop_blobs": [...], "replace_blobs": {old: new}, "ids": [...], "texts": [...],
     "patterns": [...], "refs": [...]}

In every commit: files at `paths` and blobs in `drop_blobs` are dropped, blobs in `replace_blobs`
become their scrubbed versions (written beforehand by `erase.scrub_blobs`); commit messages lose the
sentences quoting `texts` or matching `patterns` (`scrub.Scrubber`), and a commit whose trailers name
an erased id gets a neutral subject (memvault's subjects quote the memory). A commit the rewrite leaves
empty is pruned, except an earlier erasure record (empty by birth, and filter-repo would prune it with
the emptied commit before it): the audit trail and the blob list sync reads. No blob passes through
Python: filter-repo then runs fast-export with --no-data (a 5,000-commit vault in seconds).
"""

from __future__ import annotations

import json
import sys

from memvault.vault.git.log import TRAILER_PREFIX

RECORD_MARK = f"\n{TRAILER_PREFIX}Erased-".encode()  # as erasure_record.erased() finds the records


def main() -> int:
    import git_filter_repo as fr

    from memvault.vault.forget.scrub import Scrubber

    class KeepingRecords(fr.RepoFilter):
        def _prunable(self, commit, *args) -> bool:  # filter-repo's own test, but never for a record
            return RECORD_MARK not in commit.message and super()._prunable(commit, *args)

    plan = json.loads(sys.stdin.read())
    paths = {p.encode() for p in plan["paths"]}
    drop = {h.encode() for h in plan["drop_blobs"]}
    replace = {old.encode(): new.encode() for old, new in plan["replace_blobs"].items()}
    ids = [i.encode() for i in plan["ids"]]
    scrubber = Scrubber(plan["texts"], plan["patterns"])

    def commit_callback(commit, _metadata) -> None:
        kept = []
        for change in commit.file_changes:
            if change.filename in paths or (change.type == b"M" and change.blob_id in drop):
                continue
            if change.type == b"M" and change.blob_id in replace:
                change.blob_id = replace[change.blob_id]
            kept.append(change)
        commit.file_changes = kept
        commit.message = cleaned_message(commit.message, scrubber, ids)

    # --sensitive-data-removal --no-fetch: keeps the origin remote (a plain run removes it), fetches nothing.
    # `refs`: every ref, less the commits before the oldest one the erase touches (kept as they are:
    # filter-repo then refers to them by id as the rewritten commits' parents).
    refs = ["--refs", *plan["refs"]] if plan.get("refs") else []
    args = fr.FilteringOptions.parse_args(["--force", "--quiet", "--no-gc", "--replace-refs", "delete-no-add",
                                           "--sensitive-data-removal", "--no-fetch", *refs])
    KeepingRecords(args, commit_callback=commit_callback).run()
    return 0


def cleaned_message(message: bytes, scrubber, ids: list[bytes]) -> bytes:
    """A commit message without the sentences quoting an erased text, and with a neutral subject when
    its trailers name an erased id (memvault's subjects quote the memory)."""
    message = scrubber.scrub_bytes(message)
    if any(b" " + memory_id in message for memory_id in ids):
        _subject, _, rest = message.partition(b"\n")
        message = b"memvault: a change to an erased memory\n" + rest
    return message


if __name__ == "__main__":
    raise SystemExit(main())
