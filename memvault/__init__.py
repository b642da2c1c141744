"""memvault: a persistent memory for LLMs that a person can read, edit and audit."""

import os as _os
import sys as _sys

__version__ = "0.1.0"

# onnxruntime (1.29+) reports telemetry to Microsoft from its import on, and nothing turns that off
# afterwards (memvault.models.onnx_runtime): off for every import after this one; an onnxruntime a
# program imported before memvault, with telemetry on, is noted here and the embedder refuses to run.
ONNXRUNTIME_TELEMETRY_ON = "onnxruntime" in _sys.modules and _os.environ.get("ORT_DISABLE_TELEMETRY") != "1"
_os.environ["ORT_DISABLE_TELEMETRY"] = "1"

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
