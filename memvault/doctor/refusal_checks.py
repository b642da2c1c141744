"""What memvault refused to store lately, counted by reason (the refusal log, memvault.curate.refusals).

Refusals are not faults: a secret or a fact the user never said must be refused. The count shows
what a model or a client keeps offering that is not kept (many "ungrounded" refusals: the model
writes facts the user did not say; many of one policy reason: the write policy's prompt at work).
Only reasons and counts are shown, never the refused texts (`memvault log -o refused` lists them).
"""

from __future__ import annotations

from collections import Counter

from memvault.doctor.report import OK, Check

REFUSAL_DAYS = 7
SHOWN_KINDS = 6


def check_refusals(vault, days: int = REFUSAL_DAYS) -> Check:
    from memvault.curate.refusals import RefusalLog

    refused = RefusalLog(vault.state_dir).read(days)
    if not refused:
        return Check("refusals", OK, f"no fact refused in the last {days} days")
    kinds = Counter(refusal.kind for refusal in refused).most_common()
    shown = ", ".join(f"{count} {kind}" for kind, count in kinds[:SHOWN_KINDS])
    more = sum(count for _, count in kinds[SHOWN_KINDS:])
    return Check("refusals", OK, f"{len(refused)} fact(s) refused in the last {days} days: {shown}"
                 + (f", {more} other" if more else ""), fix="`memvault log -o refused` lists them")
