"""A client's own housekeeping requests: forwarded, never remembered.

Open WebUI asks the model it chats with for a title, tags, follow-up questions, search queries, an
autocompletion, an emoji or an image prompt through the same /v1/chat/completions. Stored as the
user's words, two chats left 6 of 9 user turns that were such prompts, and they filled the next
chat's memory. Such a request reaches the proxy as one user message built from a template of the
client's (Open WebUI drops its `metadata.task` before sending), so the templates' openings are
what marks them: KNOWN_MARKERS, from Open WebUI's backend/open_webui/config.py
(DEFAULT_*_PROMPT_TEMPLATE; the task templates start "### Task:"). A client that says so itself
(`memory_task: true`) and proxy.task_markers mark more. (`metadata` stays refused like litellm's other
routing fields: memvault.server.proxy.)

A task is then a request without memory: nothing retrieved or injected, no turn stored, nothing curated.
"""

from __future__ import annotations

import functools
import re

from memvault.core.messages import message_text

# (what it is, a regular expression matched at the start of a message's text)
KNOWN_MARKERS = (
    # title, tags, follow-ups, search/retrieval queries, image prompt, autocomplete (Open WebUI >= 0.5)
    ("Open WebUI task", r"###\s*Task:"),
    # emoji (Open WebUI's call mode)
    ("Open WebUI emoji", r"Your task is to reflect the speaker's likely facial expression through a fitting emoji"),
    # merging the answers of several models
    ("Open WebUI mixture of agents",
     r"You have been provided with a set of responses from various models to the latest user query"),
    # choosing tools, sent as the system message
    ("Open WebUI tool choice", r"Available Tools: .*?Your task is to choose and return the correct tool"),
    # the title prompt of Open WebUI before 0.5
    ("Open WebUI title", r"Create a concise, 3-5 word (?:phrase|title)"),
)


@functools.cache
def compiled(extra: tuple[str, ...]) -> tuple[tuple[str, re.Pattern], ...]:
    known = [(name, re.compile(r"\A\s*" + pattern, re.DOTALL)) for name, pattern in KNOWN_MARKERS]
    # proxy.task_markers compiled when the settings were read (memvault.settings.check_patterns)
    return (*known, *((f"proxy.task_markers {pattern[:40]!r}", re.compile(pattern, re.DOTALL)) for pattern in extra))


def client_task(messages: list[dict], declared: bool, extra_markers=()) -> str | None:
    """What marks this request as a client's housekeeping (None: a conversation turn). `declared`:
    the request's `memory_task`."""
    if declared:
        return "memory_task"
    patterns = compiled(tuple(extra_markers))
    for message in messages:
        if message.get("role") not in ("user", "system"):
            continue
        text = message_text(message)
        for name, pattern in patterns:
            if pattern.search(text):
                return name
    return None
