"""Small deterministic stand-ins shared by the index tests (the real model is tested elsewhere)."""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePosixPath

import numpy as np

from memvault.vault.format import layout
from memvault.vault.format.entry import Entry
from memvault.vault.format.markdown import render
from memvault.vault.write.store import Vault

DIMS = 384
WORD = re.compile(r"\w+")


class WordEmbedder:
    """Hashed bag of words into `dims`, L2-normalised; counts what it embeds."""

    def __init__(self, name: str = "words", dims: int = DIMS, batch_size: int = 4):
        self.name, self.dims, self.batch_size = name, dims, batch_size
        self.embedded = 0
        self.calls = 0

    @property
    def identity(self) -> str:
        return f"{self.name}:{self.dims}"

    def embed(self, texts, kind="passage"):
        self.calls += 1
        self.embedded += len(texts)
        out = np.zeros((len(texts), self.dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in WORD.findall(text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dims] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1, norms)


def put(vault: Vault, entry: Entry) -> PurePosixPath:
    """Write an entry's file by hand, as a person (or another program) would."""
    rel = layout.relative_path(entry)
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(entry), encoding="utf-8")
    return rel
