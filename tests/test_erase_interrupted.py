"""`memvault erase` against what a real trial did to it: writes journalled while it runs (it must not
wait on its own lock) and a kill in the middle (the next erase or `doctor --fix` finishes it)."""

from __future__ import annotations

import contextlib
import threading

import pytest

from memvault.index import journal
from tests.test_erase import leftovers, open_vault

pytestmark = pytest.mark.timeout(600)

SECRET = "Kestrel-Marmalade-4419"


def test_erase_with_a_journalled_write_never_waits_on_its_own_lock(tmp_path):
    root = tmp_path / "vault"
    m = open_vault(root)
    m.add_verbatim(f"My gate code is {SECRET}.", conversation="c", role="user")
    m.add_verbatim("Gina keeps bees on the roof.", conversation="c")
    assert m.search("gate code")  # the index exists
    m.close()
    writer = open_vault(root)  # another process's add: its index closed, so the write is journalled
    late = writer.add_verbatim("Hugo repairs clocks.", conversation="d")
    writer.close()
    assert (root / ".memvault" / journal.FILE_NAME).exists()
    m = open_vault(root)
    # The add landed after erase caught the index up and before it took the lock (the trial's race).
    m.keeper.caught_up = contextlib.nullcontext
    outcome: dict = {}
    worker = threading.Thread(target=lambda: outcome.update(result=m.erase(matching=SECRET)), daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "erase waited on the vault lock it holds itself"
    assert outcome["result"].roles == {"user": 1} and outcome["result"].index_rows == 1
    del m.keeper.caught_up
    assert leftovers(root, SECRET) == []
    assert [h.id for h in m.search("clocks")][:1] == [late.id]
    m.close()
