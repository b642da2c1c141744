"""`memvault search QUERY`: the retrieval pipeline, as a table or JSON, with `--explain`."""

from typing import Annotated, Optional

import typer

from memvault.cli.base import command, open_memvault
from memvault.cli.options import (
    AgentOpt,
    AsOfOpt,
    ConfigOpt,
    ConversationOpt,
    IdArg,
    JsonOpt,
    RunOpt,
    UserOpt,
    VaultOpt,
    finite,
)
from memvault.cli.output import age, console, print_json, table


def show_notices(memvault) -> None:
    """Print the library's notices (an index being built or caught up) as `say` lines, on stdout."""
    from memvault.cli.output import say

    memvault.on_notice = say


@command("search")
def search(
    query: Annotated[str, typer.Argument(help="What to look for ('-' reads standard input).", show_default=False)],
    conversation: ConversationOpt = None, user: UserOpt = None, agent: AgentOpt = None, run: RunOpt = None,
    top_k: Annotated[Optional[int], typer.Option("--top-k", "-k", min=1, help="How many results [default: 5].",
                                                 show_default=False)] = None,
    recency_weight: Annotated[Optional[float], typer.Option("--recency-weight", min=0.0, max=1.0, callback=finite,
                                                            help="Weight of recency in the score.",
                                                            show_default=False)] = None,
    threshold: Annotated[Optional[float], typer.Option("--threshold", min=0.0, max=1.0, callback=finite,
                                                       help="Drop results with a lower relevance.",
                                                       show_default=False)] = None,
    mmr_lambda: Annotated[Optional[float], typer.Option("--mmr-lambda", min=0.0, max=1.0, callback=finite,
                                                        help="1 = relevance only, lower = more diverse.",
                                                        show_default=False)] = None,
    filter: Annotated[Optional[str], typer.Option("--filter", show_default=False, help=(
        "mem0 filter expression as JSON, e.g. "
        "'{\"AND\": [{\"user_id\": \"alice\"}, {\"topic\": {\"in\": [\"food\"]}}]}'."))] = None,
    explain: Annotated[bool, typer.Option("--explain", help="Show every stage's scores.")] = False,
    show_expired: Annotated[bool, typer.Option("--show-expired",
                                               help="Include memories past their expiration_date.")] = False,
    as_of: AsOfOpt = None, vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Search memories: dense + lexical candidates, rerank, threshold, recency, MMR."""
    from rich.markup import escape

    from memvault.cli.base import read_text_argument
    from memvault.shapes import filter_from_json, named_scopes

    query = read_text_argument(query)
    memvault = open_memvault(vault, config)
    show_notices(memvault)
    scopes, filters = named_scopes(user, agent, run), filter_from_json(filter, "--filter")
    as_of = memvault.resolve_as_of(as_of)  # once: the hits and their relations read the same past
    with memvault.holding_past(as_of):  # opened once for both
        hits = memvault.search_together(query, conversation, scopes, filters, as_of=as_of,
                                        show_expired=show_expired, top_k=top_k, recency_weight=recency_weight,
                                        score_threshold=threshold, mmr_lambda=mmr_lambda)
        relations = [] if json else memvault.relations(query, conversation, scopes, filters, as_of=as_of,
                                                       show_expired=show_expired)
    if json:
        print_json([{**hit.as_dict(), **({} if explain else {"explain": None})} for hit in hits])
        return
    team = ["vault"] if memvault.settings.vault.shared else []  # where each hit lives, when there are team vaults
    table(["#", "id", "text", "role", *team, "conversation", "age", "relevance", "recency", "score"],
          [[hit.rank, hit.id[:8], hit.text, hit.role, *([hit.vault_name] if team else []), hit.conversation_id,
            age(hit.created_at), f"{hit.relevance:.3f}", f"{hit.recency:.3f}", f"{hit.total:.3f}"] for hit in hits])
    if relations:
        console().print("Relations (from facts' triples):")
        table(["source", "relationship", "destination", "id"],
              [[r.source, r.relationship, r.destination, r.memory_id[:8]] for r in relations])
    if explain:
        for hit in hits:
            stages = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in hit.explain.items())
            console().print(f"[bold]#{hit.rank} {hit.id[:8]}[/bold] {escape(stages)}", soft_wrap=True, markup=True)


@command("similar")
def similar(
    memory_id: IdArg,
    conversation: ConversationOpt = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, help="How many neighbours.")] = 5,
    threshold: Annotated[Optional[float], typer.Option("--threshold", min=0.0, max=1.0, callback=finite,
                                                       help="Drop neighbours with a lower relevance.",
                                                       show_default=False)] = None,
    vault: VaultOpt = None, config: ConfigOpt = None, json: JsonOpt = False,
) -> None:
    """Memories near a memory (in every conversation unless -c): its text searched for, itself left out,
    by relevance alone (no recency, no diversity)."""
    memvault = open_memvault(vault, config)
    show_notices(memvault)
    _, entry = memvault.get(memory_id)
    hits = memvault.search(entry.text, conversation, top_k=top_k + 1, recency_weight=0.0, mmr_lambda=1.0,
                           score_threshold=threshold)
    hits = [hit for hit in hits if hit.id != entry.id][:top_k]
    if json:
        print_json([{**hit.as_dict(), "explain": None} for hit in hits])
        return
    table(["#", "id", "text", "role", "conversation", "age", "relevance"],
          [[rank, hit.id[:8], hit.text, hit.role, hit.conversation_id, age(hit.created_at), f"{hit.relevance:.3f}"]
           for rank, hit in enumerate(hits, start=1)])
