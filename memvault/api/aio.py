"""AsyncMemory: the same API as coroutines that never block the event loop.

Each call runs the synchronous Memory method in a worker thread (asyncio.to_thread). The Memory's
own lock keeps calls of one instance from interleaving (index and vault access), while the loop
stays free to serve other tasks during embedding, git commits and slow LLM calls.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import Any

from memvault.api.memory import Memory
from memvault.settings import Settings


def in_thread(name: str):
    """A coroutine method running `Memory.<name>` in a worker thread, with its signature and docs."""
    method = getattr(Memory, name)

    @functools.wraps(method)
    async def call(self: AsyncMemory, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(method, self.memory, *args, **kwargs)

    return call


class AsyncMemory:
    """mem0's `AsyncMemory` over a memvault vault; arguments as for `Memory`."""

    def __init__(self, config: dict | None = None, *, vault: str | Path | None = None,
                 settings: Settings | None = None, llm: Any = None, mode: str = "normal") -> None:
        self.memory = Memory(config, vault=vault, settings=settings, llm=llm, mode=mode)

    @classmethod
    def from_config(cls, config_dict: dict) -> AsyncMemory:
        """As mem0's (a plain classmethod: `m = AsyncMemory.from_config(config)`); `await`ing the
        result works too, for code written against memvault's earlier coroutine."""
        return cls(config_dict)

    def __await__(self):
        return self._itself().__await__()

    async def _itself(self) -> AsyncMemory:
        return self

    @property
    def settings(self) -> Settings:
        return self.memory.settings

    add = in_thread("add")
    search = in_thread("search")
    get = in_thread("get")
    get_all = in_thread("get_all")
    update = in_thread("update")
    delete = in_thread("delete")
    delete_all = in_thread("delete_all")
    history = in_thread("history")
    reset = in_thread("reset")
    aclose = in_thread("close")

    def close(self) -> None:
        self.memory.close()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
