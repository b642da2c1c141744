"""Checks of the index: the file opened read-only (IndexStore.open would migrate it, empty it or set
it aside), the model it was built with, and whether it matches the files."""

from __future__ import annotations

from pathlib import Path

from memvault.doctor.report import FAIL, OK, REBUILD, REINDEX, SKIP, WARN, Check, listed
from memvault.errors import MemvaultError, first_line


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
        from memvault.index.rows import indexed_files

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
    from memvault.index import catchup as sync
    from memvault.index import journal
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


