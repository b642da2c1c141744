"""Incognito: a Memvault over a vault of its own in a temporary folder.

The same facade, the same rules (messages, guards, scopes, filters, expiry), over a fresh vault that
no one else reads: nothing stored elsewhere is read, nothing is written anywhere else, and the folder
(files, git, index, session state) is removed at `close()` or, at the latest, when the process exits.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
import weakref

from memvault.core import Memvault
from memvault.settings import Settings

PREFIX = "memvault-incognito-"


class TemporaryMemvault(Memvault):
    """A Memvault whose vault is a temporary folder, removed when it is closed."""

    @classmethod
    def create(cls, settings: Settings) -> TemporaryMemvault:
        folder = tempfile.mkdtemp(prefix=PREFIX)
        own = copy.deepcopy(settings)
        own.vault.path = folder
        try:
            core = cls.open(own, create=True)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        # Runs once: at close(), when the object is collected, or at exit, whichever comes first.
        core.remove_folder = weakref.finalize(core, shutil.rmtree, folder, ignore_errors=True)
        return core

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.remove_folder()
