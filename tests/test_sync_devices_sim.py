"""Three devices, one bare remote on disk, rounds of concurrent writes and syncs in random order (real
`python -m memvault sync` processes at once, so pushes race); then the same with a sync killed -9."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from memvault.vault.devices.merge import KEPT_BOTH
from memvault.vault.format.entry import Entry
from tests.test_sync_devices import assert_clean, devices, end_a_session, git, live_fact_ids, open_vault, tree

ROUNDS = 3
WORDS = ["amber", "birch", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kelp",
         "lagoon", "maple", "nectar", "onyx", "pebble", "quartz", "raven", "saffron", "tundra", "umber", "violet"]


def start_sync(vault: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "memvault", "sync", "--json", "--vault", str(vault)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def tombstones(vault: Path, memory_id: str) -> list[Path]:
    return [p for p in (vault / "entries").rglob(f"*{memory_id}.md") if "deleted" in p.relative_to(vault).parts]


def converge(vaults: list[Path]) -> None:
    """Sync one after another until every device holds the remote's HEAD (concurrent rounds may leave
    the last pusher's merge unseen by the others)."""
    for _ in range(3):
        for vault in vaults:
            done = subprocess.run([sys.executable, "-m", "memvault", "sync", "-q", "--vault", str(vault)],
                                  capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
        if len({git(v, "rev-parse", "HEAD") for v in vaults}) == 1:
            return
    raise AssertionError("the devices did not converge")


def test_three_devices_write_concurrently_and_converge(tmp_path):
    rng = random.Random(27)
    _, clis = devices(tmp_path, ("a", "b", "c"))
    vaults = [cli.vault for cli in clis]
    seed = open_vault(vaults[0])
    shared = seed.add_verbatim("The shared fact, before any device edits it")
    doomed = [seed.add_verbatim(f"Doomed fact number {r}, deleted on one device and edited on another")
              for r in range(ROUNDS)]
    seed.close()
    converge(vaults)

    acknowledged: dict[str, str] = {}  # id -> text of every fact and turn a device was told is stored
    reports, codes, writes = [], Counter(), Counter()
    for r in range(ROUNDS):
        for i, vault in enumerate(vaults):
            core = open_vault(vault)
            for k in range(2):
                words = " ".join(rng.sample(WORDS, 3))
                entry = core.add_verbatim(f"Device {i} learned in round {r} fact {k}: {words}")
                acknowledged[entry.id] = entry.text
            turns = [Entry(f"device {i} round {r} asks about {rng.choice(WORDS)}", role="user"),
                     Entry(f"device {i} round {r} answers about {rng.choice(WORDS)}", role="assistant")]
            core.add_entries(turns, "turns", operation="chat")
            acknowledged.update({t.id: t.text for t in turns})
            core.update(shared.id, text=f"The shared fact as device {i} wrote it in round {r}")
            _, text = core.read_core("USER")
            core.update_core("USER", f"{text.rstrip()}\n- device {i} in round {r}")
            if i == r % 3:
                core.delete([doomed[r].id])
            elif i == (r + 1) % 3:
                core.update(doomed[r].id, text=f"Doomed fact {r} edited by device {i} with quite different words")
            core.close()
            end_a_session(vault, [f"device {i} round {r} turn {n} about {rng.choice(WORDS)}" for n in range(3)],
                          f"device {i} summarised round {r}")
            writes.update(facts=2, turns=2, fact_edits=1, core_edits=1, sessions=1, deletes_or_edits=1)
        procs = []
        for i in rng.sample(range(3), 3):  # all three at once, in random order: pushes race
            procs.append(start_sync(vaults[i]))
            time.sleep(rng.uniform(0, 0.3))
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            codes[proc.returncode] += 1
            assert proc.returncode in (0, 5), err  # 5: others kept pushing first; the next sync goes on
            if proc.returncode == 0:
                reports.append(json.loads(out))
    converge(vaults)

    trees = [tree(v) for v in vaults]
    assert trees[0] == trees[1] == trees[2]
    for vault in vaults:
        assert_clean(vault)  # no conflict markers, fsck clean, nothing mid-merge
        live = live_fact_ids(vault)
        for memory_id in acknowledged:
            assert live.get(memory_id) == 1 and not tombstones(vault, memory_id), memory_id
        assert live.get(shared.id) == 1
        for entry in doomed:
            assert entry.id not in live and len(tombstones(vault, entry.id)) == 1  # the delete won
        core = open_vault(vault)
        index = core.index()
        assert all(index.by_id(memory_id) is not None for memory_id in acknowledged)
        for memory_id, text in acknowledged.items():
            if text.startswith("Device"):
                hits = core.search(text, None, top_k=5, score_threshold=0.0)
                assert memory_id in [hit.id for hit in hits], text
        core.close()
    merges = Counter()
    for report in reports:
        merges.update(f"{m['kind']}:{m['event']}" for m in report["merges"])
    kept_both = (vaults[0] / "core" / "USER.md").read_text().count(KEPT_BOTH)
    print(f"\nsimulation: {ROUNDS} rounds x 3 devices, writes {dict(writes)}, sync exits {dict(codes)}, "
          f"merges by kind {dict(merges)}, fallbacks {sum(len(r['fallbacks']) for r in reports)}, "
          f"kept-both blocks in core/USER.md {kept_both}")
    assert merges["entry:MERGE-KEPT-LATER"] and merges["core:MERGE-KEPT-BOTH"] and merges["summary:MERGE-UNION"]


def diverge(clis, tag: str, count: int = 12) -> None:
    """Both devices edit the same facts (each edit a driver's merge: a merge that takes a while)."""
    for n, cli in enumerate(clis):
        core = open_vault(cli.vault)
        facts = sorted((rel, item) for rel, item in core.vault.iter_entries() if isinstance(item, Entry))
        for _, entry in facts[:count]:
            core.update(entry.id, text=f"{entry.text.split(' /')[0]} / {tag} on device {n}")
        core.close()


def test_a_sync_killed_mid_way_is_finished_by_the_next(tmp_path):
    _, clis = devices(tmp_path, ("a", "b"))
    a, b = clis
    core = open_vault(a.vault)
    for n in range(12):
        core.add_verbatim(f"Fact {n} about {WORDS[n]}")
    core.close()
    converge([a.vault, b.vault])
    rng = random.Random(9)
    killed = recovered = 0
    for attempt in range(4):
        diverge([a, b], f"edit {attempt}")
        a.ok("sync")  # a's edits on the remote; b must merge them (12 driver runs)
        proc = start_sync(b.vault)
        intent = b.vault / ".memvault" / "sync.json"
        deadline = time.monotonic() + 120
        while not intent.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)  # the merge is about to move the work tree: kill it somewhere in there
        time.sleep(rng.uniform(0, 0.8))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            killed += 1
        proc.communicate()
        done = subprocess.run([sys.executable, "-m", "memvault", "sync", "--json", "--vault", str(b.vault)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        recovered += json.loads(done.stdout)["recovered"]
        assert_clean(b.vault)
        assert not (b.vault / ".memvault" / "sync.json").exists()
        converge([a.vault, b.vault])
        assert tree(a.vault) == tree(b.vault)
        assert len(live_fact_ids(b.vault)) == 12
    assert killed >= 2 and recovered >= 1  # some kills landed mid-merge, and the next sync mended them
