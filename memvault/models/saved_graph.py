"""An ONNX model's graph saved after onnxruntime's basic passes, under the user's cache folder, and
opened from there with no passes: a process starts its model without redoing them.

The int8 MiniLM multiplies float weights that its graph makes from int8 ones and their scales. The
basic passes make them once, at 0.3 s of CPU per process; without them every run makes them again
(0.1 s of CPU and 100 MB of fresh pages for one short query). The saved graph holds the floats in a
file beside it (90 MB) that onnxruntime maps instead of reading, so opening it costs ~0.02 s. Opened
with weights prepacked it computes what the basic passes' session computes; unpacked (a process's one
query) what the graph without passes computes, the vector a cold search has always had
(tests/test_saved_graph.py compares both, to the bit on this model).

The copy is made by the first process that needs the model and finds none (0.3-0.4 s more, once per
model and onnxruntime version). The folder is named by the model file (path, size,
modification time) and onnxruntime's version: a model or onnxruntime upgraded gets a new one. It is
written whole under a temporary name and renamed; one that fails to open is removed and made again,
and when none can be made (a read-only home) the original is opened as before.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from memvault.errors import EmbeddingError, MemvaultError
from memvault.models.onnx_runtime import open_session, session_options

if TYPE_CHECKING:
    import onnxruntime

GRAPH, WEIGHTS = "model.onnx", "weights.data"
FORMAT = 1  # of the saved folder; a change names new folders


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memvault" / "onnx"


@functools.cache
def optimised_session(model_path: str, prepack: bool = True,
                      error: type[MemvaultError] = EmbeddingError) -> onnxruntime.InferenceSession:
    """The model after onnxruntime's basic passes, opened once per process from its saved copy (made
    now if there is none). `prepack` False: weights left unpacked, for one short run. When no copy can
    be written, the original: with the basic passes when `prepack`, else with none (the same vectors)."""
    folder = saved_folder(model_path)
    if folder is not None and folder.exists():
        try:  # a file missing, cut short or not a graph fails to open
            return open_session(str(folder / GRAPH), session_options(error, "disable", prepack), error)
        except MemvaultError:
            shutil.rmtree(folder, ignore_errors=True)  # damaged: made again below
    session = saving_session(model_path, folder, error)  # the passes, once per model and onnxruntime
    if prepack:
        return session
    if folder is not None and folder.exists():
        return open_session(str(folder / GRAPH), session_options(error, "disable", prepack), error)
    return open_session(model_path, session_options(error, "disable"), error)  # no copy could be written


def saved_folder(model_path: str) -> Path | None:
    """Where the model's saved graph is (named by the model file and onnxruntime's version)."""
    import onnxruntime

    try:
        stat = os.stat(model_path)
    except OSError:
        return None
    named = f"{os.path.realpath(model_path)}|{stat.st_size}|{stat.st_mtime_ns}|{onnxruntime.__version__}|{FORMAT}"
    return cache_root() / f"{Path(model_path).stem}-{hashlib.sha256(named.encode()).hexdigest()[:20]}"


def saving_session(model_path: str, folder: Path | None,
                   error: type[MemvaultError]) -> onnxruntime.InferenceSession:
    """The original model with the basic passes, their graph saved into `folder` on the way when it can
    be: written under a temporary name, then renamed (a reader sees all of it or nothing)."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        remove_leftovers(folder)
        building = Path(tempfile.mkdtemp(prefix=f".{folder.name}.{os.getpid()}.", dir=folder.parent))
    except (AttributeError, OSError):  # no folder, or none can be made (a read-only home)
        return open_session(model_path, session_options(error, "basic"), error)
    options = session_options(error, "basic")
    options.optimized_model_filepath = str(building / GRAPH)
    options.add_session_config_entry("session.optimized_model_external_initializers_file_name", WEIGHTS)
    options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    try:
        session = open_session(model_path, options, error)
        os.rename(building, folder)
    except (OSError, MemvaultError):  # another process's copy landed first, or this one could not be written
        shutil.rmtree(building, ignore_errors=True)
        return open_session(model_path, session_options(error, "basic"), error)
    return session


def remove_leftovers(folder: Path) -> None:
    """Remove the half-written copies of `folder` whose writer is gone (killed mid-way: 90 MB each)."""
    for leftover in folder.parent.glob(f".{folder.name}.*"):
        try:
            os.kill(int(leftover.name.split(".")[2]), 0)
        except ProcessLookupError:
            shutil.rmtree(leftover, ignore_errors=True)
        except (ValueError, IndexError, OSError):  # not ours to judge, or its writer still runs
            pass
