"""Checks of the vault's files and git (each only looks: nothing is written). They read the vault
beneath the facade on purpose: doctor's job is to see what the facade would mend or hide."""

from __future__ import annotations

from typing import Any

from memvault.core.repairing import uncommitted_entry_files, wrong_triples
from memvault.doctor.report import (
    ADOPT,
    CLEAN,
    COMMIT,
    ERASE,
    FAIL,
    OK,
    RECOVER,
    RELAYOUT,
    REQUEUE,
    TRIPLES,
    UNLOCK,
    WARN,
    Check,
    listed,
)
from memvault.errors import EntryFormatError, MemvaultError, VaultError
from memvault.settings import Settings
from memvault.vault.format import layout


def open_vault(settings: Settings) -> tuple[Any, Check]:
    from memvault.vault.write.store import Vault

    try:
        vault = Vault.open(settings.vault.path)
    except MemvaultError as exc:
        return None, Check("vault", FAIL, str(exc), fix=f"memvault init --vault {settings.vault.path}")
    return vault, Check("vault", OK, str(vault.root))


def check_git_state(vault) -> Check:
    try:
        vault.git.check_state()
    except VaultError as exc:
        return Check("git state", FAIL, str(exc), fix="finish or abort it in the vault's repository, then re-run")
    branch = vault.git.repo.active_branch.name
    return Check("git state", OK, f"on branch {branch} of {vault.git.describe()}")


def check_git_locks(vault) -> Check:
    """Lock files a killed git left in the repository: every later commit would fail on them."""
    from memvault.vault.git.errors import lock_advice

    locks = vault.git.lock_files()
    if not locks:
        return Check("git locks", OK, "no git lock files")
    stale = vault.git.stale_locks()
    if stale:
        return Check("git locks", WARN, f"{len(stale)} lock file(s) no running git holds: {listed(map(str, stale))}",
                     fix="--fix removes them (memvault also does before its next commit)", repair=UNLOCK,
                     paths=[str(p) for p in stale])
    return Check("git locks", WARN, lock_advice(locks[0], vault.git.lock_holders()),
                 fix="wait for the running git to finish", paths=[str(p) for p in locks])


def check_interrupted_write(vault) -> Check:
    """A transaction a crash cut short (its intent file is still there): the next write undoes it."""
    if not vault.intent_path.exists():
        return Check("interrupted write", OK, "no write was cut short")
    return Check("interrupted write", WARN, f"a write was cut short by a crash ({vault.intent_path}): the next "
                 "write undoes what it left uncommitted", fix="--fix does it now", repair=RECOVER)


def check_interrupted_erase(vault) -> Check:
    """An erase a kill cut short after its history rewrite: what it erased may still be in git's
    objects and the index until it is finished."""
    from memvault.vault.forget import intent as erase_intent

    if erase_intent.pending(vault.state_dir) is None:
        return Check("interrupted erase", OK, "no erase was cut short")
    return Check("interrupted erase", WARN, "an erase was cut short by a crash: what it erased may still be in git's "
                 "objects and the index", fix="--fix finishes it (so does the next `memvault erase`)", repair=ERASE)


def check_sync(vault) -> Check:
    """What `memvault sync` left for a person: core files where two devices changed the same lines
    (both versions kept under a heading), and a sync a crash cut short (the next sync finishes it)."""
    from memvault.vault.devices.merge import KEPT_BOTH
    from memvault.vault.devices.resume import ADOPTING, INTENT

    if (vault.state_dir / ADOPTING).exists():
        return Check("sync", WARN, "a sync adopting the history an erase rewrote was cut short by a crash (what "
                     "was erased may still be in this clone's git objects)", repair=ADOPT,
                     fix="--fix finishes it here (a push it owes waits for `memvault sync`), as `memvault sync` does")
    kept = [f"{layout.CORE_DIR}/{path.name}" for path in sorted((vault.root / layout.CORE_DIR).glob("*.md"))
            if path.is_file() and not path.is_symlink()
            and KEPT_BOTH in path.read_text(encoding="utf-8", errors="replace")]
    if kept:
        return Check("sync", WARN, f"both versions kept by a sync in {listed(kept)}: two devices changed the same "
                     "lines", fix="choose: memvault doctor --fix --kept-both=ours|theirs|both, or per file "
                     "memvault resolve NAME --keep ours|theirs|both|1|2 (or edit it: memvault core edit NAME)",
                     paths=kept)
    if (vault.state_dir / INTENT).exists():
        return Check("sync", WARN, "a sync was cut short by a crash", fix="run `memvault sync`: it finishes it")
    return Check("sync", OK, "nothing left by a sync")


def check_temp_files(vault) -> Check:
    """Atomic-write temporary files a crash left (never entries themselves): those a minute old are
    removed by --fix; a younger one may be a write under way, so it is named and left for a minute."""
    from memvault.vault.format.atomic import STALE_TEMP_AGE

    every = vault.temp_files()
    if not every:
        return Check("temporary files", OK, "no temporary files left by a crash")
    old = vault.temp_files(older_than=STALE_TEMP_AGE)
    young = [p for p in every if p not in old]
    detail = f"{len(old)} left by a crash: {listed([str(p) for p in old])}" if old else ""
    if young:
        detail += ("; " if detail else "") + (f"{len(young)} younger than {STALE_TEMP_AGE:g} s (a write under way, "
                                              f"or a crash just now): {listed([str(p) for p in young])}")
    fix = "--fix removes them (so does the next `memvault serve`)" if old else ""
    if young:
        fix += ("; " if fix else "") + f"run `memvault doctor --fix` again in {STALE_TEMP_AGE:g} s for the younger ones"
    return Check("temporary files", WARN, detail, fix=fix, repair=CLEAN if old else None, paths=[str(p) for p in old])


