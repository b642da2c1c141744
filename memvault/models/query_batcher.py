"""Search queries asked for at the same time, embedded in one model call.

A server answers several requests at once, and each embeds its query. One model call costs far more
than one short text does (for MiniLM, a batch of 4 queries costs about the CPU of 1.5 single ones),
so queries that arrive while the model is busy wait for it and then go in together, as a group commit
does. Nobody waits when alone: the first asker runs the model at once, for itself and whoever asked
meanwhile; the next batch is led by the first of those still waiting. No thread of its own.

    embedder = batched(load_embedder("minilm"))   # the same wrapper for the same model, always
    embedder.embed(["a question"], kind="query")   # batched with concurrent asks; any other call passes through
"""

from __future__ import annotations

import functools
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

MAX_BATCH = 32  # queries in one call at most (a long queue is served in several calls)


class _Ask:
    """One query waiting for its vector."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.ready = threading.Event()
        self.leads = False  # set by the last leader: this ask runs the next batch
        self.vector: np.ndarray | None = None
        self.error: BaseException | None = None


class QueryBatcher:
    """An embedder whose one-text query calls, made by concurrent threads, share model calls; every
    other call and attribute is the wrapped embedder's."""

    def __init__(self, inner: Any, max_batch: int = MAX_BATCH) -> None:
        self.inner = inner
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._waiting: list[_Ask] = []
        self._running = False  # a leader is embedding (or about to): new asks wait for it

    def __getattr__(self, name: str) -> Any:  # identity, dims, batch_size, name...: the model's own
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"QueryBatcher({self.inner!r})"

    def embed(self, texts: list[str], kind: str = "passage") -> np.ndarray:
        import numpy as np

        if kind != "query" or not isinstance(texts, list) or len(texts) != 1 or not isinstance(texts[0], str):
            return self.inner.embed(texts, kind)
        ask = _Ask(texts[0])
        with self._lock:
            self._waiting.append(ask)
            leads = ask.leads = not self._running
            self._running = True
        if not leads:
            ask.ready.wait()
        if ask.leads and ask.vector is None and ask.error is None:
            self._lead()
        if ask.error is not None:
            raise ask.error
        return np.array(ask.vector)[None, :]  # its own copy: two asks of one text share a row

    def _lead(self) -> None:
        """Embed the asks waiting now (the leader's own first), hand their vectors out, and pass the
        lead to the first ask left waiting, if any."""
        with self._lock:
            batch, self._waiting = self._waiting[:self.max_batch], self._waiting[self.max_batch:]
        texts = list(dict.fromkeys(ask.text for ask in batch))  # a question asked twice is embedded once
        try:
            vectors = dict(zip(texts, self.inner.embed(texts, kind="query"), strict=True))
        except BaseException as exc:  # noqa: BLE001 - every asker of this batch gets the model's error
            for ask in batch:
                ask.error = exc
        else:
            for ask in batch:
                ask.vector = vectors[ask.text]
        with self._lock:
            following = self._waiting[0] if self._waiting else None
            if following is not None:
                following.leads = True
            else:
                self._running = False
        for ask in batch:
            ask.ready.set()
        if following is not None:
            following.ready.set()


def shared_embedder(settings: Any) -> QueryBatcher:
    """The process's embedder for these EmbedderSettings (memvault.settings), batched: every caller
    given the same settings gets the same object, and so the same query cache (retrieve/search.py)."""
    from memvault.models.embedders import load_embedder

    return batched(load_embedder(settings.model, settings.batch_size, settings.api_base))


@functools.cache
def batched(embedder: Any) -> QueryBatcher:
    """The one QueryBatcher of this embedder (shared by every caller, so concurrent asks meet, and
    caches keyed by the embedder see one object)."""
    return embedder if isinstance(embedder, QueryBatcher) else QueryBatcher(embedder)
