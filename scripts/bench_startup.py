"""Start-up latency of real `memvault` processes, for the README.

    python scripts/bench_startup.py [--size 10000] [--runs 10] [--vault PATH] [--instructions]

Times, as real subprocesses (best and median of --runs, after one warm-up run), both wall clock and
CPU (user + sys of the child, which a busy machine inflates less than wall time):
- `memvault --help` and `memvault add --help`    target < 0.1 s
- bash completion requests (TAB after `memvault s`, `show`, `list -c`)   target < 0.1 s: the shell re-runs
  memvault on every TAB
- `memvault list -n 20` on a vault of --size files (parses every file, prints the newest 20), and a probe
  proves `memvault list` imports no model library
- a cold `memvault search` on that vault         target < 1.5 s (index already built)

The help and completion rows are answered by the program's fast path (memvault/cli/entry.py: prebuilt texts,
no typer); the import time of `memvault.cli.app` (typer and every command, what any other command pays) is
printed as `python -X importtime` sums it (the median of --runs), and with --instructions the instructions one
run of each start-up row executes (valgrind), which load does not change.

The vault is synthetic (scripts/synth_vault.py), kept in the temporary folder for the next run, index included.
Bytecode is cached in a temporary folder, as an installed package would have it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

BIN = Path(sys.executable).parent / "memvault"
HEAVY = ["onnxruntime", "tokenizers", "numpy", "sqlite_vec", "apsw", "litellm", "torch", "fastapi", "uvicorn"]
PROBE = """
import json, sys
sys.argv = ["memvault", *sys.argv[1:]]
from memvault.cli.app import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


def run_once(cmd: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """(wall seconds, CPU seconds of the child, stdout) of one process."""
    started = time.perf_counter()
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT) as child:
        out = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, out


def measure(cmd: list[str], env: dict[str, str], runs: int) -> dict[str, float]:
    run_once(cmd, env)  # warm-up: bytecode cache, page cache
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu, _ = run_once(cmd, env)
        walls.append(wall)
        cpus.append(cpu)
    return {"best": min(walls), "median": statistics.median(walls), "cpu_best": min(cpus),
            "cpu_median": statistics.median(cpus)}


def import_time(env: dict[str, str], runs: int) -> tuple[float, int]:
    """(median seconds, modules) of importing the CLI, as `python -X importtime` adds up its modules' own times."""
    totals, count = [], 0
    for _ in range(runs + 1):  # the first run writes the bytecode cache
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", "import memvault.cli.app"], env=env,
                              capture_output=True, text=True, cwd=ROOT, check=True)
        rows = [line.split("|")[0] for line in done.stderr.splitlines() if line.startswith("import time:")]
        selves = [int(row.split(":")[1]) for row in rows[1:]]  # rows[0] is the header
        totals.append(sum(selves) / 1e6)
        count = len(selves)
    return statistics.median(totals[1:]), count


def instructions(cmd: list[str], env: dict[str, str]) -> float:
    """Millions of instructions one run executes (valgrind's callgrind): a busy machine slows a process
    down but does not change this count, so figures from a loaded machine still compare."""
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd], env=env,
                          capture_output=True, text=True, cwd=ROOT)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if found is None:
        raise SystemExit(f"valgrind counted nothing for {' '.join(cmd)}: {done.stderr.strip()[-300:]}")
    return int(found.group(1).replace(",", "")) / 1e6


def prepare_vault(path: Path, size: int, env: dict[str, str]) -> None:
    from synth_vault import make

    if not (path / "entries").is_dir():
        print(f"making a synthetic vault of {size} memories in {path} ...", file=sys.stderr)
        # Its own repository first: inside another one (this checkout), Vault.init would use that.
        path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
        make(path, size)
    started = time.perf_counter()
    subprocess.run([str(BIN), "reindex", "--quiet", "--vault", str(path)], env=env, check=True)
    print(f"index ready ({time.perf_counter() - started:.1f} s)", file=sys.stderr)


