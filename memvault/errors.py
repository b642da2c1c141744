"""Typed errors: raised anywhere, caught once at the CLI or HTTP edge and shown as one line."""


class MemvaultError(Exception):
    """Base of every error memvault reports to a user. Its message is one clear line."""

    exit_code = 1


class UsageError(MemvaultError):
    """The caller asked for something malformed (bad id, bad name, empty text...)."""

    exit_code = 2


class NotFoundError(MemvaultError):
    """No memory matches the id or prefix given."""


class AmbiguousIdError(MemvaultError):
    """An id prefix matches more than one memory."""


class UnsafePathError(UsageError):
    """A name or id would escape the vault or is not a valid path component."""


class EntryFormatError(MemvaultError):
    """A file in the vault cannot be parsed as an entry (broken front matter, not UTF-8)."""

    def __init__(self, path, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class VaultError(MemvaultError):
    """The vault folder or its git repository is not in a usable state."""


class ConfigError(MemvaultError):
    """A configuration file, variable or flag has an unknown key or a wrong value."""


class SearchIndexError(MemvaultError):
    """The sidecar index cannot be opened or used (sqlite-vec missing, schema error)."""


class EmbeddingError(MemvaultError):
    """The embedding model cannot be loaded or failed to embed."""


class LLMError(MemvaultError):
    """The configured LLM could not be reached or answered unusably."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none): for errors from
    libraries (onnxruntime, huggingface_hub) whose messages run to many lines."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
