"""The write policy for chat and proxy turns (CoALA): which extracted candidates become memories, and when.

Each candidate gets one label:
- `now`: stored with the turn that said it;
- `hold`: kept in the session buffer (memvault.core.session_buffer) and judged at session end;
- `repeat`: stored only if the same candidate comes back in the session (token-set Jaccard >= 0.85);
- `drop`: not stored, and reported (a DROP event with the reason).

The LLM labels candidates (structured output); local guards come first and are hard: an instruction
to skip safety checks, or a secret (a password, a key, a token), is dropped whatever the LLM says and
never reaches it. An explicit `memvault add` or `Memory.add` does not go through here unless asked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memvault.curate.extract import clip
from memvault.curate.jsonish import as_list, parse_json, strip_thinking
from memvault.curate.llm import LLM
from memvault.errors import LLMError
from memvault.text.redact import looks_secret

LABELS = ("now", "hold", "repeat", "drop")
KINDS = ("fact", "rule")  # a rule: a durable instruction to the assistant ("answer in British English")
SAME_CANDIDATE = 0.85  # token-set Jaccard at or above which two candidates are the same one
TRANSCRIPT_CHARS = 400  # per user turn shown to the session-end calls
TRANSCRIPT_TURNS = 30

# Hard guards: a candidate matching one is dropped before any LLM sees it.
SAFETY_SKIP = re.compile(
    r"\b(skip|skipping|disable|disabling|ignore|ignoring|bypass|bypassing|turn(?:ing)? off|switch(?:ing)? off|"
    r"drop|dropping|remove|removing|stop|without|no more|never (?:do|run|apply))\b"
    r"[^.!?\n]{0,40}?\b(safety|guardrails?|content (?:filters?|polic(?:y|ies))|moderation|safeguards?|"
    r"ethic(?:s|al)(?: guidelines)?|restrictions)\b", re.IGNORECASE)
WORD = re.compile(r"\w+", re.UNICODE)

LABEL_SCHEMA = {
    "type": "object",
    "properties": {"labels": {"type": "array", "items": {
        "type": "object",
        "properties": {"index": {"type": "integer"}, "label": {"type": "string", "enum": list(LABELS)},
                       "kind": {"type": "string", "enum": list(KINDS)}, "reason": {"type": "string"}},
        "required": ["index", "label"]}}},
    "required": ["labels"],
}
PROMOTE_SCHEMA = {
    "type": "object",
    "properties": {"decisions": {"type": "array", "items": {
        "type": "object",
        "properties": {"index": {"type": "integer"}, "promote": {"type": "boolean"}, "reason": {"type": "string"}},
        "required": ["index", "promote"]}}},
    "required": ["decisions"],
}
LABEL_PROMPT = """\
You decide what a long-term memory keeps from a conversation. For each numbered candidate, answer one label:
- "now": a durable fact about the user or a standing instruction, clearly meant (name, preferences, "always ...").
- "hold": may matter, but only the rest of the session can tell (a passing mood, a tentative plan).
- "repeat": worth keeping only if the user says it again in this session.
- "drop": small talk, a question, something about the assistant, or anything not worth remembering.
Also give "kind": "rule" for an instruction to the assistant about how to behave, else "fact".
Answer JSON only: {"labels": [{"index": 0, "label": "now", "kind": "fact", "reason": "short"}]}"""
PROMOTE_PROMPT = """\
A session has ended. Below are candidates held during it and what the user said. For each candidate, decide
whether the session supports keeping it as a long-term memory ("promote": true) or not (false).
Answer JSON only: {"decisions": [{"index": 0, "promote": true, "reason": "short"}]}"""
SESSION_PROMPT = """\
Summarise this conversation session in 2 to 4 sentences: what the user wanted, how it went, and what was
settled or left open. Write in the third person ("The user ..."). Answer with the summary only."""


@dataclass
class Candidate:
    """One extracted candidate and what the policy decided for it."""

    text: str
    label: str = "hold"
    kind: str = "fact"
    reason: str = ""


def guard(text: str, mentions: bool = True) -> str | None:
    """Why a candidate must never be stored (hard, no LLM), or None. `mentions`: a text that names or
    holds a secret is refused (what a model extracted); without it, only a request to skip safety
    (what a person or a client gives: a secret's value in it is redacted, the rest kept)."""
    from memvault.curate.rules import plain, safety_problem

    if safety_problem(text) or SAFETY_SKIP.search(plain(text)):  # the rule writer's guard, and more
        return "an instruction to skip safety is never stored"
    if mentions and looks_secret(text):  # every secret pattern lives in text/redact.py
        return "a secret (password, key or token) is never stored"
    return None


def tokens(text: str) -> frozenset[str]:
    return frozenset(word.casefold() for word in WORD.findall(text))


def jaccard(a: str, b: str) -> float:
    """Token-set Jaccard similarity of two texts (1.0 for two empty ones)."""
    left, right = tokens(a), tokens(b)
    if not left and not right:
        return 1.0
    return len(left & right) / len(left | right)


def same_candidate(a: str, b: str) -> bool:
    return jaccard(a, b) >= SAME_CANDIDATE


def label_candidates(llm: LLM, candidates: list[str], message: str) -> list[Candidate]:
    """Each candidate labelled: guards first (hard), then the LLM for the rest. A candidate the LLM's
    answer leaves unlabelled is stored now (as without a policy: the extractor chose it); when the LLM
    fails, every candidate is held, to be judged at session end: never lost, never stored unjudged."""
    labelled = [Candidate(text) for text in candidates]
    asked: list[Candidate] = []
    for candidate in labelled:
        reason = guard(candidate.text)
        if reason:
            candidate.label, candidate.reason = "drop", reason
        else:
            asked.append(candidate)
    if not asked:
        return labelled
    try:
        answer = llm.complete(label_messages([c.text for c in asked], message), json_schema=LABEL_SCHEMA)
    except LLMError as exc:
        for candidate in asked:
            candidate.reason = f"LLM failed ({exc}): held until the session ends"
        return labelled
    for candidate in asked:  # unlabelled in the answer: the extractor judged it worth keeping
        candidate.label, candidate.reason = "now", "not labelled by the LLM: stored as extracted"
    for index, item in numbered(answer, "labels"):
        if 0 <= index < len(asked):
            label, kind = str(item.get("label", "")).lower(), str(item.get("kind", "fact")).lower()
            asked[index].label = label if label in LABELS else "hold"
            asked[index].kind = kind if kind in KINDS else "fact"
            asked[index].reason = str(item.get("reason") or "")[:200]
    return labelled


def numbered(answer: str | None, key: str) -> list[tuple[int, dict]]:
    """The (index, item) pairs of a structured answer {key: [{"index": n, ...}]}; [] when unreadable."""
    items = as_list(parse_json(answer), (key,)) or []
    pairs = []
    for item in items:
        if isinstance(item, dict):
            try:
                pairs.append((int(item.get("index")), item))
            except (TypeError, ValueError):
                continue
    return pairs


def label_messages(candidates: list[str], message: str) -> list[dict]:
    listed = "\n".join(f"{i}. {text}" for i, text in enumerate(candidates))
    return [{"role": "system", "content": LABEL_PROMPT},
            {"role": "user", "content": f"The user said:\n{clip(message, 2000)}\n\nCandidates:\n{listed}"}]


def promoted(llm: LLM | None, held: list[str], user_turns: list[str]) -> tuple[list[bool], str | None]:
    """Which held candidates the session supports (one bool each), and a note when the LLM could not
    judge: then every held candidate is promoted, since what the user said is not to be lost silently."""
    if not held:
        return [], None
    if llm is None:
        return [True] * len(held), "no LLM to judge held candidates: all promoted"
    listed = "\n".join(f"{i}. {text}" for i, text in enumerate(held))
    messages = [{"role": "system", "content": PROMOTE_PROMPT},
                {"role": "user", "content": f"Candidates:\n{listed}\n\nThe user said:\n{transcript(user_turns)}"}]
    try:
        answer = llm.complete(messages, json_schema=PROMOTE_SCHEMA)
    except LLMError as exc:
        return [True] * len(held), f"LLM failed ({exc}): held candidates promoted"
    decisions = dict.fromkeys(range(len(held)), False)
    for index, item in numbered(answer, "decisions"):
        if index in decisions:
            decisions[index] = item.get("promote") is True or str(item.get("promote")).lower() == "true"
    return [decisions[i] for i in range(len(held))], None


def session_summary(llm: LLM | None, user_turns: list[str]) -> str:
    """The session's arc in a few sentences; the user's first words per turn when the LLM fails."""
    answer = ""
    if llm is not None:
        try:
            answer = strip_thinking(llm.complete([{"role": "system", "content": SESSION_PROMPT},
                                                  {"role": "user", "content": transcript(user_turns)}]) or "")
        except LLMError:
            answer = ""
    if answer.strip():
        return answer.strip()
    return f"A session of {len(user_turns)} user turns: " + "; ".join(clip(" ".join(t.split()), 80)
                                                                      for t in user_turns[:TRANSCRIPT_TURNS])


def transcript(user_turns: list[str]) -> str:
    return "\n".join(f"- {clip(' '.join(t.split()), TRANSCRIPT_CHARS)}" for t in user_turns[-TRANSCRIPT_TURNS:])
