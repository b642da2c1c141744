"""mem0's arguments, checked and trimmed as mem0 2.x checks them: scope ids, filters, top_k, thresholds,
queries, expiration dates and metadata. Shapes only: what a memory is, and which memories a call
sees, is decided by the facade (memvault.core.Memvault)."""

from __future__ import annotations

import logging
from datetime import date, datetime
from typing import Any

from memvault.api.errors import ScopeError, ValidationError
from memvault.shapes import SCOPE_KEYS

logger = logging.getLogger("memvault.api")

# mem0 2.2's words, so code that matches on them keeps working.
ADD_SCOPE_REQUIRED = "At least one of 'user_id', 'agent_id', or 'run_id' must be provided."
FILTERS_SCOPE_REQUIRED = ("filters must contain at least one of: user_id, agent_id, run_id. "
                          "Example: filters={'user_id': 'u1'}")
DELETE_ALL_SCOPE_REQUIRED = ("At least one filter is required to delete all memories. If you want to delete "
                             "all memories, use the `reset()` method.")
DELETE_NOT_FOUND = "Memory with id {memory_id} not found"
UPDATE_NOT_FOUND = "Memory with id {memory_id} not found. Please provide a valid 'memory_id'"
DEFAULT_TOP_K = 20  # mem0 2.x's default for search and get_all (1.x: 100)
PROCEDURAL = "procedural_memory"
IDENTITY_KEYS = (*SCOPE_KEYS, "actor_id")
MEMORY_ONLY = {"role": "memory"}


def given_scopes(user_id: Any, agent_id: Any, run_id: Any) -> dict[str, str]:
    """The scope ids given, checked and trimmed as mem0 2.x does (None is not given)."""
    values = zip(SCOPE_KEYS, (user_id, agent_id, run_id), strict=True)
    return {key: trimmed for key, value in values if (trimmed := entity_id(value, key)) is not None}


def entity_id(value: Any, name: str) -> str | None:
    """mem0's `_validate_and_trim_entity_id`: ints become strings, surrounding spaces are trimmed,
    an empty id or one holding a space is refused."""
    if value is None:
        return None
    text = value if isinstance(value, str) else str(value)
    text = text.strip()
    if not text:
        raise ValidationError(f"Invalid {name}: cannot be empty or whitespace-only. Provide a valid identifier.")
    if any(c.isspace() for c in text):
        raise ValidationError(f"Invalid {name}: cannot contain whitespace. Provide a valid identifier without spaces.")
    return text


def required_scopes(user_id: Any, agent_id: Any, run_id: Any, message: str) -> dict[str, str]:
    """The scope ids given; ScopeError(message) when there are none."""
    scopes = given_scopes(user_id, agent_id, run_id)
    if not scopes:
        raise ScopeError(message)
    return scopes


def scoped(user_id: Any, agent_id: Any, run_id: Any, filters: Any) -> tuple[dict[str, str], dict | None]:
    """(scopes, filters) for search and get_all: 1.x's top-level ids and 2.x's ids inside `filters`
    (checked and trimmed there too); at least one of the two must name a scope."""
    if filters is not None and not isinstance(filters, dict):
        raise ValidationError(f"filters must be a dict, got {type(filters).__name__}")
    scopes = given_scopes(user_id, agent_id, run_id)
    filters = dict(filters) if filters else None
    for key in SCOPE_KEYS:
        if filters and key in filters:
            filters[key] = filter_scope(filters[key], key)
    if not scopes and not (filters and any(key in filters for key in SCOPE_KEYS)):
        raise ScopeError(FILTERS_SCOPE_REQUIRED)
    return scopes, filters


def filter_scope(value: Any, key: str) -> Any:
    """A scope id inside filters, as mem0 2.x takes it: a string or an int (checked and trimmed),
    "*" (any), or {"eq": id} / {"in": [ids]} / {"ne"/"nin": ...} with ids checked the same way."""
    if value == "*":
        return value
    if isinstance(value, dict):
        return {op: ([entity_id(v, key) for v in operand] if isinstance(operand, (list, tuple))
                     else operand if operand == "*" else entity_id(operand, key))
                for op, operand in value.items()}
    if isinstance(value, (list, tuple)):
        return [entity_id(v, key) for v in value]
    if value is None:
        raise ValidationError(f"Invalid {key}: cannot be empty or whitespace-only. Provide a valid identifier.")
    return entity_id(value, key)


def memories_matching(filters: dict | None) -> dict:
    """The user's filter, restricted to facts (turns and summaries are not mem0 memories)."""
    return {"AND": [MEMORY_ONLY, filters or {}]}


def expiration(value: Any) -> str | None:
    """mem0's `_normalize_expiration_date`: a date, a datetime or a YYYY-MM-DD string; None stays None."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.date().isoformat()
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return date.fromisoformat(value).isoformat()
        except ValueError:
            raise ValidationError("expiration_date must be a valid date in YYYY-MM-DD format.") from None
    raise ValidationError("expiration_date must be a date string in YYYY-MM-DD format.")


def given_time(value: Any) -> datetime:
    """metadata["created_at"] as a time (mem0 honours it as the memory's creation time)."""
    from memvault.shapes import iso_time

    try:
        return iso_time(value)
    except ValueError:
        raise ValidationError(f"metadata created_at is not an ISO 8601 time: {value!r:.60}") from None


def without_identity(metadata: Any, where: str) -> dict[str, Any]:
    """Metadata without identity keys: scopes come from the scope arguments, never from metadata
    (mem0 2.x drops them with a warning)."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise ValidationError(f"metadata must be a dict, got {type(metadata).__name__}")
    ignored = [key for key in metadata if key in IDENTITY_KEYS]
    for key in ignored:
        logger.warning("%s: ignoring metadata[%r] - identity fields cannot be set through metadata", where, key)
    if "created_at" in metadata:
        given_time(metadata["created_at"])
    return {key: value for key, value in metadata.items() if key not in IDENTITY_KEYS}


def pick_top_k(top_k: Any, limit: Any) -> int:
    """`top_k` (2.x) or `limit` (1.x), default 20 (2.x; 1.x had 100): a non-negative integer."""
    value = top_k if top_k is not None else limit if limit is not None else DEFAULT_TOP_K
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValidationError("top_k must be a valid integer")
    if value < 0:
        raise ValidationError(f"Invalid top_k: {value}. Must be a non-negative integer.")
    return value


def check_threshold(threshold: Any) -> None:
    if threshold is None:
        return
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise ValidationError("threshold must be a valid number")
    if not 0 <= threshold <= 1:
        raise ValidationError(f"Invalid threshold: {threshold}. Must be between 0 and 1 (inclusive).")


def check_query(query: Any) -> str:
    if not isinstance(query, str):
        raise ValidationError("Invalid query: must be a non-empty string.")
    if not query.strip():
        raise ValidationError("Invalid query: cannot be empty or whitespace-only.")
    return query.strip()
