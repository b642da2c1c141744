"""`memvault doctor` as library code: health checks of the vault, its index and the models, and the
fixes that are safe to apply without asking.

Checks only look: the index is opened read-only (IndexStore.open would migrate it, empty it or set
it aside), files are read, nothing is written. `repair` applies only what cannot lose anything:
- remove git lock files no running git holds (a killed git left them), and atomic-write temporary
  files a crash left; undo what a transaction cut short by a crash left uncommitted;
- reindex, or rebuild the index in full (it is derived from the files and disposable);
- drop a fact's triple (subject, predicate, object) that its text does not say (vault.wording), in
  one commit: the text, the truth, is kept; the graph never held the triple;
- commit entry files a crash or a hand edit left uncommitted, but only files that parse, and a
  deleted file only when its memory lives on in another file (moved, or tombstoned in deleted/).
  A broken file is never rewritten or committed, a plain deletion is left for the person to
  restore or commit, and git states such as a detached HEAD or a merge are left to them too.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from memvault.errors import EntryFormatError, MemvaultError, VaultError, first_line
from memvault.settings import Settings
from memvault.vault import layout

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
# --fix actions, in the order they are applied.
UNLOCK, RECOVER, CLEAN, COMMIT, REBUILD, REINDEX = "unlock", "recover", "clean", "commit", "rebuild", "reindex"
REQUEUE = "requeue"
TRIPLES = "triples"
ACTIONS = (UNLOCK, RECOVER, CLEAN, COMMIT, TRIPLES, REBUILD, REINDEX, REQUEUE)
SHOWN_PATHS = 5
LLM_PROBE = [{"role": "user", "content": "Reply with the single word: ok"}]
LLM_PROBE_TIMEOUT = 30.0


@dataclass
class Check:
    """One line of the report. `repair` names the --fix action that resolves it (None: a person must)."""

    name: str
    status: str
    detail: str
    fix: str = ""
    repair: str | None = None
    paths: list[str] = field(default_factory=list)  # files concerned (for --fix and --json)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class Diagnosis:
    checks: list[Check]
    embedder_identity: str | None = None  # None when the embedder did not load

    @property
    def failed(self) -> bool:
        return any(check.status == FAIL for check in self.checks)

    def repairs(self) -> list[str]:
        wanted = {check.repair for check in self.checks if check.repair}
        if REBUILD in wanted:
            wanted.discard(REINDEX)  # a full rebuild covers it
        return [action for action in ACTIONS if action in wanted]

    def to_dict(self) -> dict[str, Any]:
        return {"ok": not self.failed, "checks": [check.to_dict() for check in self.checks]}


def listed(paths, reasons: dict[str, str] | None = None) -> str:
    paths = list(paths)
    shown = [f"{p} ({reasons[p]})" if reasons and p in reasons else p for p in paths[:SHOWN_PATHS]]
    more = f" and {len(paths) - SHOWN_PATHS} more" if len(paths) > SHOWN_PATHS else ""
    return ", ".join(shown) + more


# -- settings and vault ------------------------------------------------------------------------------
def load_settings(config: str | Path | None, flags: dict[str, Any]) -> tuple[Settings | None, Check]:
    """The effective settings and a 'config' line saying where they came from (or why they failed)."""
    from memvault import settings as settings_module

    path = settings_module.config_path(config)
    try:
        settings = settings_module.load(config, flags)
    except MemvaultError as exc:
        return None, Check("config", FAIL, str(exc), fix=f"correct {path} (`memvault config show` explains each key)")
    where = f"{path}" if path.is_file() else f"defaults and environment ({path} does not exist)"
    return settings, Check("config", OK, f"from {where}; vault {settings.vault.path}")


def open_vault(settings: Settings) -> tuple[Any, Check]:
    from memvault.vault.store import Vault

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
    from memvault.vault.git import lock_advice

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


def check_sync(vault) -> Check:
    """What `memvault sync` left for a person: core files where two devices changed the same lines
    (both versions kept under a heading), and a sync a crash cut short (the next sync finishes it)."""
    from memvault.vault import layout
    from memvault.vault.devicesync import INTENT
    from memvault.vault.merge import KEPT_BOTH

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
    """Atomic-write temporary files a crash left beside the entries (never entries themselves)."""
    from memvault.vault.store import STALE_TEMP_AGE

    old = vault.temp_files(older_than=STALE_TEMP_AGE)
    if not old:
        return Check("temporary files", OK, "no temporary files left by a crash")
    return Check("temporary files", WARN, f"{len(old)} left by a crash: {listed([str(p) for p in old])}",
                 fix="--fix removes them (so does the next `memvault serve`)", repair=CLEAN,
                 paths=[str(p) for p in old])


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


def classify_uncommitted(vault) -> tuple[list[str], dict[str, str]]:
    """Uncommitted vault paths split into (safe to commit, {left alone: why})."""
    safe: list[str] = []
    left: dict[str, str] = {}
    from memvault.vault import layout

    for path in vault.git.uncommitted():
        rel = PurePosixPath(path)
        if not layout.is_entry_path(rel):
            left[path] = "not an entry file"
        elif (vault.root / rel).exists():
            try:
                vault.read(rel)
                safe.append(path)
            except EntryFormatError as exc:
                left[path] = f"does not parse: {exc.reason}"
        else:
            memory_id = layout.id_from_filename(rel.name)
            if memory_id and vault.path_of(memory_id) is not None:
                safe.append(path)  # moved or tombstoned: the memory is still in the vault
            else:
                left[path] = "deleted by hand"
    return safe, left


def check_uncommitted(vault) -> Check:
    safe, left = classify_uncommitted(vault)
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


def check_stray_files(vault) -> Check:
    """Markdown under entries/ that no reindex reads (entries/notes/x.md): a person's file, not lost, not indexed."""
    stray = [str(rel) for rel in vault.stray_files()]
    if not stray:
        return Check("stray files", OK, "every markdown file under entries/ is where memvault reads it")
    return Check("stray files", WARN, f"{len(stray)} file(s) under entries/ are never indexed: {listed(stray)}",
                 fix=f"move each into entries/<conversation>/{{{', '.join(layout.KIND_DIRS.values())}}}/ "
                     "(a fact: facts/), or out of entries/", paths=stray)


