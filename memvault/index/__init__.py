"""The sidecar index: SQLite (sqlite-vec + FTS5) derived from the vault's files, disposable and rebuilt at will."""
