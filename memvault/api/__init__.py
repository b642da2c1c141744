"""mem0-style Python API: `Memory`, `AsyncMemory` and their errors (see memvault.api.memory)."""

from memvault.api.aio import AsyncMemory
from memvault.api.config import ConfigWarning
from memvault.api.errors import (
    ConfigurationError,
    EmbeddingError,
    LLMError,
    MemoryError,
    NotFoundError,
    ScopeError,
    ValidationError,
    VectorStoreError,
)
from memvault.api.memory import Memory

__all__ = [
    "AsyncMemory", "ConfigWarning", "ConfigurationError", "EmbeddingError", "LLMError", "Memory", "MemoryError",
    "NotFoundError", "ScopeError", "ValidationError", "VectorStoreError",
]
