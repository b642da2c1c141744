"""The torture rounds (docs/architecture.md, Trust boundaries: a crash at any instant loses nothing
acknowledged and leaves nothing that needs a person): `kill -9` at random instants of `memvault add`, `memvault reindex
--full` and `memvault serve` under load, each followed by the next ordinary command and checks.

Used by tests/test_torture.py (small, bounded counts) and scripts/torture.py (any counts, prints the
figures). Every process is real, killed with SIGKILL; the LLM is a fake on loopback (FactUpstream).
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tests.support.crash import FactUpstream, ServeProcess, git, indexed_ids


@dataclass
class Figures:
    """What a torture run did and found. `acknowledged`: writes whose success the caller saw (exit 0,
    HTTP 200); `lost`: acknowledged but missing, uncommitted, unindexed or unsearchable afterwards."""

    scenario: str
    kills: int = 0
    acknowledged: int = 0
    lost: int = 0
    duplicated: int = 0
    unacknowledged_kept: int = 0  # killed before it answered, yet stored whole (allowed)
    curated: int | None = None  # serve: turns whose fact was curated (the fake LLM makes one per turn)
    queued: int = 0  # serve: acknowledged turns not curated but still queued for curation (allowed)
    stop_seconds: list[float] = field(default_factory=list)  # serve: how long each signalled stop took
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)  # anything that would need a person

    def to_dict(self) -> dict:
        return asdict(self)


def word() -> str:
    """A word no other memory holds, so a lexical search finds exactly its memory."""
    return "zq" + uuid.uuid4().hex[:10]


def memvault(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memvault", *args], capture_output=True, text=True,
                          timeout=timeout)


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "memvault", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def kill_at_random(process: subprocess.Popen, rng: random.Random, longest: float) -> bool:
    """SIGKILL the process at a random instant within `longest` s; True if it was still running."""
    time.sleep(rng.uniform(0.0, longest))
    if process.poll() is not None:
        return False
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    return True


# -- the checks after a crash --------------------------------------------------------------------------------
def git_health(vault: Path) -> list[str]:
    """What a person would have to mend in git: fsck errors, lock files."""
    problems = []
    fsck = subprocess.run(["git", "-C", str(vault), "fsck", "--no-progress"], capture_output=True, text=True)
    if fsck.returncode != 0 or "error" in fsck.stderr.lower():
        problems.append(f"git fsck: {(fsck.stdout + fsck.stderr).strip()[:300]}")
    locks = [str(p) for p in (vault / ".git").rglob("*.lock")]
    if locks:
        problems.append(f"git lock files left: {locks}")
    return problems


def doctor_problems(vault: Path) -> list[str]:
    """Checks `memvault doctor` does not pass (warnings too: each asks a person for something)."""
    result = memvault("doctor", "--json", "--no-llm-check", "--vault", str(vault))
    try:
        checks = json.loads(result.stdout)["checks"]
    except (ValueError, KeyError):
        return [f"doctor failed: {result.stderr.strip()[:300]}"]
    return [f"doctor: {c['name']} {c['status']}: {c['detail'][:200]}" for c in checks
            if c["status"] not in ("ok", "skip")]


def check_acknowledged(vault: Path, acknowledged: dict[str, str], figures: Figures, role: str | None = None) -> None:
    """Every acknowledged text (its unique word -> text) is in exactly one live file, committed,
    indexed and found by search. Run after the next ordinary command has finished any recovery."""
    from memvault import settings
    from memvault.core import Memvault

    core = Memvault.open(settings.load(None, {"vault.path": str(vault)}))
    try:
        files: dict[str, list[tuple[str, str]]] = {}
        for rel, entry in core.list(role=role).entries:
            files.setdefault(entry.text, []).append((str(rel), entry.id))
        tracked = set(git(vault, "ls-files", "entries").split())
        dirty = {line[3:] for line in git(vault, "status", "--porcelain", "--untracked-files=all").splitlines()}
        in_index = indexed_ids(vault)
        for unique, text in acknowledged.items():
            found = files.get(text, [])
            if len(found) > 1:
                figures.duplicated += 1
            problem = None
            if not found:
                problem = "not on disk"
            elif found[0][0] not in tracked or found[0][0] in dirty:
                problem = "not committed"
            elif found[0][1] not in in_index:
                problem = "not indexed"
            elif found[0][1] not in {h.id for h in core.search(unique, None, score_threshold=0.0, top_k=10)}:
                problem = "not found by search"
            if problem:
                figures.lost += 1
                figures.problems.append(f"acknowledged {text!r}: {problem}")
    finally:
        core.close()


# -- kill -9 of `memvault add` ---------------------------------------------------------------------------
def torture_add(vault: Path, kills: int = 12, seed: int = 11, parallel: int = 2) -> Figures:
    """`parallel` concurrent `memvault add --no-llm` processes, one of them killed at a random instant,
    `kills` times; after each kill the next add runs, and git must need nobody."""
    rng = random.Random(seed)
    figures = Figures("add")
    started = time.monotonic()
    memvault("init", str(vault))
    acknowledged: dict[str, str] = {}
    attempted: dict[str, str] = {}
    while figures.kills < kills:
        batch = []
        for _ in range(parallel):
            unique = word()
            attempted[unique] = f"torture add {unique}"
            batch.append((unique, start("add", "--no-llm", "--json", attempted[unique], "--vault", str(vault))))
        if kill_at_random(batch[0][1], rng, 0.6):
            figures.kills += 1
        for unique, process in batch:
            process.wait(120)
            if process.returncode == 0:
                acknowledged[unique] = attempted[unique]
        unique = word()
        attempted[unique] = f"torture add {unique}"
        after = memvault("add", "--no-llm", attempted[unique], "--vault", str(vault))  # the next ordinary command
        if after.returncode != 0:
            figures.problems.append(f"the add after a kill failed: {after.stderr.strip()}")
        else:
            acknowledged[unique] = attempted[unique]
        figures.problems += git_health(vault)
    memvault("search", "--json", "torture", "--vault", str(vault))  # the next command that reads: indexes
    finish(vault, figures, acknowledged, attempted, started)
    return figures


def finish(vault: Path, figures: Figures, acknowledged: dict[str, str], attempted: dict[str, str],
           started: float, role: str | None = None) -> None:
    figures.acknowledged = len(acknowledged)
    check_acknowledged(vault, acknowledged, figures, role)
    from memvault import settings
    from memvault.core import Memvault

    core = Memvault.open(settings.load(None, {"vault.path": str(vault)}))
    stored = {entry.text for _, entry in core.list(role=role).entries}
    core.close()
    figures.unacknowledged_kept = sum(1 for u, t in attempted.items() if u not in acknowledged and t in stored)
    figures.problems += git_health(vault) + doctor_problems(vault)
    figures.seconds = round(time.monotonic() - started, 1)


# -- kill -9 of `memvault reindex --full` ---------------------------------------------------------------
def torture_reindex(vault: Path, memories: int = 300, kills: int = 3, seed: int = 12) -> Figures:
    """A vault of `memories` (committed through the library), `reindex --full` killed at a random
    instant `kills` times; after each kill the next search must find every memory."""
    from memvault import settings
    from memvault.core import Memvault
    from memvault.vault.format.entry import Entry

    rng = random.Random(seed)
    figures = Figures("reindex --full")
    started = time.monotonic()
    core = Memvault.open(settings.load(None, {"vault.path": str(vault)}), create=True)
    words = [word() for _ in range(memories)]
    core.add_entries([Entry(f"torture reindex {w}", conversation_id=f"c{i % 5}") for i, w in enumerate(words)],
                     f"{memories} memories")
    core.close()
    acknowledged = {w: f"torture reindex {w}" for w in words}  # committed: acknowledged by the library call
    build_started = time.monotonic()
    memvault("reindex", "--vault", str(vault))  # the first build: as long as a full rebuild
    build = time.monotonic() - build_started
    for _ in range(3 * kills):
        if figures.kills == kills:
            break
        process = start("reindex", "--full", "--vault", str(vault))
        time.sleep(build * rng.uniform(0.2, 0.6))  # within the rebuild (start-up is about a third of it)
        if kill_at_random(process, rng, build * 0.3):
            figures.kills += 1
        else:
            process.communicate()
        probe = rng.choice(words)
        found = memvault("search", "--json", probe, "--vault", str(vault))  # the next ordinary command
        hits = {hit["text"] for hit in json.loads(found.stdout or "[]")} if found.returncode == 0 else set()
        if acknowledged[probe] not in hits:
            figures.problems.append(f"search after a kill missed {probe} ({found.stderr.strip()[:200]})")
        figures.problems += git_health(vault)
    finish(vault, figures, acknowledged, acknowledged, started)
    return figures


# -- kill -9 of `memvault serve` under load ----------------------------------------------------------------
class Clients:
    """`count` threads chatting through the proxy without pause; each 200 is an acknowledged turn."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.acknowledged: dict[str, str] = {}
        self.attempted: dict[str, str] = {}
        self.errors: list[str] = []
        self.lock = threading.Lock()

    def run(self, server: ServeProcess, seconds: float) -> list[threading.Thread]:
        stop = time.monotonic() + seconds
        threads = [threading.Thread(target=self._chat, args=(server, stop, n)) for n in range(self.count)]
        for thread in threads:
            thread.start()
        return threads

    def warm_up(self, server: ServeProcess) -> None:
        unique = word()
        text = f"torture turn {unique} warming up"
        self.attempted[unique] = text
        if server.chat(text, timeout=120).status_code == 200:
            self.acknowledged[unique] = text

    def _chat(self, server: ServeProcess, until: float, n: int) -> None:
        import httpx

        while time.monotonic() < until:
            unique = word()
            text = f"torture turn {unique} from client {n}"
            with self.lock:
                self.attempted[unique] = text
            try:
                ok = server.chat(text, conversation=f"load{n % 2}", timeout=30).status_code == 200
            except httpx.HTTPError:
                return  # the server is gone
            except Exception as exc:  # noqa: BLE001 - a bug in the test client: say it, do not hide it
                with self.lock:
                    self.errors.append(repr(exc))
                return
            if ok:
                with self.lock:
                    self.acknowledged[unique] = text
            time.sleep(0.25)  # steady load, bounded: each turn also queues a curation


