"""The Python API's errors, named as in mem0. Each is also the memvault error of its kind, so
`except memvault.errors.NotFoundError` and `except memvault.NotFoundError` both work, and the CLI
or HTTP edge that catches MemvaultError catches them all."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from memvault import errors


class MemoryError(errors.MemvaultError):  # noqa: A001 - mem0's name; it shadows the builtin only here
    """Base of every error the Python API raises."""


class ValidationError(MemoryError, errors.UsageError, ValueError):
    """A call with malformed arguments (empty text, bad id, bad filter, bad limit...). A ValueError,
    as mem0's Memory raises ValueError for these: `except ValueError` works for both."""


class ScopeError(ValidationError):
    """None of user_id, agent_id, run_id was given where mem0 requires one."""


class NotFoundError(MemoryError, errors.NotFoundError, ValueError):
    """No live memory has this id (mem0 raises ValueError("Memory with id ... not found"))."""


class LLMError(MemoryError, errors.LLMError):
    """The LLM could not be reached or answered unusably."""


class EmbeddingError(MemoryError, errors.EmbeddingError):
    """The embedding model could not be loaded or failed."""


class VectorStoreError(MemoryError, errors.SearchIndexError):
    """The search index could not be opened or queried."""


class ConfigurationError(MemoryError, errors.ConfigError):
    """A configuration key or value is wrong."""


# Most specific first: the first memvault class an error is an instance of picks its API class.
KINDS: tuple[tuple[type[errors.MemvaultError], type[MemoryError]], ...] = (
    (errors.UsageError, ValidationError),
    (errors.AmbiguousIdError, ValidationError),
    (errors.NotFoundError, NotFoundError),
    (errors.LLMError, LLMError),
    (errors.EmbeddingError, EmbeddingError),
    (errors.SearchIndexError, VectorStoreError),
    (errors.ConfigError, ConfigurationError),
)


def api_error(exc: errors.MemvaultError) -> MemoryError:
    """The API error for a memvault error, with the same one-line message."""
    kind = next((api for core, api in KINDS if isinstance(exc, core)), MemoryError)
    return kind(str(exc))


@contextmanager
def translated() -> Iterator[None]:
    """Re-raise memvault errors as API errors (the original stays as __cause__)."""
    try:
        yield
    except MemoryError:
        raise
    except errors.MemvaultError as exc:
        raise api_error(exc) from exc
