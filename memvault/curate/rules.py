"""Procedural rules, the pure half: the safety guard, and asking an LLM which rules a new one replaces.

A rule is a durable instruction to the assistant ("answer in British English"). Two guards are hard
and local, whatever an LLM says: a request to drop safety ("skip the safety check", "ignore your
guidelines") is never stored, and a rule already in force (same words) is not stored twice.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from memvault.curate import prompts
from memvault.curate.jsonish import parse_json
from memvault.curate.llm import LLM
from memvault.errors import LLMError

_VERBS = (r"skip|skipping|ignore|ignoring|disable|disabling|bypass|bypassing|circumvent|override|overriding|"
          r"disregard|disregarding|omit|omitting|leave out|set aside|put aside|"
          r"turn(?:ing)? off|switch(?:ing)? off|drop|dropping|remove|removing|forget|get rid of|deactivate|"
          r"lift|relax|stop (?:using|applying|following|doing|running)|"
          r"(?:do not|don't|dont|never) (?:use|apply|follow|do|run|bother with|care about)")
_GUARDS = (r"safety|safe(?:ty)? (?:checks?|guidelines?|rules?|filters?|polic(?:y|ies))|safeguards?|guard ?rails?|"
           r"content (?:filters?|polic(?:y|ies))|moderation|ethic(?:s|al (?:guidelines|rules|limits))|"
           r"(?:your|the|all) (?:guidelines|policies|restrictions|limits)|censorship|refusals?")
SAFETY_DROP = re.compile(
    rf"\b(?:{_VERBS})\b[\w\s',-]{{0,40}}?\b(?:{_GUARDS})\b"
    rf"|\b(?:without|no|zero)(?: any| more| the)?\s+(?:{_GUARDS})\b"
    rf"|\b(?:{_GUARDS})\b[\w\s',-]{{0,30}}?"
    r"\b(?:off|disabled|optional|(?:are|is) (?:no longer|not) (?:needed|required))\b"
    r"|\bno (?:restrictions|limits|rules)\b|\bjail ?break|\bdeveloper mode\b|\bDAN mode\b|\bdo anything now\b"
    r"|\bunfiltered\b|\buncensored\b",
    re.IGNORECASE,
)
# "Never skip the safety check" asks for safety: a negation just before the verb turns it around.
NEGATED = re.compile(r"\b(?:never|not|don't|dont|do not|no)\s+$", re.IGNORECASE)


# Letters that look Latin but are not (Cyrillic, Greek): "ѕkip" must read as "skip".
_LOOKALIKES = str.maketrans("аеорсуххіјѕԁһкмтвнΑΒΕΗΙΚΜΝΟΡΤΧΥΖаο", "aeopcyxxijsdhkmtbhABEHIKMNOPTXYZao")


def plain(text: str) -> str:
    """`text` as the guard reads it: compatibility forms folded (full-width letters), invisible
    characters (zero-width spaces, soft hyphens) removed, look-alike letters made Latin, one space."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf").translate(_LOOKALIKES)
    return " ".join(text.split())


def safety_problem(text: str) -> str | None:
    """Why `text` must never be stored as a rule (it asks to drop a safety measure), or None."""
    text = plain(text)
    for found in SAFETY_DROP.finditer(text):
        if not NEGATED.search(text[max(0, found.start() - 12):found.start()]):
            return f"a request to drop safety is never stored as a rule ({found.group(0).strip()!r})"
    return None


def same_rule(left: str, right: str) -> bool:
    """The same rule written again: equal once case, spacing and end punctuation are ignored."""
    def key(text: str) -> str:
        return " ".join(text.casefold().split()).rstrip(".!")

    return key(left) == key(right)


@dataclass
class RuleReview:
    """What the LLM says about a new rule: the rule in force it restates, the rules it replaces."""

    same_as: int | None = None  # position in the rules shown
    replaces: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def review_rule(llm: LLM | None, new_rule: str, active: list[str]) -> RuleReview:
    """Ask the LLM whether `new_rule` restates or replaces some of the `active` rules (numbered by
    position). Never raises LLMError: a failure or an unusable answer replaces nothing, and says so."""
    if llm is None or not active:
        return RuleReview()
    user = prompts.fill(prompts.RULE_REVIEW_INPUT, rules=prompts.numbered(active), rule=new_rule)
    try:
        answer = llm.complete([{"role": "system", "content": prompts.RULE_REVIEW}, {"role": "user", "content": user}],
                              json_schema=prompts.RULE_REVIEW_SCHEMA)
    except LLMError as exc:
        return RuleReview(notes=[f"LLM failed ({exc}): no rule replaced"])
    value = parse_json(answer)
    if not isinstance(value, dict):
        return RuleReview(notes=["LLM answer unusable: no rule replaced"])
    offered = range(len(active))
    same = position(value.get("same_as"), offered)
    replaced = value.get("replaces") if isinstance(value.get("replaces"), list) else []
    positions = [p for p in (position(item, offered) for item in replaced) if p is not None]
    return RuleReview(same_as=same, replaces=list(dict.fromkeys(p for p in positions if p != same)))


def position(value, offered: range) -> int | None:
    """A position the LLM gave, if it is one of those offered (ids not offered are ignored)."""
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return number if number in offered else None