# How a round stops `memvault serve`: SIGKILL of its pid (a crash), or a signal to its process group
# (Ctrl-C in a terminal, a service manager's stop), once or twice (a person who will not wait).
STOPS = {"kill": None, "sigint-group": (signal.SIGINT, 1), "sigterm-group": (signal.SIGTERM, 1),
         "sigint-twice": (signal.SIGINT, 2)}


def stop_server(server: ServeProcess, how: str, figures: Figures) -> None:
    """Stop the server as `how` says; a group stop must end by itself, say what it finishes, and print
    no traceback; a second Ctrl-C must end it at once."""
    if STOPS[how] is None:
        server.kill()
        return
    sig, times = STOPS[how]
    seconds = server.stop_group(sig, times)
    figures.stop_seconds.append(round(seconds, 1))
    log = server.text()
    if "Traceback" in log:
        figures.problems.append(f"{how}: a traceback in the log: {log[log.index('Traceback'):][:600]}")
    if "stopped in" not in log:
        figures.problems.append(f"{how}: the server did not say it stopped (exit {server.process.returncode})")
    if times > 1 and seconds > 15:
        figures.problems.append(f"{how}: a second Ctrl-C took {seconds:.0f} s to stop the server")


def torture_serve(vault: Path, kills: int = 2, clients: int = 3, seed: int = 13, drain_timeout: float = 120,
                  how: str = "kill") -> Figures:
    """`memvault serve` with a curating fake LLM, `clients` chatting at once, stopped (`how`: STOPS) at a
    random instant `kills` times and restarted; finally stopped cleanly once curation is done."""
    from tests.support.upstream import serving

    rng = random.Random(seed)
    figures = Figures("serve" if how == "kill" else f"serve, {how}")
    started = time.monotonic()
    upstream = FactUpstream(delay=0.2)  # each curation is slow enough that some are in flight at the kill
    load = Clients(clients)
    with serving(upstream.app()) as root:
        for _ in range(kills):
            server = ServeProcess(vault, root + "/v1")  # the next ordinary command after a kill
            load.warm_up(server)  # the first answer waits for litellm's import: load starts after it
            threads = load.run(server, seconds=30)
            time.sleep(rng.uniform(1.0, 4.0))
            stop_server(server, how, figures)
            figures.kills += 1
            for thread in threads:
                thread.join(60)
            figures.problems += git_health(vault)
        server = ServeProcess(vault, root + "/v1")
        pending = wait_for_curation(vault, server, drain_timeout)
        server.stop()
    figures.problems += load.errors
    if pending:
        figures.problems.append(f"{pending} turn(s) still waiting for curation after {drain_timeout:.0f} s")
    finish(vault, figures, load.acknowledged, load.attempted, started, role="user")
    facts = {entry.text for _, entry in core_entries(vault, "memory")}
    figures.curated = sum(1 for text in load.acknowledged.values() if f"The user said: {text}." in facts)
    from memvault.curate.queue import CurationQueue

    waiting = {record.get("turn") for record in CurationQueue(vault / ".memvault").pending()}
    figures.queued = sum(1 for _, entry in core_entries(vault, "user") if entry.id in waiting)
    return figures


