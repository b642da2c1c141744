"""`memvault chat`: talk to the configured LLM with memory injected; one-shot with -m for pipes."""

import sys
from typing import Annotated, Optional

import typer

from memvault.cli.base import command, open_memvault, read_text_argument
from memvault.cli.commands.entries import scopes_of
from memvault.cli.options import AgentOpt, ConfigOpt, ConversationOpt, RunOpt, UserOpt, VaultOpt
from memvault.cli.output import console, err_console, for_terminal, say, table, warn

EXIT_WORDS = {"/exit", "/quit", "/q"}


def show_memories(hits) -> None:
    if hits:
        table(["#", "role", "memory", "score"], [[h.rank, h.role, h.text, f"{h.total:.2f}"] for h in hits],
              title="memories used")


def stream_reply(llm, messages: list[dict], pretty: bool) -> str:
    """Print the reply as it streams (rendered as markdown on a terminal); returns the full text."""
    chunks: list[str] = []
    if not pretty:
        for delta in llm.stream(messages):
            chunks.append(delta)
            sys.stdout.write(delta)
            sys.stdout.flush()
        sys.stdout.write("\n")
        sys.stdout.flush()
        return "".join(chunks)
    from rich.live import Live
    from rich.markdown import Markdown

    with Live(Markdown(""), console=console(), refresh_per_second=12, vertical_overflow="visible") as live:
        for delta in llm.stream(messages):
            chunks.append(delta)
            live.update(Markdown("".join(chunks)))
    return "".join(chunks)


@command("chat")
def chat(
    message: Annotated[Optional[str], typer.Option("--message", "-m", help="One message, answer printed alone "
                                                   "(fit for pipes; '-' reads standard input).",
                                                   show_default=False)] = None,
    conversation: ConversationOpt = None, user: UserOpt = None, agent: AgentOpt = None, run: RunOpt = None,
    model: Annotated[Optional[str], typer.Option("--model", help="litellm model string for this chat.",
                                                 show_default=False)] = None,
    no_memory: Annotated[bool, typer.Option("--no-memory", help="Neither retrieve nor store anything.")] = False,
    show: Annotated[bool, typer.Option("--show-memories", help="Show the memories injected before each reply.")
                    ] = False,
    top_k: Annotated[Optional[int], typer.Option("--top-k", "-k", min=1, help="Memories to inject.",
                                                 show_default=False)] = None,
    vault: VaultOpt = None, config: ConfigOpt = None,
) -> None:
    """Chat with memory: relevant memories are injected, and what you say is remembered."""
    from memvault.converse import MemoryChat

    memvault = open_memvault(vault, config, **{"llm.model": model})
    llm = memvault.llm()
    if llm is None:
        from memvault.errors import LLMError

        raise LLMError("no LLM configured: set llm.model (e.g. `memvault config set llm.model ollama/qwen3:4b`), "
                       "MEMVAULT_LLM_MODEL or --model")
    session = MemoryChat(memvault, conversation or "default", scopes_of(user, agent, run), use_memory=not no_memory,
                         retrieval={"top_k": top_k}, llm=llm)
    if not no_memory:
        memvault.ensure_core()  # an older vault gets its core files (one commit) before the first prompt
    if message is not None:
        one_shot(session, llm, read_text_argument(message), show)
        return
    interactive(session, llm, show)


def one_shot(session, llm, text: str, show: bool) -> None:
    history = [{"role": "user", "content": text}]
    turn = session.prepare(history)
    if show:
        print_memories_used(turn.hits)
    answer = stream_reply(llm, turn.messages, pretty=False)
    session.persist(turn, text, answer)
    session.curate(turn, history, llm, background=False)  # after the answer is out: the reader has it
    session.log_day()  # the chat ends: what it learned goes to today's log
    for problem in session.errors:
        warn(problem)


def print_memories_used(hits) -> None:
    """One dim line per memory on stderr, so the answer on stdout stays clean for a pipe."""
    for hit in hits:  # the memory's text is literal, never markup
        err_console().print(f"memory {hit.rank}: [{hit.role}] {for_terminal(hit.text)} ({hit.total:.2f})", style="dim",
                            markup=False, highlight=False)


def interactive(session, llm, show: bool) -> None:
    pretty = sys.stdout.isatty()
    say(f"Chatting in '{session.conversation}' ({llm.settings.model}). /exit or Ctrl-D to leave.")
    history: list[dict] = []
    while True:
        try:
            text = console().input("[bold green]you>[/] ")
        except (EOFError, KeyboardInterrupt):
            break
        if text.strip() in EXIT_WORDS:
            break
        if not text.strip():
            continue
        history.append({"role": "user", "content": text})
        turn = session.prepare(history)
        if turn.history is not None:  # compacted: the next turns start from the shorter history
            history[:] = turn.history
        if show:
            show_memories(turn.hits)
        try:
            answer = stream_reply(llm, turn.messages, pretty)
        except KeyboardInterrupt:
            say("(reply interrupted)")
            history.pop()
            continue
        session.persist(turn, text, answer)
        session.curate(turn, list(history), llm)
        history.append({"role": "assistant", "content": answer})
        for problem in session.errors:
            warn(problem)
        session.errors.clear()
    if session.pending:
        say("Saving what was learned...")
    session.wait()
    session.log_day()  # the chat ends: what it learned goes to today's log
    for problem in session.errors:
        warn(problem)
