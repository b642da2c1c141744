"""`memvault graph ENTITY` (the facts' triples as a graph) and `memvault rules add|list|rm` (procedural rules)."""

from typing import Annotated

import typer

from memvault.cli.base import command, group, open_memvault, read_text_argument
from memvault.cli.options import AgentOpt, ConfigOpt, ConversationOpt, JsonOpt, LiveIdArg, RunOpt, UserOpt, VaultOpt
from memvault.cli.output import age, print_json, say, table
from memvault.errors import MemvaultError

rules_app = group("rules", "Standing instructions to the assistant (procedural rules), capped per scope.")


@command("graph")
def graph(
    entity: Annotated[str, typer.Argument(help="An entity: a person, place or thing named in facts' triples.",
                                          show_default=False)],
    depth: Annotated[int, typer.Option("--depth", "-d", min=1, max=5, help="How many hops from the entity.")] = 1,
    conversation: ConversationOpt = None, user: UserOpt = None, agent: AgentOpt = None, run: RunOpt = None,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Print an entity's neighbourhood in the graph derived from facts' triples (aliases merged)."""
    from memvault.shapes import named_scopes

    found = open_memvault(vault, config).graph(entity, depth, conversation, named_scopes(user, agent, run))
    if json:
        print_json(found.to_dict())
        return
    if not found.relations:
        say(f"No relations for {entity!r}.")
        return
    names = f" ({', '.join(found.names)})" if found.names else ""
    say(f"{found.entity}{names}: {len(found.relations)} relation(s)")
    table(["hop", "source", "relationship", "destination", "fact", "id"],
          [[r.depth, r.source, r.relationship, r.destination, r.text, r.memory_id[:8]] for r in found.relations])


@command("add", group=rules_app)
def rules_add(
    text: Annotated[str, typer.Argument(help="The instruction ('-' reads standard input).", show_default=False)],
    conversation: ConversationOpt = None, user: UserOpt = None, agent: AgentOpt = None, run: RunOpt = None,
    no_llm: Annotated[bool, typer.Option("--no-llm", help="Do not ask the LLM which rules this one "
                                         "supersedes.")] = False,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Add a rule (one commit). Rules it supersedes, and the oldest past rules.max_active, are archived.
    A request to drop safety is refused."""
    from memvault.shapes import named_scopes

    memvault = open_memvault(vault, config)
    result = memvault.add_rule(read_text_argument(text), conversation, named_scopes(user, agent, run),
                               llm=None if no_llm else memvault.llm())
    if result.event == "DROP":
        raise MemvaultError(f"not stored: {result.reason}")
    if json:
        print_json(result.to_dict())
        return
    if result.event == "NONE":
        say(f"Already in force: [{result.rule.id[:8]}] {result.rule.text}")
    else:
        say(f"Added rule {result.rule.id[:8]}: {result.rule.text}")
    for rule, why in result.archived:
        say(f"Archived [{rule.id[:8]}] {rule.text} ({why})")
    for note in result.notes:
        say(f"note: {note}")


@command("list", group=rules_app)
def rules_list(
    conversation: ConversationOpt = None, user: UserOpt = None, agent: AgentOpt = None, run: RunOpt = None,
    archived: Annotated[bool, typer.Option("--archived", help="List archived rules instead.")] = False,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """List the active (or archived) rules of a scope, oldest first."""
    from memvault.shapes import named_scopes

    rules = open_memvault(vault, config).rules(conversation, named_scopes(user, agent, run), archived)
    if json:
        print_json([rule.to_dict() for rule in rules])
    else:
        table(["id", "rule", "age"], [[rule.id[:8], rule.text, age(rule.created_at)] for rule in rules])


@command("rm", group=rules_app)
def rules_rm(rule_id: LiveIdArg, vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False) -> None:
    """Archive a rule (soft delete: it moves to deleted/rules/, git keeps it)."""
    removed = open_memvault(vault, config).remove_rule(rule_id)
    print_json({"archived": removed.id}) if json else say(f"Archived rule {removed.id[:8]}: {removed.text}")