def core_entries(vault: Path, role: str) -> list:
    from memvault import settings
    from memvault.core import Memvault

    core = Memvault.open(settings.load(None, {"vault.path": str(vault)}))
    try:
        return list(core.list(role=role).entries)
    finally:
        core.close()


def wait_for_curation(vault: Path, server: ServeProcess, timeout: float) -> int:
    """Wait until the curation queue is empty; returns how many turns still wait."""
    from memvault.server.turns import CurationQueue

    queue = CurationQueue(vault / ".memvault")
    deadline = time.monotonic() + timeout
    while queue.pending() and time.monotonic() < deadline:
        time.sleep(0.5)
    time.sleep(1.0)  # the last curation's commit
    return len(queue.pending())


def summary(figures: Figures) -> str:
    """One line of figures, then any problem on its own line."""
    curated = "" if figures.curated is None else (
        f", curated {figures.curated}/{figures.acknowledged} ({figures.acknowledged - figures.curated} uncurated, "
        f"{figures.queued} of them still queued)")
    if figures.stop_seconds:
        curated += f", stops took {figures.stop_seconds} s"
    line = (f"torture {figures.scenario}: {figures.kills} kill(s), {figures.acknowledged} acknowledged, "
            f"{figures.lost} lost, {figures.duplicated} duplicated, {figures.unacknowledged_kept} unacknowledged "
            f"but kept{curated}, {len(figures.problems)} problem(s), {figures.seconds} s")
    return "\n".join([line, *(f"  - {p}" for p in figures.problems)])


