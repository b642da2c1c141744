"""Redaction's two figures: false positives on every LoCoMo turn (5,882 real conversation turns, none
holding a secret: the count must be 0), and the catch rate on the test set of pasted secrets
(tests/support/secret_samples.py). Also times redaction per turn.

    PYTHONPATH=. python scripts/bench_redaction.py [--locomo /work/shared/data/locomo/locomo10.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memvault.vault.redact import Redactor  # noqa: E402
from tests.support.secret_samples import samples  # noqa: E402

DEFAULT_LOCOMO = "/work/shared/data/locomo/locomo10.json"


def locomo_turns(path: Path) -> list[str]:
    turns = []
    for sample in json.loads(path.read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        for key, value in conversation.items():
            if key.startswith("session_") and isinstance(value, list):
                turns += [turn["text"] for turn in value if turn.get("text")]
    return turns


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", default=DEFAULT_LOCOMO)
    args = parser.parse_args()
    redactor = Redactor()
    turns = locomo_turns(Path(args.locomo))
    started = time.perf_counter()
    flagged = [(turn, finding) for turn in turns for finding in redactor.find(turn)]
    elapsed = time.perf_counter() - started
    print(f"LoCoMo: {len(flagged)} redactions in {len(turns):,} turns "
          f"({elapsed / len(turns) * 1e6:.0f} us a turn)")
    for turn, finding in flagged[:20]:
        print(f"  {finding.kind}: {turn[finding.start:finding.end]!r} in {turn[:80]!r}")
    cases = samples()
    missed = [(kind, text) for kind, text, secret in cases if secret in redactor.redact(text)]
    caught = {kind for kind, _, _ in cases} - {kind for kind, _ in missed}
    print(f"test set: {len(cases) - len(missed)}/{len(cases)} secrets caught, {len(caught)} kinds")
    for kind, text in missed:
        print(f"  missed {kind}: {text[:100]!r}")
    return 0 if not flagged and not missed else 1


if __name__ == "__main__":
    raise SystemExit(main())