def wrong_triples(vault) -> list[tuple[str, Any, str]]:
    """(path, fact, why) of each live fact whose triple its text does not say."""
    from memvault.vault.wording import triple_problem

    found = []
    for rel, item in vault.iter_entries():
        if not isinstance(item, EntryFormatError) and item.role == "memory" and item.triple:
            problem = triple_problem(item.text, item.triple)
            if problem:
                found.append((str(rel), item, problem))
    return found


def check_triples(vault) -> Check:
    wrong = wrong_triples(vault)
    if not wrong:
        return Check("triples", OK, "every fact's triple is drawn from its text")
    return Check("triples", WARN, f"{len(wrong)} fact(s) carry a triple their text does not say: "
                 + listed([rel for rel, _, _ in wrong], {rel: why for rel, _, why in wrong}),
                 fix="memvault doctor --fix (drops those triples, keeps the texts)", repair=TRIPLES,
                 paths=[rel for rel, _, _ in wrong])


def drop_wrong_triples(memvault) -> str:
    """Rewrite the facts whose triple contradicts their text without it (one commit); the index follows."""
    with memvault.vault.lock():
        wrong = wrong_triples(memvault.vault)  # again under the lock
    if not wrong:
        return "no wrong triple left to drop"
    with memvault.vault.transaction("doctor", f"memvault doctor: drop {len(wrong)} triple(s) their facts do not say",
                                    None) as tx:
        for _, fact, _ in wrong:
            tx.write(fact.replace(subject=None, predicate=None, object=None), event="UPDATE")
    memvault.keeper.record(tx.changes)
    return f"dropped the triple of {len(wrong)} fact(s) whose text does not say it: {listed(r for r, _, _ in wrong)}"