def loaded_modules(args: list[str], env: dict[str, str]) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, cwd=ROOT)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--instructions", action="store_true", help="also count the instructions of one run of "
                        "--help and of each completion with valgrind (slow: about 10 s a row; no load changes it)")
    parser.add_argument("--vault", type=Path, help="an existing vault to use (default: memvault-bench-startup-SIZE "
                        "in the temporary folder, kept for the next run)")
    args = parser.parse_args()
    vault = (args.vault or Path(tempfile.gettempdir()) / f"memvault-bench-startup-{args.size}").resolve()
    cache = tempfile.mkdtemp(prefix="memvault-pyc-")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "MEMVAULT_VAULT")}
    env.update(PYTHONPYCACHEPREFIX=cache, HF_HUB_OFFLINE="1", LITELLM_LOCAL_MODEL_COST_MAP="True",
               MEMVAULT_VAULT=str(vault), COLUMNS="120")
    prepare_vault(vault, args.size, env)
    count = sum(1 for _ in (vault / "entries").rglob("*.md"))
    load_before = os.getloadavg()

    probe = loaded_modules(["list", "-n", "1"], env)
    heavy = [m for m in HEAVY if m in probe]
    if heavy:
        raise SystemExit(f"`memvault list` imported {', '.join(heavy)}: listing must not load a model")

    complete = {**env, "_MEMVAULT_COMPLETE": "complete_bash"}
    complete_command = {**complete, "COMP_WORDS": "memvault s", "COMP_CWORD": "1"}
    complete_id = {**complete, "COMP_WORDS": "memvault show 1", "COMP_CWORD": "2"}
    complete_conversation = {**complete, "COMP_WORDS": "memvault list -c c", "COMP_CWORD": "3"}
    for request in (complete_command, complete_id, complete_conversation):
        if not run_once([str(BIN)], request)[2].strip():
            raise SystemExit(f"completing `{request['COMP_WORDS']}` offered nothing")
    imported, modules = import_time(env, args.runs)
    quick = [  # (row, command, environment): what --help and every TAB cost, target < 0.1 s
        ("memvault --help", [str(BIN), "--help"], env),
        ("memvault add --help", [str(BIN), "add", "--help"], env),
        ("completion: memvault s<TAB> (commands)", [str(BIN)], complete_command),
        (f"completion: memvault show 1<TAB> (ids, {count} files)", [str(BIN)], complete_id),
        ("completion: memvault list -c c<TAB>", [str(BIN)], complete_conversation),
    ]
    rows = [(name, measure(cmd, run_env, args.runs), 0.1,
             instructions(cmd, run_env) if args.instructions else None) for name, cmd, run_env in quick]
    rows += [
        (f"memvault list -n 20 ({count} files)", measure([str(BIN), "list", "-n", "20"], env, args.runs), None, None),
        (f"memvault search, cold ({count} files)", measure([str(BIN), "search", "who likes green tea"], env,
                                                           args.runs), 1.5, None),
    ]
    load_after = os.getloadavg()
    print(f"\nmemvault start-up, {args.runs} runs each after a warm-up; Python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, load average {load_before[0]:.2f} before, {load_after[0]:.2f} after\n")
    print("| command | best | median | CPU best | CPU median | instructions | target |")
    print("|---|---|---|---|---|---|---|")
    for name, m, target, count_of in rows:
        verdict = "" if target is None else f"< {target} s " + ("ok" if m["best"] < target else "MISSED")
        print(f"| {name} | {m['best']:.3f} s | {m['median']:.3f} s | {m['cpu_best']:.3f} s | "
              f"{m['cpu_median']:.3f} s | {'' if count_of is None else f'{count_of:.0f} M'} | {verdict} |")
    print(f"\n`import memvault.cli.app`: {imported:.3f} s of import time (`python -X importtime`, summed; median), "
          f"{modules} modules")
    print(f"`memvault list` imported none of: {', '.join(HEAVY)}")


if __name__ == "__main__":
    main()
