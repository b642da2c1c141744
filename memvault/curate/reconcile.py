"""Reconciliation: new facts against the nearest stored facts -> planned ADD / UPDATE / DELETE / NONE.

Pure decision logic around one LLM call; the caller fetches neighbours before and applies the plan
after (ADD makes a new memory, UPDATE rewrites the memory in place under its id, DELETE is soft).

Safeguards (docs/architecture.md, Curation), in the order they apply:
- an exact duplicate (same md5 as a stored fact, or repeated among the new facts) is NONE, unasked;
- a fact with no stored neighbours is ADDed unasked; with none for any fact the LLM is not called;
- an LLM failure, or an answer holding no list of events, ADDs every remaining fact as given;
- events naming ids that were not offered are dropped (a DROP with the reason); an UPDATE or DELETE
  of a memory already claimed by an earlier event is ignored (the first wins); an UPDATE with empty
  text counts as NONE;
- an ADD or UPDATE whose text says more than its new fact (and, for an UPDATE, the stored memory)
  is dropped (curate.grounding.rewrite_problem): the LLM may merge and rephrase, never invent;
- a fact no ADD, UPDATE or NONE accounts for (e.g. when the answer holds only deletes, or nothing)
  is ADDed as given: nothing the user said is silently lost.
Every degradation leaves a line in `Plan.notes` for the caller to report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memvault.curate import prompts
from memvault.curate.grounding import clip_quote, rewrite_problem
from memvault.curate.jsonish import as_list, parse_json
from memvault.curate.llm import LLM
from memvault.curate.voice import user_fact
from memvault.errors import LLMError
from memvault.vault.format.entry import text_hash

EVENTS = ("ADD", "UPDATE", "DELETE", "NONE")
# The semantic layer's words for the same decisions: a restated fact bumps the stored one (NONE), a
# changed fact supersedes it (UPDATE), a fact true beside it coexists with it (ADD).
EVENTS_PER_FACT = 2  # a fact may give two events (DELETE an old memory and ADD the new fact)
SYNONYMS = {"BUMP": "NONE", "SUPERSEDE": "UPDATE", "COEXIST": "ADD"}
EVENT_LIST_KEYS = ("memory", "events", "decisions", "actions", "memories", "results")
# Words too common to tie an event to a fact when the LLM left out the fact's number.
COMMON_WORDS = {"the", "user", "users", "s", "a", "an", "is", "are", "was", "to", "of", "and", "in", "has", "likes"}


@dataclass(frozen=True)
class Decision:
    """One planned change. ADD carries no memory_id: the caller makes one."""

    event: str  # ADD | UPDATE | DELETE | NONE
    memory_id: str | None = None
    old_text: str | None = None
    new_text: str | None = None
    # The new fact (as extracted) this decision is about, when known: where its triple comes from.
    origin: str | None = field(default=None, compare=False)


@dataclass
class Plan:
    decisions: list[Decision] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # degradations, one line each, for the user
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (text, why) of events refused: DROP events

    @property
    def changes(self) -> list[Decision]:
        """The decisions that touch the vault (everything but NONE)."""
        return [d for d in self.decisions if d.event != "NONE"]


@dataclass
class Preparation:
    """What is settled before asking the LLM, and what to ask it."""

    settled: list[Decision]  # duplicates (NONE) and facts without neighbours (ADD)
    asked: list[str]  # facts to show the LLM, numbered by position
    candidates: list[tuple[str, str]]  # stored (memory_id, text) shown, short id = position
    neighbour_ids: list[set[str]]  # per asked fact, the memory ids found near it
    stored_hashes: set[str]
    embedder: Any = None  # what the grounding guard compares meanings with


def reconcile(
    llm: LLM | None,
    new_facts: list[str],
    neighbours: dict[str, list[tuple[str, str]]],
    stored_hashes: set[str],
    embedder: Any = None,
) -> Plan:
    """Plan how `new_facts` enter the store, given each fact's nearest stored facts as
    (memory_id, text) in `neighbours` and the md5 hashes of all stored fact texts. `llm` None means
    no LLM is configured: facts that would need one are ADDed as given. `embedder` judges whether a
    rewrite means what its facts say (curate.grounding; None: words alone). Never raises LLMError."""
    prep = prepare(new_facts, neighbours, stored_hashes)
    prep.embedder = embedder
    if not prep.asked or llm is None:
        return unasked(prep)
    try:
        schema = prompts.bounded(prompts.RECONCILIATION_SCHEMA, EVENTS_PER_FACT * len(prep.asked),
                                  prompts.MAX_FACT_CHARS)
        return finish(prep, llm.complete(reconcile_messages(prep), json_schema=schema))
    except LLMError as exc:
        return finish(prep, None, f"LLM failed: {exc}")


def unasked(prep: Preparation) -> Plan:
    """The plan when the LLM is not asked: nothing left to ask it, or no LLM configured."""
    if not prep.asked:
        return Plan(decisions=list(prep.settled))
    return finish(prep, None, "no LLM configured")


def prepare(new_facts: list[str], neighbours: dict[str, list[tuple[str, str]]], stored_hashes: set[str]) -> Preparation:
    """Settle duplicates and neighbour-less facts; gather what the LLM must see for the rest."""
    settled: list[Decision] = []
    asked: list[str] = []
    neighbour_ids: list[set[str]] = []
    candidates: dict[str, str] = {}
    seen: set[str] = set()
    for raw in new_facts:
        fact = raw.strip()
        if not fact:
            continue
        digest = text_hash(fact)
        near = neighbours.get(raw) or neighbours.get(fact) or []
        if digest in stored_hashes or digest in seen:
            same = next((mid for mid, text in near if text_hash(text) == digest), None)
            settled.append(Decision("NONE", same, fact if same else None, fact))
        elif not near:
            settled.append(Decision("ADD", None, None, fact))
        else:
            asked.append(fact)
            neighbour_ids.append({mid for mid, _ in near})
            for mid, text in near:
                candidates.setdefault(mid, text)
        seen.add(digest)
    return Preparation(settled, asked, list(candidates.items()), neighbour_ids, set(stored_hashes))


def reconcile_messages(prep: Preparation) -> list[dict]:
    """The one prompt: stored candidates with short ids, then the numbered new facts."""
    user = prompts.fill(
        prompts.RECONCILIATION_INPUT,
        stored=prompts.numbered([text for _, text in prep.candidates]),
        facts=prompts.numbered(prep.asked, prefix="fact "),
    )
    return [{"role": "system", "content": prompts.RECONCILIATION}, {"role": "user", "content": user}]


def finish(prep: Preparation, answer: str | None, failure: str | None = None) -> Plan:
    """The plan from the LLM's answer (or its failure), with every safeguard applied."""
    plan = Plan(decisions=list(prep.settled))
    events = None if failure else as_list(parse_json(answer), EVENT_LIST_KEYS)
    if events is None:
        plan.notes.append(f"{failure or 'LLM answer unusable'}; stored {len(prep.asked)} fact(s) as given")
        plan.decisions += [Decision("ADD", None, None, fact) for fact in prep.asked]
        return plan
    Applier(prep, plan).apply(events)
    return plan


