"""Redaction on both sides: secrets caught, ordinary texts left alone, LoCoMo untouched.

    PYTHONPATH=. python scripts/bench_redaction.py [--locomo /work/shared/data/locomo/locomo10.json] [--no-vault]

- LoCoMo: redactions in its 5,882 real conversation turns (none holds a secret: the count must be 0).
- The tuned set (scripts/redaction_corpus.py: a seeded generator over hand-written shapes, plus
  tests/support/secret_samples.py) and three held-out sets written after the detector
  (scripts/redaction_heldout*.py; see SETS for which were seen), each: secrets caught (the value
  gone from the text); ordinary texts people who write code keep, altered.
- Through the add path (unless --no-vault): every text goes through `Memvault.add` (the gate every
  door passes) into a real vault; then the vault's files, its index (SQLite and WAL) and `git log -p
  --all` are searched for each secret's value, and each ordinary text's stored form is compared with
  what was given (refused or altered counts against it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import redaction_corpus  # noqa: E402
import redaction_heldout  # noqa: E402
import redaction_heldout2  # noqa: E402
import redaction_heldout3  # noqa: E402

from memvault.text.redact import Redactor  # noqa: E402

DEFAULT_LOCOMO = "/work/shared/data/locomo/locomo10.json"
# Each held-out set was written before it was first run, then the gaps it showed were fixed; their
# first runs: 24/42 secrets caught, 0/250 ordinary texts altered; 26/34, 5/160; 24/26, 1/120.
SETS = {"tuned": redaction_corpus, "held-out 1": redaction_heldout, "held-out 2": redaction_heldout2,
        "held-out 3": redaction_heldout3}


def locomo_turns(path: Path) -> list[str]:
    turns = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        for key, value in conversation.items():
            if key.startswith("session_") and isinstance(value, list):
                turns += [turn["text"] for turn in value if turn.get("text")]
    return turns


def detector(name: str, module, redactor: Redactor) -> dict:
    secrets, ordinary = module.secrets(), module.ordinary()
    missed = [(shape, text) for shape, _, text, secret in secrets if secret in redactor.redact(text)]
    altered = [(kind, redactor.redact(text)) for kind, text in ordinary if redactor.redact(text) != text]
    print(f"{name}: {len(secrets) - len(missed)}/{len(secrets)} secrets caught "
          f"({100 * (len(secrets) - len(missed)) / len(secrets):.1f}%), {len({s for s, *_ in secrets})} shapes, "
          f"{len({lang for _, lang, *_ in secrets if lang != 'code'})} languages and code; "
          f"{len(altered)}/{len(ordinary)} ordinary texts altered ({100 * len(altered) / len(ordinary):.2f}%)")
    for shape, text in missed:
        print(f"  missed {shape}: {text[:100]!r}")
    for kind, text in altered[:20]:
        print(f"  altered {kind}: {text[:100]!r}")
    return {"secrets": secrets, "ordinary": ordinary, "missed": len(missed), "altered": len(altered)}


def leaked(secrets: list[tuple[str, str, str, str]], blob: str) -> list[str]:
    """The values found in `blob`. A short value (a PIN) is searched with the words before it in its
    text, as a text that kept it would hold it: "4821" alone turns up in ports, base64 and the index's
    binary pages."""
    found = []
    for _, _, text, value in secrets:
        needle = value if len(value) >= 8 else text[max(0, text.index(value) - 6):text.index(value) + len(value)]
        if needle in blob and re.search(r"(?<![0-9A-Za-z])" + re.escape(needle) + r"(?![0-9A-Za-z])", blob):
            found.append(value)
    return found


def through_the_add_path(sets: dict[str, dict]) -> int:
    """Every text of every set through Memvault.add into one vault; returns the failures."""
    from memvault import settings
    from memvault.core import Memvault

    root = Path(tempfile.mkdtemp(prefix="bench-redaction-")) / "vault"
    core = Memvault.open(settings.load(None, {"vault.path": str(root)}), create=True)
    started = time.perf_counter()
    outcome: dict[str, Counter] = {}
    try:
        for name, found in sets.items():
            counts = outcome.setdefault(name, Counter())
            for _, _, text, _ in found["secrets"]:
                core.add(text, conversation=f"secrets-{name}", infer=False)
            for _, text in found["ordinary"]:
                result = core.add(text, conversation=f"ordinary-{name}", infer=False)
                stored = [event.new_memory for event in result.events if event.event == "ADD"]
                counts["refused" if not stored else "kept" if stored == [core.clean_text(text)] else "altered"] += 1
        core.reindex()
    finally:
        core.close()
    seconds = time.perf_counter() - started
    files = b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts)
    log = subprocess.run(["git", "-C", str(root), "log", "--all", "-p"], capture_output=True, check=True).stdout
    blob = (files + log).decode("utf-8", "replace")
    index = [p.name for p in (root / ".memvault").glob("index.sqlite*")]
    failures = 0
    print(f"through Memvault.add into {root} ({seconds:.0f} s; searched: the files, {', '.join(sorted(index))}, "
          f"git log -p --all)")
    for name, found in sets.items():
        values = [secret for _, _, _, secret in found["secrets"]]
        leaks = leaked(found["secrets"], blob)
        counts = outcome[name]
        print(f"  {name}: {len(values) - len(leaks)}/{len(values)} secret values in 0 bytes of the vault or its "
              f"history ({100 * (len(values) - len(leaks)) / len(values):.1f}%); ordinary texts: {counts['kept']} kept "
              f"as written, {counts['altered']} altered, {counts['refused']} refused")
        for value in leaks:
            print(f"    leaked: {value[:40]!r}")
        failures += (len(leaks) > 0.02 * len(values)) + (counts["altered"] + counts["refused"] > 0.005 * len(
            found["ordinary"]))
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", default=DEFAULT_LOCOMO)
    parser.add_argument("--no-vault", action="store_true", help="the detector alone, not the add path")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}")
    redactor = Redactor()
    turns = locomo_turns(Path(args.locomo))
    started = time.perf_counter()
    flagged = [(turn, finding) for turn in turns for finding in redactor.find(turn)]
    elapsed = time.perf_counter() - started
    print(f"LoCoMo: {len(flagged)} redactions in {len(turns):,} turns ({elapsed / len(turns) * 1e6:.0f} us a turn)")
    for turn, finding in flagged[:20]:
        print(f"  {finding.kind}: {turn[finding.start:finding.end]!r} in {turn[:80]!r}")
    sets = {name: detector(name, module, redactor) for name, module in SETS.items()}
    failures = len(flagged) + sum(found["missed"] > 0.02 * len(found["secrets"])
                                  or found["altered"] > 0.005 * len(found["ordinary"]) for found in sets.values())
    if not args.no_vault:
        failures += through_the_add_path(sets)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
