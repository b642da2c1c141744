"""Episodic sessions and the write policy for chat and proxy turns.

A session is a chat run, or a proxy/API conversation's activity. Each user turn it sees goes through
`policy_add`: the candidates extracted from it are labelled (memvault.curate.policy) and stored now,
held in the session buffer (memvault.core.session_buffer), or dropped, every HOLD and DROP reported.

A session ends on chat exit, after `session.idle_minutes` without a turn in `serve`, at server
shutdown, or by `memvault session end`; all call `end_session`, the one function that promotes or
drops the held candidates, writes the session's summary (role `session`, when it had 3+ user turns)
and the daily log, in ONE commit, then removes the buffer.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from memvault.core.adding import AddResult, placed, speaker_of
from memvault.core.base import short
from memvault.core.messages import last_user_text
from memvault.core.session_buffer import SessionBuffer, SessionRecord
from memvault.errors import MemvaultError
from memvault.vault.format import layout
from memvault.vault.format.entry import SCOPE_KEYS, Entry
from memvault.vault.format.fields import check_scopes

if TYPE_CHECKING:
    from memvault.core.adding import Adding
    from memvault.core.base import Storage
    from memvault.core.rules import Rules
    from memvault.core.workspace import Workspace
    from memvault.curate.events import MemoryEvent, Placement
    from memvault.curate.policy import Candidate
    from memvault.vault.write.transaction import Transaction

MIN_SUMMARY_TURNS = 3  # a session with fewer user turns has no arc worth a summary


@dataclass
class SessionEnd:
    """What ending one session did."""

    conversation: str
    events: list = field(default_factory=list)  # MemoryEvent: ADD/UPDATE for promoted, DROP for the rest
    summary: Entry | None = None  # the episodic summary, when the session had substance
    user_turns: int = 0
    notes: list[str] = field(default_factory=list)
    commit: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"conversation": self.conversation, "user_turns": self.user_turns,
                "summary": {"id": self.summary.id, "text": self.summary.text} if self.summary else None,
                "results": [event.to_dict() for event in self.events], "notes": self.notes, "commit": self.commit}


class Sessions:
    """The write policy for chat/proxy turns, the session buffer, and ending sessions."""

    def __init__(self, storage: Storage, adding: Adding, rules: Rules, workspace: Workspace) -> None:
        self.storage = storage
        self.settings, self.vault, self.keeper = storage.settings, storage.vault, storage.keeper
        self.adding = adding
        self.rules = rules
        self.workspace = workspace

    @functools.cached_property
    def session_buffer(self) -> SessionBuffer:
        """The open sessions' buffers under .memvault/session/ (one object: its lock serves every thread)."""
        return SessionBuffer.of_vault(self.vault.state_dir)

    # -- the write policy --------------------------------------------------------------------------
    def policy_add(self, messages: Any, conversation: str | None = None,
                   scopes: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None, llm=None,
                   turn: Entry | None = None, prompt: str | None = None,
                   fields: dict[str, Any] | None = None) -> AddResult:
        """A user turn through the write policy: its candidates stored now, held for session end, or
        dropped (HOLD and DROP events say which and why). Counts the turn in the conversation's open
        session. Without an LLM nothing can be labelled: the text is stored as given, as `add` does."""
        from memvault.curate.events import Placement

        llm = llm or self.storage.llm()
        if llm is None:  # nothing can label the text: stored as given (`add` holds the hard guards)
            return self.adding.add(messages, conversation, scopes, metadata, fields=fields)
        conversation, scopes, chat, notes = placed(messages, conversation, scopes, self.settings.limits.max_text_chars)
        speaker = speaker_of(chat)
        metadata = {**(metadata or {}), **{key: value for key, value in (fields or {}).items() if value is not None},
                    **({"actor_id": speaker} if speaker else {})}
        latest = last_user_text(chat)
        if turn is None and latest.strip():
            turn = Entry(text=self.storage.clean_text(latest), role="user", conversation_id=conversation, **scopes)
        buffer = self.session_buffer
        with buffer.locked():
            record = buffer.read(conversation)
            buffer.note_turn(record, turn.id if turn else None, scopes)
        session = {"session": started} if (started := iso(record.state.get("started_at"))) else {}
        policy_events: list[MemoryEvent] = []
        rules: list[str] = []

        def select(facts: list[str]) -> list[str]:
            from memvault.curate.policy import label_candidates

            labelled = label_candidates(llm, facts, latest)
            return self._apply_labels(conversation, labelled, turn, policy_events, rules)

        result = self.adding.curated_add(llm, chat, Placement(conversation, scopes, metadata, provenance=session),
                                   prompt, turn, select)
        for text in rules:
            result.events.append(self.store_rule(text, Placement(conversation, scopes, metadata,
                                                                 turn.id if turn else None), llm))
        self._note_learned(conversation, result.events)
        result.events.extend(policy_events)
        self.adding.note_refusals(result.events, conversation, scopes, turn, "policy")
        result.notes = notes + result.notes
        return result

    def _apply_labels(self, conversation: str, labelled: list[Candidate], turn: Entry | None,
                      events: list, rules: list[str]) -> list[str]:
        """The facts to store now; held ones go to the buffer, a returning `repeat` is promoted.
        HOLD and DROP events are appended to `events`, rules to `rules`."""
        from memvault.curate.events import MemoryEvent
        from memvault.curate.policy import same_candidate

        now: list[str] = []
        buffer = self.session_buffer
        with buffer.locked():
            record = buffer.read(conversation)
            held_before = len(record.held)
            new_held: list[dict] = []
            for candidate in labelled:
                if candidate.label == "drop":
                    events.append(MemoryEvent("DROP", None, None, candidate.text, reason=candidate.reason or "drop"))
                    continue
                match = next((item for item in record.held if same_candidate(str(item.get("text", "")),
                                                                             candidate.text)), None)
                returning = match is not None and "repeat" in (match.get("label"), candidate.label)
                if candidate.label == "now" or returning:
                    if match is not None:
                        record.held.remove(match)  # stored now: no longer waiting
                    (rules if candidate.kind == "rule" else now).append(candidate.text)
                    continue
                if match is None:
                    new_held.append({"text": candidate.text, "label": candidate.label, "kind": candidate.kind,
                                     "reason": candidate.reason, "source": turn.id if turn else None,
                                     "at": time.time()})
                reason = ("until it comes back in this session" if candidate.label == "repeat"
                          else "until the session ends")
                events.append(MemoryEvent("HOLD", None, None, candidate.text,
                                          reason=f"{candidate.label}: {candidate.reason or reason}"))
            if len(record.held) != held_before:
                buffer.save_held(record)
            buffer.append_held(record, new_held)
        return now

    def _note_learned(self, conversation: str, events: list) -> None:
        """Remember what the session learned, for its daily log entry."""
        learned = [{"event": e.event, "id": e.id, "old_memory": e.old_memory, "memory": e.new_memory}
                   for e in events if e.event in ("ADD", "UPDATE", "DELETE")]
        if not learned:
            return
        buffer = self.session_buffer
        with buffer.locked():
            record = buffer.read(conversation)
            record.state["learned"] = [*(record.state.get("learned") or []), *learned]
            buffer.save_state(record)

    def store_rule(self, text: str, place: Placement, llm=None) -> MemoryEvent:
        """Store an explicit instruction the policy classified as a rule, in its own commit, through
        the one rule writer (memvault.core.rules: capped, superseded ones archived, safety guard)."""
        return rule_event(self.rules.add_rule(text, place.conversation, place.scopes, llm, place.source), text)

    def write_rule(self, tx: Transaction, text: str, place: Placement, llm=None) -> MemoryEvent:
        """The same inside the caller's transaction (a session end's one commit)."""
        result = self.rules.plan_rule(text, place.conversation, place.scopes, llm, place.source)
        if result.event == "ADD":
            self.rules.write_planned_rule(tx, result)
        return rule_event(result, text)

    # -- ending sessions ---------------------------------------------------------------------------
    def open_sessions(self) -> list[SessionRecord]:
        """The sessions not yet ended, oldest activity first."""
        with self.session_buffer.locked():
            return self.session_buffer.open_sessions()

    def end_sessions(self, idle_minutes: float | None = None, llm=None,
                     only: set[str] | None = None) -> list[SessionEnd]:
        """End every open session (`idle_minutes`: only those without a turn for that long;
        `only`: only these conversations)."""
        only = {layout.check_conversation_id(name) for name in only} if only is not None else None
        moment = time.time()
        ended = []
        for record in self.open_sessions():
            if only is not None and record.conversation not in only:
                continue
            if idle_minutes is not None and moment - record.last_activity < idle_minutes * 60:
                continue
            result = self.end_session(record.conversation, llm)
            if result is not None:
                ended.append(result)
        return ended

    def end_session(self, conversation: str, llm=None) -> SessionEnd | None:
        """End the conversation's session: promote or drop its held candidates, write its summary when
        it had 3+ user turns, append the daily log: one commit; then its buffer goes. None when no
        session is open. The LLM (default: the configured one) judges the held candidates and writes
        the summary; without one, held candidates are promoted and the summary is the turns' openings."""
        conversation = layout.check_conversation_id(conversation)
        with self.session_buffer.ending(conversation):
            return self._end_taken(conversation, llm)

    def _end_taken(self, conversation: str, llm) -> SessionEnd | None:
        """end_session's work, with the conversation's ending claim held."""
        from memvault.curate.events import MemoryEvent
        from memvault.curate.policy import promoted, session_summary
        from memvault.curate.summary import summary_problem

        taken = self.session_buffer.take(conversation)
        if taken is None:
            return None
        record, folder = taken
        llm = llm if llm is not None else self.storage.llm()
        result = SessionEnd(conversation, user_turns=record.user_turns)
        for item in record.held:
            if item.get("label") == "repeat":
                result.events.append(MemoryEvent("DROP", None, None, str(item.get("text", "")),
                                                 reason="repeat: it did not come back in the session"))
        held = [item for item in record.held if item.get("label") != "repeat" and str(item.get("text", "")).strip()]
        user_turns = self._session_turns(record)
        keep, note = promoted(llm, [str(item["text"]) for item in held], user_turns)
        result.notes += [note] if note else []
        result.events += [MemoryEvent("DROP", None, None, str(item["text"]), reason="the session did not support it")
                          for item, yes in zip(held, keep, strict=True) if not yes]
        chosen = []
        judge = self.adding.judge(llm) if llm is not None else None
        literal = self.adding.literal(llm)
        for item in (item for item, yes in zip(held, keep, strict=True) if yes):
            reason = unsupported_by(str(item["text"]), user_turns, self.storage.embedder(), judge, literal)
            if reason:  # a held candidate is re-checked against what the session's user said
                result.events.append(MemoryEvent("DROP", None, None, str(item["text"]), reason=reason))
            else:
                chosen.append(item)
        summary = session_summary(llm, user_turns) if record.user_turns >= MIN_SUMMARY_TURNS and user_turns else None
        if summary and llm is not None and (problem := summary_problem(summary, "\n".join(user_turns),
                                                                         self.storage.embedder(), literal)):
            result.notes.append(f"the session summary the LLM wrote was refused ({problem}): the turns' openings "
                                "are kept instead")
            summary = session_summary(None, user_turns)
        self._commit_session_end(result, record, chosen, summary, llm)
        self.session_buffer.finish(folder)
        self.adding.note_refusals(result.events, conversation, record.scopes, operation="session end")
        return result

    def _session_turns(self, record: SessionRecord) -> list[str]:
        """The texts of the session's user turns still in the vault, oldest first."""
        texts = []
        for turn_id in record.state.get("turn_ids") or []:
            entry = self.adding.live_entry(str(turn_id)) if isinstance(turn_id, str) else None
            if entry is not None and entry.role == "user":
                texts.append(entry.text)
        return texts

    def _commit_session_end(self, result: SessionEnd, record: SessionRecord, chosen: list[dict],
                            summary: str | None, llm) -> None:
        """The promoted candidates, the summary and the daily log: one commit (none when all are empty)."""
        from memvault.curate.events import MemoryEvent, Placement
        from memvault.curate.ingest import apply_curation, plan_curation

        conversation, scopes = result.conversation, record.scopes
        facts = [str(item["text"]) for item in chosen if item.get("kind") != "rule"]
        rules = [str(item["text"]) for item in chosen if item.get("kind") == "rule"]
        curation = None
        previous = self.vault.summary(conversation)
        if facts and llm is not None:
            curation = plan_curation(llm, [], conversation, self.adding.stored_facts(conversation, scopes),
                                     previous.text if previous else None, facts=facts, embedder=self.storage.embedder())
            result.notes += curation.notes
        if not (facts or rules or summary or record.state.get("learned")):
            return
        subject = f"memvault session end: {conversation}" + (f" ({short(summary, 40)})" if summary else "")
        # promoted facts say which model judged them and which session they were learned in
        place = Placement(conversation, scopes, provenance={"model": self.adding.model_name(llm) if llm else "",
                                                            "session": iso(record.state.get("started_at")) or ""})
        with self.storage.write("session", subject, conversation) as tx:
            if curation is not None:
                result.events += apply_curation(tx, curation, place, self.adding.live_entry, previous)
            else:
                for text in facts:
                    entry = Entry(text=self.storage.clean_text(text), conversation_id=conversation, **scopes)
                    tx.write(entry, event="ADD")
                    result.events.append(MemoryEvent("ADD", entry.id, None, entry.text))
            for text in rules:
                result.events.append(self.write_rule(tx, text, place, llm))
            if summary:
                result.summary = Entry(text=self.storage.clean_text(summary), role="session",
                                       conversation_id=conversation,
                                       metadata={"user_turns": record.user_turns,
                                                 "started_at": iso(record.state.get("started_at"))},
                                       **scopes)
                tx.write(result.summary, event="SESSION")
            self.workspace.log_day(tx, learned_events(record, result.events), f"session in {conversation}")
        result.commit = tx.commit_sha  # this session's commit, not HEAD: another writer may have come since

    # -- reading sessions --------------------------------------------------------------------------
    def latest_session(self, conversation: str, scopes: dict[str, Any] | None = None) -> Entry | None:
        """The newest session summary of the conversation that carries exactly these scopes (read from
        the files: no index, no model)."""
        wanted = check_scopes(scopes)
        folder = f"{layout.ENTRIES}/{layout.folder_for(conversation)}/{layout.KIND_DIRS['session']}"
        for name, day in sorted(((name, day) for day, name in self.vault.kind_names(folder)), reverse=True):
            try:
                entry = self.vault.read(PurePosixPath(day, name))
            except MemvaultError:  # a broken or foreign file: doctor reports it
                continue
            if entry.role == "session" and all(getattr(entry, key) == wanted.get(key) for key in SCOPE_KEYS):
                return entry
        return None