class Applier:
    """Turns the LLM's events into decisions, one event at a time, keeping track of what is taken."""

    def __init__(self, prep: Preparation, plan: Plan) -> None:
        self.prep = prep
        self.plan = plan
        self.by_short_id = {str(i): mid for i, (mid, _) in enumerate(prep.candidates)}
        self.stored_text = dict(prep.candidates)
        self.covered: set[int] = set()  # facts an ADD or UPDATE took care of
        self.known: dict[int, str] = {}  # facts the LLM says are already stored, -> memory id
        self.claimed: set[str] = set()  # memories an UPDATE or DELETE already changes
        self.written = {d.new_text for d in plan.decisions if d.event == "ADD"}
        self.ignored = 0

    def apply(self, events: list[Any]) -> None:
        for event in events:
            if not (isinstance(event, dict) and self.apply_one(event)):
                self.ignored += 1
        for index, memory_id in self.known.items():
            if index not in self.covered:
                self.covered.add(index)
                old = self.stored_text[memory_id]
                self.plan.decisions.append(Decision("NONE", memory_id, old, self.prep.asked[index]))
        missing = [fact for i, fact in enumerate(self.prep.asked) if i not in self.covered]
        for fact in missing:
            self.add(fact, fact)
        if self.ignored:
            self.plan.notes.append(f"ignored {self.ignored} unusable event(s) in the LLM's answer")
        if missing:
            self.plan.notes.append(f"LLM answer did not account for {len(missing)} fact(s); stored them as given")

    def apply_one(self, event: dict) -> bool:
        """Apply one event; False when it is unusable (unknown kind, id not offered, already claimed)."""
        said = str(event.get("event") or event.get("action") or "").strip().upper()
        kind = SYNONYMS.get(said, said)
        text = event.get("text") if isinstance(event.get("text"), str) else ""
        text = " ".join(text.split())
        memory_id = self.by_short_id.get(str(event.get("id", "")).strip())
        if kind not in EVENTS:
            return False
        if kind != "ADD" and memory_id is None:
            given = str(event.get("id", "")).strip()
            if given:  # an id the LLM made up: said so, never applied
                self.plan.dropped.append((text or f"{kind} {given}",
                                          f"{kind} names memory id {clip_quote(given, 20)}, which was not offered"))
            return False
        index = self.fact_index(event, kind, memory_id, text)
        origin = self.prep.asked[index] if index is not None else None
        if said == "SUPERSEDE" and not text:
            text = origin or ""  # "the new fact supersedes the stored one": its text replaces it
        rewritten = memory_id if kind == "UPDATE" else None
        if kind in ("ADD", "UPDATE") and text:
            text = self.grounded(text, origin, rewritten)
            if text is None:
                return False  # dropped: its fact, if nothing else covers it, is ADDed as given
        if kind == "ADD":
            text = text or (self.prep.asked[index] if index is not None else "")
            if not text:
                return False
            if text_hash(text) not in self.prep.stored_hashes:
                self.add(text, origin)
            self.cover(index)
            return True
        if memory_id in self.claimed and kind in ("UPDATE", "DELETE"):
            return False
        old = self.stored_text[memory_id]
        if kind == "DELETE":
            self.claimed.add(memory_id)
            self.plan.decisions.append(Decision("DELETE", memory_id, old, None))
        elif kind == "UPDATE" and text and text != old:
            self.claimed.add(memory_id)
            self.plan.decisions.append(Decision("UPDATE", memory_id, old, text, origin))
            self.cover(index)
        elif kind == "NONE" or text == old:
            # NONE, or an UPDATE to the same text: the fact is already stored there.
            if index is not None:
                self.known.setdefault(index, memory_id)
        # An UPDATE with empty text is a NONE that accounts for no fact: the fact is ADDed later.
        return True

    def grounded(self, text: str, origin: str | None, memory_id: str | None) -> str | None:
        """An event's text as it may be stored, or None (noted as dropped) when it says more than the fact
        it is about (all new facts when unknown) and the stored memory it rewrites. A rewrite of facts about
        the user is one too, in the third person (curate.voice: a weak model answers "I like tea")."""
        facts = [origin] if origin else list(self.prep.asked)
        reason = None
        if any(user_fact(fact)[1] is None for fact in facts):
            text, reason = user_fact(text)
        grounds = facts + ([self.stored_text[memory_id]] if memory_id is not None else [])
        reason = reason or rewrite_problem(text, grounds, superseding=memory_id is not None,
                                           embedder=self.prep.embedder)
        if reason:
            self.plan.dropped.append((text, reason))
            return None
        return text

    def add(self, text: str, origin: str | None = None) -> None:
        if text not in self.written:
            self.written.add(text)
            self.plan.decisions.append(Decision("ADD", None, None, text, origin))

    def cover(self, index: int | None) -> None:
        if index is not None:
            self.covered.add(index)

    def fact_index(self, event: dict, kind: str, memory_id: str | None, text: str) -> int | None:
        """Which new fact an event is about: its "fact" number when valid, else a best guess from the
        memory's neighbours and shared words; None when nothing ties it to a fact."""
        try:
            index = int(str(event.get("fact")).strip())
        except ValueError:
            index = -1
        if 0 <= index < len(self.prep.asked):
            return index
        choices = list(range(len(self.prep.asked)))
        if memory_id is not None:
            choices = [i for i in choices if memory_id in self.prep.neighbour_ids[i]] or choices
        if len(choices) == 1:
            return choices[0]
        probe = words(text or (self.stored_text.get(memory_id, "") if memory_id else ""))
        best = max(choices, key=lambda i: len(probe & words(self.prep.asked[i])))  # first of equals
        return best if probe & words(self.prep.asked[best]) else None


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.casefold())) - COMMON_WORDS
