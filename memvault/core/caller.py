"""Who is asking, and the one rule for what they may see (docs/architecture.md, One caller).

Every door says who is asking as a `Caller`; only core reads it. A memory by id (get, update, delete,
history) is found only when `Caller.sees` it, and a listing or a search reaches only the rows that
`Caller.walls` allows: one rule, so no door can disagree with another on a wall.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memvault.vault.format.fields import check_scopes


@dataclass(frozen=True)
class Caller:
    """Who is asking. `user_id`, `agent_id`, `run_id`: the scopes a door names (a scoped server key's
    ids are already among them: `server.auth.confine` turns a key's limits into the scopes named, or
    refuses). None: not named, no wall there; so `Caller()` is the vault's owner at their own door (the
    CLI, MCP, the server key), who sees the whole vault, and a team vault's reader, who sees the team
    vault whole. `person`: a person in a chat, whose user is a wall even when not named (None: the vault's
    owner, whose memories carry no user_id; see Memory follows its owner)."""

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    person: bool = False

    @classmethod
    def of(cls, scopes: dict[str, Any] | None, person: bool = False) -> Caller:
        """The caller a door's scopes mapping names (user_id, agent_id, run_id; checked by check_scopes)."""
        return cls(**check_scopes(scopes), person=person)

    def walls(self) -> dict[str, str | None]:
        """Scope field -> the value a memory must carry for this caller to see it (None: not set)."""
        named = {key: value for key, value in self.scopes().items() if value is not None}
        if self.person:
            return {"user_id": self.user_id, **{key: named[key] for key in ("agent_id", "run_id") if key in named}}
        return named

    def sees(self, entry: Any) -> bool:
        """Whether this caller may see `entry` (by id: get, update, delete, history)."""
        return all(getattr(entry, key) == value for key, value in self.walls().items())

    def scopes(self) -> dict[str, str | None]:
        """The three scopes as the facade's listing methods take them."""
        return {"user_id": self.user_id, "agent_id": self.agent_id, "run_id": self.run_id}


ANYONE = Caller()  # no scope named: the whole vault


def walls(scopes: dict[str, Any] | None, person: bool = False) -> dict[str, str | None]:
    """The walls of the caller these scopes name: what a listing or a search filters on."""
    return Caller.of(scopes, person).walls()
