"""The words memvault says to an LLM, in one place so they can be read, compared and tuned together.

Prompts are plain strings with `{name}` placeholders filled by `fill` (literal replacement, so the
JSON braces in examples need no escaping).
"""

from __future__ import annotations

MAX_DEFAULT_FACTS = 3

EXTRACTION = """\
You extract long-term memories about the user from a chat.

Read ONLY the latest user message. Earlier turns are context to resolve words such as "she" or \
"there"; never take facts from them or from the assistant.

Write 0 to 3 facts that are worth remembering in later conversations: personal details, \
preferences, plans, relationships, possessions, work, health, opinions.
Each fact is:
- atomic: one piece of information;
- self-contained: understandable without the chat (name people and things, no "it" or "there");
- in the third person about the user, e.g. "The user's sister is called Ana.", \
"The user is vegetarian.";
- in the language of the user's message.

Write no facts for questions, greetings, small talk, requests for help or anything the assistant \
said. When in doubt, write fewer facts.

For each fact also give its triple: "subject" and "object" are short names (use "user" for the \
user), "predicate" a short relation in capitals with underscores (LIVES_IN, HAS_SISTER, LIKES); \
"category" one word (personal, preference, plan, relationship, possession, work, health, opinion); \
"evidence" the user's own words the fact comes from, quoted exactly.

Answer with a JSON list of objects and nothing else, e.g.
[{"text": "The user's sister is called Ana.", "category": "relationship", "subject": "user", \
"predicate": "HAS_SISTER", "object": "Ana", "evidence": "my sister Ana"}]
or [] when there is nothing to remember."""

EXTRACTION_INPUT = """\
Earlier turns (context only):
{context}

Latest user message (extract from this only):
{message}"""

EXTRACTION_SCHEMA: dict = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {key: {"type": "string"} for key in
                       ("text", "category", "subject", "predicate", "object", "evidence")},
        "required": ["text", "subject", "predicate", "object"],
    },
}

RECONCILIATION = """\
You keep a user's memory store consistent. You are shown memories already stored, each with a \
short id, and new facts just learned, each with a number.

For each new fact decide one event:
- ADD (coexist): the fact is new information, or true beside what is stored. Give "text" (the \
fact, possibly cleaned up).
- UPDATE (supersede): the fact changes, corrects or refines a stored memory about the same thing. \
Give the stored "id" and the full new "text" that replaces it, keeping what is still true. Prefer \
the more informative version when one refines the other.
- DELETE: the fact shows a stored memory is no longer true and nothing should replace it. Give \
the stored "id".
- NONE (bump): the fact is already stored (same meaning). Give the stored "id".

Use only the ids shown. A fact may give more than one event (e.g. DELETE an old memory and ADD \
the new fact). Give "fact" (the new fact's number) in every event.

Answer with a JSON list of events and nothing else, e.g.
[{"fact": 0, "event": "UPDATE", "id": "1", "text": "The user loves sushi and no longer likes pizza."},
 {"fact": 1, "event": "ADD", "text": "The user has a dog called Rex."}]"""

RECONCILIATION_INPUT = """\
Stored memories:
{stored}

New facts:
{facts}"""

RECONCILIATION_SCHEMA: dict = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "fact": {"type": "integer"},
            "event": {"type": "string", "enum": ["ADD", "UPDATE", "DELETE", "NONE", "COEXIST", "SUPERSEDE", "BUMP"]},
            "id": {"type": "string"},
            "text": {"type": "string"},
        },
        "required": ["event"],
    },
}

SUMMARY = """\
You maintain a short rolling summary of what is known about the user in one conversation.

Fold the new facts into the previous summary. Keep everything in the previous summary that is \
still true; when a new fact contradicts it, the new fact wins. Write in the third person \
("The user ..."), concisely, in at most 200 words, as plain prose or short bullet lines. \
Answer with the new summary only: no heading, no preamble, no JSON."""

SUMMARY_INPUT = """\
Conversation: {conversation}

Previous summary:
{previous}

New facts:
{facts}"""

RULE_REVIEW = """\
You keep the standing instructions a user gave their assistant ("answer in British English", \
"never suggest meat"). You are shown the instructions in force, each with a number, and a new one.

Say whether the new instruction is one already in force (the same request in other words), and \
which instructions in force it replaces: those it contradicts or changes (e.g. "answer in French" \
replaces "answer in English"). Instructions about different things do not replace each other: both \
stay in force.

Answer with a JSON object and nothing else, e.g.
{"same_as": null, "replaces": [2]}"""

RULE_REVIEW_INPUT = """\
Instructions in force:
{rules}

New instruction:
{rule}"""

RULE_REVIEW_SCHEMA: dict = {
    "type": "object",
    "properties": {"same_as": {"type": ["integer", "null"]},
                   "replaces": {"type": "array", "items": {"type": "integer"}}},
    "required": ["replaces"],
}


def fill(template: str, **values: str) -> str:
    """`template` with each `{name}` replaced by its value (plain replacement, braces elsewhere kept)."""
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template


def numbered(lines: list[str], prefix: str = "") -> str:
    """Lines as "0: ...", "1: ..." (the short ids an LLM refers back to), each after `prefix`."""
    return "\n".join(f"{prefix}{i}: {line}" for i, line in enumerate(lines)) or "(none)"


def bullets(lines: list[str]) -> str:
    return "\n".join(f"- {line}" for line in lines) or "(none)"