# -- Ctrl-C to `memvault chat`'s process group mid-answer ---------------------------------------------------
def torture_chat(vault: Path, kills: int = 2, sig: int = signal.SIGINT) -> Figures:
    """`memvault chat` (its own process group, stdin a pipe): each round a turn answered (acknowledged:
    the answer printed), then one whose answer the LLM holds back, and SIGINT to the whole group
    mid-answer (Ctrl-C in the terminal: git's helpers get it too); then the chat ends (EOF). Every
    acknowledged turn must be committed, indexed and curated, with no traceback."""
    import os

    from tests.support.upstream import serving

    figures = Figures(f"chat, {signal.Signals(sig).name.lower()}-group mid-answer")
    started = time.monotonic()
    upstream = FactUpstream(slow_answer=60.0)
    acknowledged: dict[str, str] = {}
    attempted: dict[str, str] = {}
    memvault("init", str(vault))
    with serving(upstream.app()) as root:
        env = {**os.environ, "MEMVAULT_LLM_API_BASE": root + "/v1", "MEMVAULT_LLM_MODEL": "openai/fake",
               "MEMVAULT_LLM_API_KEY": "k", "MEMVAULT_LLM_MAX_RETRIES": "0"}
        for _ in range(kills):
            chat = subprocess.Popen([sys.executable, "-m", "memvault", "chat", "--vault", str(vault)], env=env,
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    start_new_session=True)
            unique = word()
            attempted[unique] = f"torture chat {unique}"
            asked = upstream.slow_asked
            chat.stdin.write(f"{attempted[unique]}\nSLOW {word()}\n")
            chat.stdin.flush()
            deadline = time.monotonic() + 120
            while upstream.slow_asked == asked and time.monotonic() < deadline and chat.poll() is None:
                time.sleep(0.05)
            os.killpg(chat.pid, sig)  # mid-answer of the second turn: the first was answered
            figures.kills += 1
            if sig != signal.SIGINT:  # a service manager's stop: the chat leaves by itself, stdin still open
                try:
                    chat.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    figures.problems.append("chat did not leave within 120 s of SIGTERM")
            out, err = chat.communicate("/exit\n" if chat.poll() is None else None, timeout=300)
            if chat.returncode == 0 and "ok" in out:
                acknowledged[unique] = attempted[unique]
            if "Traceback" in err or chat.returncode != 0:
                figures.problems.append(f"chat exited {chat.returncode}: {err.strip()[-600:]}")
            figures.problems += git_health(vault)
    memvault("search", "--json", "torture", "--vault", str(vault))  # the next command that reads: indexes
    finish(vault, figures, acknowledged, attempted, started, role="user")
    facts = {entry.text for _, entry in core_entries(vault, "memory")}
    figures.curated = sum(1 for text in acknowledged.values() if f"The user said: {text}." in facts)
    return figures
