"""memvault: a persistent memory for LLMs that a person can read, edit and audit."""

__version__ = "0.1.0"

# The Python API is loaded on first use, so `import memvault` (and the CLI start-up) stays light.
_API_NAMES = (
    "Memory", "AsyncMemory", "MemoryError", "ValidationError", "ScopeError", "NotFoundError",
    "LLMError", "EmbeddingError", "VectorStoreError", "ConfigurationError", "ConfigWarning",
)
__all__ = ["__version__", *_API_NAMES]


def __getattr__(name: str):
    if name in _API_NAMES:
        from memvault import api

        return getattr(api, name)
    raise AttributeError(f"module 'memvault' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API_NAMES})