def unsupported_by(text: str, user_turns: list[str], embedder=None, judge=None, literal: bool = False) -> str | None:
    """Why a held candidate is not what the session's user turns say (curate.grounding), or None; a
    refusal for closeness alone is put to the second judge, as when the candidate was extracted (`literal`:
    the model's facts must keep to the user's words, as then)."""
    from memvault.curate.grounding import Source
    from memvault.curate.judge import judged_problem

    return judged_problem(text, Source("\n".join(user_turns), embedder=embedder, literal=literal), judge)


def learned_events(record: SessionRecord, events: list) -> list:
    """What the session learned, for the daily log: what its turns changed, then what its end promoted."""
    from memvault.curate.events import MemoryEvent

    during = [MemoryEvent(str(item.get("event")), item.get("id"), item.get("old_memory"), item.get("memory"))
              for item in record.state.get("learned") or [] if isinstance(item, dict)]
    return [*during, *(e for e in events if e.event in ("ADD", "UPDATE", "DELETE"))]


def iso(moment: Any) -> str | None:
    from datetime import datetime, timezone

    try:
        return datetime.fromtimestamp(float(moment), timezone.utc).isoformat(timespec="seconds")
    except (TypeError, ValueError, OverflowError):
        return None


def rule_event(result, text: str):
    """A rule's RuleResult as the write policy's event: ADD (stored), NONE (already in force) or DROP."""
    from memvault.curate.events import MemoryEvent

    rule = result.rule
    if result.event == "DROP":
        return MemoryEvent("DROP", None, None, text, reason=result.reason)
    return MemoryEvent(result.event, rule.id, rule.text if result.event == "NONE" else None, rule.text,
                       reason="rule" if result.event == "ADD" else result.reason)
