"""`memvault chat`: talk to the configured LLM with memory injected; one-shot with -m for pipes."""

from typing import Annotated, Optional

import typer

from memvault.cli.base import command, open_memvault, read_text_argument
from memvault.cli.options import AgentOpt, ConfigOpt, ConversationOpt, RunOpt, UserOpt, VaultOpt
from memvault.cli.output import err_console, for_terminal, warn


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
    incognito: Annotated[bool, typer.Option("--incognito", help="Memory neither read nor written: no file, "
                                            "commit, index row or session state; the chat lives in this "
                                            "process only.")] = False,
    memory_mode: Annotated[Optional[str], typer.Option("--memory-mode", help="normal, or incognito (alias: "
                                                       "guest), as --incognito.", show_default=False)] = None,
    vault: VaultOpt = None, config: ConfigOpt = None,
) -> None:
    """Chat with memory: relevant memories are injected, and what you say is remembered.

    What you say goes through the write policy (each fact stored now, held until the session ends, or
    dropped, and you are told). Leaving the chat (/exit, Ctrl-D) ends the session: held facts are
    promoted or dropped and, after 3+ turns, a summary of the session is stored, in one commit.
    /help lists the chat's commands (/memories, /forget ID, /incognito, /session end, /exit); Ctrl-C
    stops an answer and keeps your message (the partial answer is not stored).
    """
    from memvault.extras import require

    require("chat")
    from memvault.converse import MemoryChat
    from memvault.shapes import named_scopes

    if is_incognito(incognito, memory_mode):
        session, llm = incognito_chat(vault, config, model)
    else:
        memvault = open_memvault(vault, config, **{"llm.model": model})
        llm = require_llm(memvault.llm())
        session = MemoryChat(memvault, conversation or "default", named_scopes(user, agent, run),
                             use_memory=not no_memory, retrieval={"top_k": top_k}, llm=llm)
        if not no_memory:
            memvault.ensure_core()  # an older vault gets its core files (one commit) before the first prompt
    if message is not None:
        one_shot(session, llm, read_text_argument(message), show)
        return
    interactive(session, llm, show)


def is_incognito(incognito: bool, memory_mode: str | None) -> bool:
    from memvault.errors import UsageError
    from memvault.settings import MEMORY_MODES

    if memory_mode is not None and memory_mode.strip().lower() not in MEMORY_MODES:
        raise UsageError(f"unknown memory mode {memory_mode!r} (expected one of {', '.join(MEMORY_MODES)})")
    return incognito or MEMORY_MODES.get((memory_mode or "normal").strip().lower(), False)


def incognito_chat(vault, config, model):
    """A chat that opens no vault: settings and the LLM only, so nothing can be read or written."""
    from memvault.converse import MemoryChat
    from memvault.curate.llm import LLMClient
    from memvault.settings import load

    settings = load(config, {"vault.path": str(vault) if vault else None, "llm.model": model})
    llm = require_llm(LLMClient(settings.llm) if settings.llm.model else None)
    return MemoryChat(None, "incognito", use_memory=False, settings=settings), llm


def require_llm(llm):
    if llm is None:
        from memvault.errors import LLMError

        raise LLMError("no LLM configured: set llm.model (e.g. `memvault config set llm.model ollama/qwen3:4b`), "
                       "MEMVAULT_LLM_MODEL or --model")
    return llm


def one_shot(session, llm, text: str, show: bool) -> None:
    from memvault.cli.chat_repl import report_policy, stream_reply

    history = [{"role": "user", "content": text}]
    turn = session.prepare(history)
    if show:
        print_memories_used(turn.hits)
    answer = stream_reply(llm, turn.messages, pretty=False)
    session.persist(turn, text, answer)
    session.curate(turn, history, llm, background=False)  # after the answer is out: the reader has it
    report_policy(session)  # a one-shot turn joins the conversation's open session (ended by idle or cron)
    for problem in session.errors:
        warn(problem)


def print_memories_used(hits) -> None:
    """One dim line per memory on stderr, so the answer on stdout stays clean for a pipe."""
    for hit in hits:  # the memory's text is literal, never markup
        err_console().print(f"memory {hit.rank}: [{hit.role}] {for_terminal(hit.text)} ({hit.total:.2f})", style="dim",
                            markup=False, highlight=False)


def interactive(session, llm, show: bool) -> None:
    """The read-answer loop (memvault.cli.chat_repl): line editing, slash commands, Ctrl-C."""
    from memvault.cli.chat_repl import Repl

    Repl(session, llm, show).run()
