"""Kill memvault with SIGKILL at random instants and count what was lost (issue 11, "What must be shown").

    python scripts/torture.py                      # the three scenarios, the counts of tests/test_torture.py
    python scripts/torture.py --add-kills 50 --reindex-kills 10 --serve-kills 5 --json
    python scripts/torture.py --add-kills 0 --reindex-kills 0 --serve-stops sigint-group,sigterm-group,sigint-twice

Each scenario runs in a fresh vault under a temporary folder (its own HOME, no git identity, loopback
only) and prints its figures: kills, acknowledged writes, lost, duplicated, problems left for a person.
The test suite runs the same code (tests/support/torture.py) with small counts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def isolated_environment(home: Path) -> None:
    """As the tests isolate themselves: nothing of the user's HOME, git identity or config is used."""
    os.environ["HOME"] = str(home)
    for var, sub in (("XDG_CONFIG_HOME", ".config"), ("XDG_DATA_HOME", ".local/share"), ("XDG_CACHE_HOME", ".cache")):
        os.environ[var] = str(home / sub)
    for var in list(os.environ):
        if var.startswith(("MEMVAULT_", "GIT_")):
            del os.environ[var]
    os.environ.update({"GIT_CONFIG_GLOBAL": str(home / "no-gitconfig"), "GIT_CONFIG_NOSYSTEM": "1",
                       "HF_HUB_OFFLINE": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [sys.path[0], os.environ.get("PYTHONPATH")]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--add-kills", type=int, default=12)
    parser.add_argument("--reindex-kills", type=int, default=3)
    parser.add_argument("--reindex-memories", type=int, default=300)
    parser.add_argument("--serve-kills", type=int, default=2)
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--serve-stops", default="kill",
                        help="how serve is stopped, comma-separated rounds: kill (SIGKILL of its pid), sigint-group, "
                             "sigterm-group (the signal to its whole process group: Ctrl-C, a service stop), "
                             "sigint-twice (Ctrl-C, then Ctrl-C again)")
    parser.add_argument("--chat-kills", type=int, default=0, help="Ctrl-C to `memvault chat`'s group mid-answer")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()

    from tests.support import torture

    figures = []
    with tempfile.TemporaryDirectory(prefix="memvault-torture-") as folder:
        base = Path(folder)
        isolated_environment(base / "home")
        if args.add_kills:
            figures.append(torture.torture_add(base / "add", kills=args.add_kills, seed=args.seed))
        if args.reindex_kills:
            figures.append(torture.torture_reindex(base / "reindex", memories=args.reindex_memories,
                                                   kills=args.reindex_kills, seed=args.seed + 1))
        for how in filter(None, args.serve_stops.split(",")) if args.serve_kills else ():
            if how not in torture.STOPS:
                parser.error(f"--serve-stops: {how!r} is not one of {', '.join(torture.STOPS)}")
            figures.append(torture.torture_serve(base / f"serve-{how}", kills=args.serve_kills,
                                                 clients=args.clients, seed=args.seed + 2, how=how))
        if args.chat_kills:
            figures.append(torture.torture_chat(base / "chat", kills=args.chat_kills))
    if args.json:
        print(json.dumps([f.to_dict() for f in figures], indent=2))
    else:
        for f in figures:
            print(torture.summary(f))
    sys.exit(1 if any(f.lost or f.duplicated or f.problems for f in figures) else 0)


if __name__ == "__main__":
    main()