# -- index -------------------------------------------------------------------------------------------
class IndexSnapshot:
    """An index file opened read-only, with what sync.scan and sync.diff need (`files()`)."""

    def __init__(self, path: Path) -> None:
        import apsw

        from memvault.index import db

        self.path = path
        self.conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
        try:
            problem = self.conn.execute("PRAGMA quick_check").fetchone()[0]
            if problem != "ok":
                raise db.IncompatibleIndexError(f"damaged: {problem}")
            known = [m.__name__ for m in db.MIGRATIONS]
            applied = db.applied_migrations(self.conn)
            # An older memvault's index: the next command that opens it migrates it in place (nothing
            # to rebuild); read-only, doctor can only say so.
            self.pending = known[len(applied):] if applied and applied == known[:len(applied)] else []
            if self.pending:
                return
            if applied != known:
                raise db.IncompatibleIndexError(f"schema {applied} is not {known}")
            db.check_schema(self.conn)
            self.identity = f"{db.get_meta(self.conn, 'embedder')}"
            self.dims = db.get_meta(self.conn, "dims")
            self.rows = self.conn.execute("SELECT count(*) FROM entries").fetchone()[0]
            from memvault.index.store import BUILD_KEY

            self.build_incomplete = db.get_meta(self.conn, BUILD_KEY)
            self.unpaired = self._unpaired_vectors()
        except BaseException:
            self.conn.close()
            raise

    def _unpaired_vectors(self) -> int | None:
        """Rows without their partner: an entry without its vector, a vector without its sign bits
        (db.COARSE_TABLE), or the reverse. A process of the release before m005, still running when the
        index was migrated, writes vectors alone. Counted on sqlite-vec's rowid tables (this connection
        does not load sqlite-vec); None when they are not there to count."""
        import apsw

        from memvault.index import db

        pairs = [("entries", "entries_vec_rowids")]
        if db.table_exists(self.conn, db.COARSE_TABLE):
            pairs.append(("entries_vec_rowids", f"{db.COARSE_TABLE}_rowids"))
        alone = "SELECT count(*) FROM (SELECT rowid FROM {} EXCEPT SELECT rowid FROM {})"
        try:
            return sum(self.conn.execute(alone.format(*pair)).fetchone()[0]
                       for a, b in pairs for pair in ((a, b), (b, a)))
        except apsw.SQLError:
            return None

    def files(self) -> dict:
        from memvault.index.store import indexed_files

        return indexed_files(self.conn)

    def close(self) -> None:
        self.conn.close()


def open_snapshot(path: Path) -> tuple[IndexSnapshot | None, str | None]:
    """(snapshot, None), or (None, why the file cannot be used)."""
    import apsw

    try:
        return IndexSnapshot(path), None
    except (apsw.Error, MemvaultError) as exc:
        return None, first_line(exc)


def check_index(vault, embedder_identity: str | None) -> list[Check]:
    """The index file, the model it was built with, and whether it matches the files."""
    from memvault.index import journal, sync
    from memvault.index.store import FILE_NAME

    path = vault.state_dir / FILE_NAME
    if not path.exists():
        return [Check("index", WARN, f"no index at {path} (the next search builds it)", fix="memvault reindex",
                      repair=REINDEX)]
    snapshot, problem = open_snapshot(path)
    if snapshot is None:
        return [Check("index", FAIL, f"{path} is unusable: {problem}", fix="memvault reindex --full "
                      "(sets the file aside and rebuilds it)", repair=REBUILD)]
    if snapshot.pending:
        snapshot.close()
        return [Check("index", WARN, f"{path} was built by an older memvault: the next command updates it in "
                      f"place ({', '.join(snapshot.pending)}), nothing is re-embedded", fix="memvault reindex",
                      repair=REINDEX)]
    try:
        checks = [Check("index", OK, f"{snapshot.rows} row(s) in {path}")]
        if embedder_identity is None:
            checks.append(Check("index model", SKIP, f"built with {snapshot.identity}; the configured embedder "
                                "did not load, so it cannot be compared"))
        elif snapshot.identity != embedder_identity:
            checks.append(Check("index model", WARN, f"built with {snapshot.identity}, configured {embedder_identity}:"
                                " the next search re-embeds every entry", fix="memvault reindex --full",
                                repair=REBUILD))
        else:
            checks.append(Check("index model", OK, f"built with {snapshot.identity}, as configured"))
        if snapshot.unpaired:
            checks.append(Check("index vectors", WARN, f"{snapshot.unpaired} row(s) lack their vector or its sign bits "
                                "(was a memvault of an older release still running, e.g. `serve`?): search misses them",
                                fix="memvault reindex --full", repair=REBUILD))
        indexed = snapshot.files()
        snapshot_build = snapshot.build_incomplete
    finally:
        snapshot.close()
    plan = sync.diff(sync.scan(vault, indexed), indexed)  # what `reindex` would do, from the same code
    # Writes since the index last caught up wait in the journal: the next search indexes them.
    pending = journal.peek(vault.state_dir)
    waiting = {path for path in pending.values() if path}
    missing = [str(p.rel) for p in (*plan.new, *plan.moved) if str(p.rel) not in waiting]
    stale = [str(p.rel) for p in plan.changed if str(p.rel) not in waiting]
    removed = [memory_id for memory_id in plan.removed if memory_id not in pending]
    parts = []
    if missing:
        parts.append(f"{len(missing)} file(s) not indexed: {listed(missing)}")
    if stale:
        parts.append(f"{len(stale)} changed since indexed: {listed(stale)}")
    if removed:
        parts.append(f"{len(removed)} row(s) whose file is gone: {listed(removed)}")
    if snapshot_build:
        parts.insert(0, f"a build was interrupted ({snapshot_build}): the next search finishes it")
    if parts:
        checks.append(Check("index sync", WARN, "; ".join(parts), fix="memvault reindex", repair=REINDEX,
                            paths=missing + stale))
    else:
        queued = f"; {len(pending)} recent write(s) wait in the journal for the next search" if pending else ""
        checks.append(Check("index sync", OK, f"{plan.unchanged} file(s) indexed and unchanged{queued}"))
    return checks