def check_curation_queue(vault) -> Check:
    """Chat turns whose curation failed again and again (poison): queued, but not tried by themselves."""
    from memvault.curate.queue import CurationQueue

    queue = CurationQueue(vault.state_dir)
    poison = queue.poisoned()
    if not poison:
        return Check("curation queue", OK, f"{len(queue.pending())} turn(s) waiting for curation, none failing")
    reasons = {record["turn"]: record.get("error", "") for record in poison}
    return Check("curation queue", WARN, f"{len(poison)} turn(s) whose curation failed {poison[0]['failures']} "
                 f"times: {listed(reasons, reasons)}", fix="mend the cause, then --fix queues them again for the next "
                 "`memvault serve`", repair=REQUEUE, paths=list(reasons))


def check_uncommitted(vault) -> Check:
    safe, left = uncommitted_entry_files(vault)
    if not safe and not left:
        return Check("uncommitted files", OK, "every vault file is committed")
    parts = []
    if safe:
        parts.append(f"{len(safe)} entry file(s) that parse: {listed(safe)}")
    if left:
        parts.append(f"{len(left)} left for you: {listed(sorted(left), left)}")
    fixes = []
    if safe:
        fixes.append("--fix commits the entry files that parse")
    if left:
        fixes.append("commit or restore the others with git in the vault (`git status`)")
    return Check("uncommitted files", WARN, "; ".join(parts), fix="; ".join(fixes), repair=COMMIT if safe else None,
                 paths=safe)


def check_entry_files(vault) -> tuple[Check, Check]:
    """(files that fail to parse, tombstones whose replaced_by names no memory), in one pass."""
    broken: dict[str, str] = {}
    ids: set[str] = set()
    tombstones: list[tuple[str, Any]] = []
    count = 0
    for rel, item in vault.iter_entries(include_deleted=True):
        count += 1
        if isinstance(item, EntryFormatError):
            broken[str(rel)] = item.reason
            continue
        ids.add(item.id)
        if item.deleted and item.replaced_by:
            tombstones.append((str(rel), item))
    if broken:
        files = Check("entry files", FAIL, f"{len(broken)} of {count} do not parse: {listed(sorted(broken), broken)}",
                      fix="correct the front matter by hand ($EDITOR); memvault never rewrites a broken file",
                      paths=sorted(broken))
    else:
        files = Check("entry files", OK, f"{count} file(s) parse")
    dangling = [(rel, e) for rel, e in tombstones if e.replaced_by not in ids]
    if dangling:
        detail = f"{len(dangling)} tombstone(s) name a replacement that is not in the vault: " + listed(
            [rel for rel, _ in dangling], {rel: f"replaced_by {e.replaced_by[:8]}" for rel, e in dangling})
        tomb = Check("tombstones", WARN, detail, fix="nothing is lost (the tombstone keeps the old text); "
                     "`memvault history ID` shows what happened", paths=[rel for rel, _ in dangling])
    else:
        tomb = Check("tombstones", OK, f"{len(tombstones)} replaced_by link(s) resolve")
    return files, tomb


def check_layout(vault) -> Check:
    """Entry files of a vault made before day folders, not moved yet (`init` and `sync` move them): each
    commit rewrites the tree of the folder holding them, so an add slows as it grows."""
    from memvault.vault.write.relayout import found_moves

    waiting = sorted(found_moves(vault, {}))
    if not waiting:
        return Check("layout", OK, "facts, turns and sessions are in their day folders")
    return Check("layout", WARN, f"{len(waiting)} entry file(s) still in their kind folder itself (a vault made "
                 f"before day folders): {listed(waiting)}", fix="`memvault doctor --fix` or `memvault init` moves "
                 "them in one commit of renames (history and --as-of read across it)", repair=RELAYOUT, paths=waiting)


def check_stray_files(vault) -> Check:
    """Markdown under entries/ that no reindex reads (entries/notes/x.md): a person's file, not lost, not indexed."""
    stray = [str(rel) for rel in vault.stray_files()]
    if not stray:
        return Check("stray files", OK, "every markdown file under entries/ is where memvault reads it")
    return Check("stray files", WARN, f"{len(stray)} file(s) under entries/ are never indexed: {listed(stray)}",
                 fix=f"move each into entries/<conversation>/{{{', '.join(layout.KIND_DIRS.values())}}}/ "
                     "(a fact: facts/), or out of entries/", paths=stray)


def check_triples(vault) -> Check:
    wrong = wrong_triples(vault)
    if not wrong:
        return Check("triples", OK, "every fact's triple is drawn from its text")
    return Check("triples", WARN, f"{len(wrong)} fact(s) carry a triple their text does not say: "
                 + listed([rel for rel, _, _ in wrong], {rel: why for rel, _, why in wrong}),
                 fix="memvault doctor --fix (drops those triples, keeps the texts)", repair=TRIPLES,
                 paths=[rel for rel, _, _ in wrong])


