"""Two things a long-lived process needs of a vault: an erase and the index keeper take their two locks
in one order (the index's, then the vault's), and closing a vault stops the git processes it kept.

The first was found in the suite: a REST erase held the vault's write lock and reached for the index's, while the
server's file watcher held the index's (a reindex) and waited for the vault's: both stood still until
the vault lock's 120 s timeout broke it. Real vault, real index, real threads.
"""

import threading

from memvault import settings as settings_module
from memvault.core import Memvault
from memvault.vault.forget import erase
from memvault.vault.write.store import LockBusyError


def test_a_reindex_that_holds_the_index_never_waits_out_an_erase(tmp_path, monkeypatch):
    m = Memvault.open(settings_module.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    try:
        kept = m.add_verbatim("The boiler service is due in March")
        gone = m.add_verbatim("The spare key is under the blue pot")
        assert m.search("boiler")  # the index is built: the erase will purge its rows
        inside = threading.Event()
        real_select = erase.select

        def select_slowly(*args, **kwargs):  # the erase holds its locks here for a moment
            inside.set()
            threading.Event().wait(0.5)
            return real_select(*args, **kwargs)

        monkeypatch.setattr(erase, "select", select_slowly)
        outcome: list[object] = []

        def watcher_reindex():  # what the server's watcher does: the index's lock, then the vault's
            inside.wait(10)
            with m.keeper.lock:
                try:
                    with m.vault.lock(2):
                        outcome.append("reindexed")
                except LockBusyError as busy:
                    outcome.append(busy)

        watcher = threading.Thread(target=watcher_reindex)
        watcher.start()
        result = m.erase(ids=[gone.id], reason="test")
        watcher.join(30)
        assert outcome == ["reindexed"] and result.ids == [gone.id]
        assert gone.id not in [hit.entry.id for hit in m.search("spare key")]
        assert m.get(kept.id)[1].text.startswith("The boiler")
    finally:
        m.close()


def git_children() -> list[str]:
    """This process's children that are git (their command lines)."""
    import os
    from pathlib import Path

    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "stat").read_text().split(") ")[1].split()[1] == str(os.getpid()):
                command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                if command.startswith("git"):
                    found.append(command)
        except OSError:
            pass  # ended meanwhile
    return found


def test_closing_a_memvault_stops_the_git_processes_it_kept(tmp_path):
    """The object reader and GitPython's cat-file live as long as the vault: a server or a test worker
    that opens many vaults must not keep one set per vault it ever opened."""
    before = git_children()
    m = Memvault.open(settings_module.load(None, {"vault.path": str(tmp_path / "vault")}), create=True)
    try:
        first = m.add_verbatim("The boiler service is due in March")
        m.update(first.id, "The boiler service is due in April")
        assert len(m.history(first.id)) >= 2  # past texts read through the kept processes
        assert len(git_children()) > len(before)
    finally:
        m.close()
    assert git_children() == before