# -- models ------------------------------------------------------------------------------------------
def check_embedder(settings: Settings) -> tuple[Check, str | None]:
    """Load the configured embedder and embed one text; returns the check and the model identity."""
    import math

    from memvault.models.embedders import load_embedder

    started = time.perf_counter()
    spec = settings.embedder.model
    try:
        embedder = load_embedder(spec, settings.embedder.batch_size, settings.embedder.api_base)
        vectors = embedder.embed(["memvault doctor"])
        norm = math.sqrt(float((vectors[0] ** 2).sum()))
        if vectors.shape != (1, embedder.dims) or not math.isfinite(norm) or abs(norm - 1.0) > 1e-3:
            raise MemvaultError(f"returned vectors of shape {vectors.shape} and norm {norm:.3f}")
    except Exception as exc:  # any failure of a model library is this check's answer
        return Check("embedder", FAIL, f"{spec}: {first_line(exc)}", fix="check embedder.model "
                     "(`memvault config show`) and that its package is installed"), None
    return Check("embedder", OK, f"{embedder.identity} loaded and embedded in {time.perf_counter() - started:.2f} s"), \
        embedder.identity


def check_reranker(settings: Settings) -> Check:
    from memvault.models.reranker import load_reranker
    from memvault.retrieve.scoring import FALLBACK_NAME

    spec = settings.retrieval.reranker
    if not spec.strip():
        return Check("reranker", SKIP, f"not configured: relevance is a logistic blend, {FALLBACK_NAME} "
                     "(retrieve/scoring.py)",
                     fix="optional: set retrieval.reranker to an ONNX cross-encoder folder")
    started = time.perf_counter()
    try:
        scores = load_reranker(spec).score("memvault doctor", ["a check of the reranker"])
        if len(scores) != 1 or not 0.0 <= scores[0] <= 1.0:
            raise MemvaultError(f"gave scores {scores}")
    except Exception as exc:
        return Check("reranker", FAIL, f"{spec}: {first_line(exc)}", fix="check retrieval.reranker")
    return Check("reranker", OK, f"{spec} loaded and scored in {time.perf_counter() - started:.2f} s")


def check_llm(settings: Settings, enabled: bool = True) -> Check:
    """A tiny real call to the configured LLM (no retries, a short timeout)."""
    if not enabled:
        return Check("llm", SKIP, f"not checked (--no-llm-check); model {settings.llm.model or 'not configured'}")
    if not settings.llm.model:
        return Check("llm", SKIP, "not configured: `add` stores text as given, `chat` is unavailable",
                     fix="set llm.model / MEMVAULT_LLM_MODEL (e.g. ollama/qwen3:4b)")
    from memvault.curate.llm import LLMClient

    probe = dataclasses.replace(settings.llm, max_retries=0, timeout=min(settings.llm.timeout, LLM_PROBE_TIMEOUT))
    client = LLMClient(probe)
    started = time.perf_counter()
    try:
        answer = client.complete(LLM_PROBE)
    except MemvaultError as exc:
        return Check("llm", FAIL, str(exc), fix="check llm.model, llm.api_base and the provider's key")
    said = " ".join(answer.split())[:40] or "(an empty answer)"
    return Check("llm", OK, f"{settings.llm.model} at {client.address} answered {said!r} in "
                 f"{time.perf_counter() - started:.2f} s")


