"""The history rewrite of `memvault erase`, run by git-filter-repo in a child process (filter-repo works
in its current directory, which a server's threads share; and it exits on error). `vault/erase.py`
starts it with `python -m memvault.vault.history_filter` in the repository and the plan as JSON on
stdin (never in a file: it holds what is being erased):

    {"paths": [...], "drop_blobs": [...], "ids": [...], "texts": [...], "patterns": [...]}

In every commit: files at `paths` and blobs in `drop_blobs` are dropped; every other blob and every
commit message loses the sentences quoting `texts` or matching `patterns` (`erase.scrub`); a commit
whose trailers name an erased id gets a neutral subject (memvault's subjects quote the memory).
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    import git_filter_repo as fr

    from memvault.vault.erase import Scrubber

    plan = json.loads(sys.stdin.read())
    paths = {p.encode() for p in plan["paths"]}
    drop = {h.encode() for h in plan["drop_blobs"]}
    ids = [i.encode() for i in plan["ids"]]
    scrubber = Scrubber(plan["texts"], plan["patterns"])

    def blob_callback(blob, _metadata) -> None:
        if blob.original_id in drop:
            blob.skip()
            return
        blob.data = scrubber.scrub_bytes(blob.data)

    def commit_callback(commit, _metadata) -> None:
        commit.file_changes = [c for c in commit.file_changes if c.filename not in paths]
        message = scrubber.scrub_bytes(commit.message)
        if any(b" " + memory_id in message for memory_id in ids):
            subject, _, rest = message.partition(b"\n")
            message = b"memvault: a change to an erased memory\n" + rest
        commit.message = message

    # --sensitive-data-removal --no-fetch: keeps the origin remote (a plain run removes it), fetches nothing.
    args = fr.FilteringOptions.parse_args(["--force", "--quiet", "--no-gc", "--replace-refs", "delete-no-add",
                                           "--sensitive-data-removal", "--no-fetch"])
    fr.RepoFilter(args, blob_callback=blob_callback, commit_callback=commit_callback).run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
