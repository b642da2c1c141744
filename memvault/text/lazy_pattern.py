"""A regular expression compiled at its first use. Python compiles a pattern of many alternatives
(a list of words in thirty languages) in milliseconds, and every process that imports the module pays
it; a check that most texts never reach (a secret's keyword is found by str.find first) need not."""

from __future__ import annotations

import re
from typing import Any


class LazyPattern:
    """Stands for `re.compile(pattern, flags)`: match, search, finditer... compile it on first use."""

    __slots__ = ("_compiled", "_flags", "_pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self._pattern, self._flags, self._compiled = pattern, flags, None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = re.compile(self._pattern, self._flags)
        return getattr(self._compiled, name)