# -- putting it together -----------------------------------------------------------------------------
def check_files(settings: Settings, embedder_identity: str | None) -> list[Check]:
    """Checks of the vault and its index (what --fix can change)."""
    vault, opened = open_vault(settings)
    if vault is None:
        return [opened]
    files, tombstones = check_entry_files(vault)
    return [opened, check_git_state(vault), check_git_locks(vault), check_interrupted_write(vault),
            check_uncommitted(vault), check_temp_files(vault), check_curation_queue(vault), check_sync(vault),
            files, tombstones, check_triples(vault), check_stray_files(vault),
            *check_index(vault, embedder_identity)]


def diagnose(settings: Settings, llm_check: bool = True) -> Diagnosis:
    """Every check, in the order a person reads them: vault, index, models."""
    embedder, identity = check_embedder(settings)
    checks = [*check_files(settings, identity), embedder, check_reranker(settings), check_llm(settings, llm_check)]
    return Diagnosis(checks, identity)


def recheck(settings: Settings, before: Diagnosis) -> Diagnosis:
    """The vault and index checks again after repairs; model checks are kept from `before`."""
    models = [c for c in before.checks if c.name in ("embedder", "reranker", "llm")]
    head = [c for c in before.checks if c.name == "config"]
    return Diagnosis([*head, *check_files(settings, before.embedder_identity), *models], before.embedder_identity)


def repair(settings: Settings, diagnosis: Diagnosis, on_progress=None, kept_both: str | None = None) -> list[str]:
    """Apply the safe fixes the diagnosis offers, and `kept_both` (ours, theirs, both: a person's
    choice) to the core files where a sync kept both versions; returns one line per action taken."""
    from memvault.core import Memvault
    from memvault.vault.git import format_message
    from memvault.vault.store import Vault

    actions = diagnosis.repairs()
    if not actions and not kept_both:
        return []
    done: list[str] = []
    vault = Vault.open(settings.vault.path)
    memvault = Memvault(settings, vault)  # journals what a recovery puts back, for the index
    if UNLOCK in actions:
        with vault.lock():
            removed = vault.git.remove_stale_locks()
        if removed:
            done.append(f"removed {len(removed)} stale git lock file(s): {listed(map(str, removed))}")
    if RECOVER in actions:
        with vault.lock():
            touched = vault.recover_interrupted()
        done.append(f"finished the write a crash cut short ({len(touched)} file(s))")
    if CLEAN in actions:
        removed = vault.remove_temp_files()
        if removed:
            done.append(f"removed {len(removed)} temporary file(s) left by a crash")
    if COMMIT in actions:
        paths = [p for c in diagnosis.checks if c.repair == COMMIT for p in c.paths]
        try:
            with vault.lock():
                vault.git.check_state()
                safe, _ = classify_uncommitted(vault)  # again under the lock: files may have moved on
                chosen = [p for p in paths if p in safe]
                subject = f"memvault doctor: commit {len(chosen)} entry file(s) left uncommitted"
                if chosen and vault.git.commit(chosen, format_message(subject, "doctor", None, [])):
                    done.append(f"committed {len(chosen)} entry file(s): {listed(chosen)}")
        except VaultError as exc:
            done.append(f"did not commit: {exc}")
    if REQUEUE in actions:
        from memvault.curate.queue import CurationQueue

        turns = [p for c in diagnosis.checks if c.repair == REQUEUE for p in c.paths]
        CurationQueue(vault.state_dir).retry(turns)
        done.append(f"queued {len(turns)} turn(s) for curation again (the next `memvault serve` curates them)")
    if TRIPLES in actions:
        done.append(drop_wrong_triples(memvault))
    if kept_both:
        try:  # core/syncing.py: the sync's kept-both blocks settled as chosen, one commit
            settled = memvault.resolve_kept_both(None, kept_both)
            done.append(f"kept {kept_both} in {listed(map(str, settled))}" if settled else "no kept-both block left")
        except MemvaultError as exc:
            done.append(f"did not settle the kept-both blocks: {exc}")
    if REBUILD in actions or REINDEX in actions:
        memvault.on_progress = on_progress
        try:
            full = REBUILD in actions
            report = memvault.reindex(full=full)
        finally:
            memvault.close()
        done.append(f"{'rebuilt' if full else 'updated'} the index: {report.added} added, {report.updated} updated, "
                    f"{report.moved} moved, {report.removed} removed, {report.embedded} embedded")
    return done
