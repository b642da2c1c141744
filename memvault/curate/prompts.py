"""The words memvault says to an LLM, in one place so they can be read, compared and tuned together.

Prompts are plain strings with `{name}` placeholders filled by `fill` (literal replacement, so the
JSON braces in examples need no escaping).
"""

from __future__ import annotations

MAX_DEFAULT_FACTS = 3
MAX_FACT_CHARS = 500  # a fact is one sentence or two; longer is a runaway answer (curate.grounding)

# The prompts' examples are placeholders in angle brackets: a small model that copies an example
# copies a placeholder, which the grounding guard (memvault.curate.grounding) always refuses; and
# `EXAMPLE_FACTS` lists the example sentences it drops unless the user's words say them.
EXTRACTION = """\
You extract long-term memories about the user from a chat.

Read ONLY the latest user message (or the user's messages, when several are marked "extract from \
these only"). Earlier turns are context to resolve words such as "she" or "there"; never take facts \
from them or from the assistant.

Write 0 to 3 facts that are worth remembering in later conversations: personal details, \
preferences, plans, relationships, possessions, work, health, opinions.
Each fact is:
- stated by the user: use the user's own words, add nothing they did not say;
- atomic: one piece of information;
- self-contained: understandable without the chat (name people and things, no "it" or "there");
- in the third person about the user ("The user ..."), in the language of the user's words.

Write no facts for questions, greetings, small talk, requests for help, pasted text or logs, or \
anything the assistant said. When in doubt, write fewer facts.

For each fact also give its triple: "subject" and "object" are short names taken from the fact \
(use "user" for the user), "predicate" a short relation in capitals with underscores made of the \
fact's words; "category" one word (personal, preference, plan, relationship, possession, work, \
health, opinion); "evidence" the user's own words the fact comes from, copied exactly.

Answer with a JSON list of objects and nothing else, in this shape (replace every <...>):
[{"text": "The user <what the user said, in the third person>.", "category": "<category>", \
"subject": "user", "predicate": "<RELATION>", "object": "<name from the fact>", \
"evidence": "<the user's exact words>"}]
or [] when there is nothing to remember."""

EXTRACTION_INPUT = """\
Earlier turns (context only):
{context}

Latest user message (extract from this only):
{message}"""

EXTRACTION_INPUT_WHOLE = """\
The assistant's turns (context only):
{context}

The user's messages (extract from these only):
{message}"""

# Example sentences of earlier versions of these prompts, which small models copied into results.
EXAMPLE_FACTS = ("The user's sister is called Ana.", "The user is vegetarian.",
                 "The user loves sushi and no longer likes pizza.", "The user has a dog called Rex.")

EXTRACTION_SCHEMA: dict = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {key: {"type": "string"} for key in
                       ("text", "category", "subject", "predicate", "object", "evidence")},
        "required": ["text", "subject", "predicate", "object"],
    },
}



def bounded(schema: dict, items: int, chars: int = 0) -> dict:
    """`schema` (an array of objects) that also says how much an answer may hold: at most `items`
    objects, each string at most `chars` long. A server that turns the schema into a grammar (llama.cpp:
    memvault's own, llm.local_model) then stops there, where a small model would ramble on to max_tokens
    (SmolLM2 wrote 1,024 tokens of repeats for 3 facts, 65 s under load; bounded, 31 s)."""
    strings = {name: {**spec, "maxLength": chars} if chars and spec.get("type") == "string" else spec
               for name, spec in schema["items"]["properties"].items()}
    return {**schema, "maxItems": items, "items": {**schema["items"], "properties": strings}}


# The second judge (memvault.curate.judge): one yes/no question about one fact the local rules refused.
JUDGE = """\
You check one memory before it is stored: does the user's own message state this fact about the user?

Answer "yes" only when the user's message itself says it, in these or other words ("I relocated to \
Denver" states "The user lives in Denver"). Answer "no" when:
- the fact is a guess, an interpretation or a feeling the message does not state;
- the fact gives a detail the message does not (what, which kind, where, when, why, with whom);
- the message wishes, plans, asks or supposes it, or says the opposite;
- it is about someone else (the person the user talks to, a friend, a relative), or only the earlier \
turns say it. The earlier turns are context only: they tell who "she" is or where "there" is.

Answer with JSON only: {"verdict": "yes"} or {"verdict": "no"}"""

JUDGE_INPUT = """\
Earlier turns (context only):
{context}

The user's message:
{message}

The fact:
{fact}"""

# One word of two: a server that turns the schema into a grammar (memvault's own) can answer nothing else.
JUDGE_SCHEMA: dict = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["yes", "no"]}},
    "required": ["verdict"],
    "additionalProperties": False,
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

Never add facts of your own: a "text" says only what the new fact and the stored memory say.

Answer with a JSON list of events and nothing else, in this shape (replace every <...>):
[{"fact": <fact number>, "event": "UPDATE", "id": "<stored id>", "text": "<the stored memory and the new fact, \
combined>"},
 {"fact": <fact number>, "event": "ADD", "text": "<the new fact>"}]"""

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
