"""The vault's committed .gitattributes: which merge driver each kind of file goes to when two devices
changed it (the drivers themselves are vault.devices.merge). Written by `init` and by a sync's
`migrate` commit, so it is part of the vault's format, not of a sync."""

from __future__ import annotations

DRIVERS = {  # driver name -> kind
    "memvault-entry": "entry", "memvault-summary": "summary", "memvault-core": "core", "memvault-journal": "journal",
}
# Later lines win in .gitattributes: summaries and sessions are entries too, merged their own way.
GITATTRIBUTES = """\
# memvault: how files several devices write are merged (memvault sync; drivers in .git/config)
entries/**/*.md merge=memvault-entry
entries/**/summaries/*.md merge=memvault-summary
entries/**/sessions/*.md merge=memvault-summary
core/*.md merge=memvault-core
journal/*.md merge=memvault-journal
"""
GITATTRIBUTES_FILE = ".gitattributes"


def gitattributes_text(current: str | None) -> str | None:
    """The .gitattributes that routes memvault's files to its drivers, keeping a person's own lines;
    None when `current` already does."""
    if current is not None and all(line in current.splitlines() for line in GITATTRIBUTES.splitlines()):
        return None
    own = [line for line in (current or "").splitlines()
           if line not in GITATTRIBUTES.splitlines() and not any(f"merge={name}" in line for name in DRIVERS)]
    return ("\n".join(own) + "\n" if own else "") + GITATTRIBUTES
