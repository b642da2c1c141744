"""The interactive `memvault chat`: a read-answer loop with slash commands and an answer Ctrl-C can stop.

A line that starts with "/" is a command for memvault (never sent to the model, never stored); "//"
sends a message that starts with "/". Ctrl-C during an answer stops it: the user's message is stored
and curated as any other, the partial answer is not stored (a reply cut short, often a runaway one,
is not something to remember). Ctrl-C at the prompt clears the line; Ctrl-D or /exit leaves, and
leaving ends the session.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from memvault.cli.line_input import LineReader, history_dir_of
from memvault.cli.output import console, err_console, for_terminal, say, table, warn
from memvault.errors import MemvaultError

HELP = """Commands (never sent to the model, never stored):
  /help            this list
  /memories [TEXT] the memories used for the last answer; with TEXT, what would be injected for it
  /forget ID       forget a memory (soft delete; `memvault history ID` keeps its past)
  /incognito       toggle incognito: while on, nothing is read from or written to memory
  /session end     end the session now (held facts promoted or dropped, summary written); chat on
  /exit, /quit     leave (Ctrl-D too); the session ends
  //text           send a message that starts with "/"
Ctrl-C stops an answer (your message is kept) or clears the line."""
# Kept in the in-process history after an interrupted answer, so user and assistant still alternate
# (chat templates of local models require it); never stored.
INTERRUPTED = "[the answer was interrupted by the user]"


def show_memories(hits) -> None:
    if hits:
        table(["#", "id", "role", "memory", "score"],
              [[h.rank, h.id[:8], h.role, h.text, f"{h.total:.2f}"] for h in hits], title="memories used")


def stream_reply(llm, messages: list[dict], pretty: bool) -> str:
    """Print the reply as it streams (rendered as markdown on a terminal); returns the full text.
    Interrupted (Ctrl-C), the stream is closed, so the connection to the model is let go at once."""
    stream = llm.stream(messages)
    try:
        return print_stream(stream, pretty)
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


def print_stream(stream, pretty: bool) -> str:
    """Print `stream` as it comes; returns the text to store: an answer that degenerates (a loop,
    runaway length) is stopped, and kept only up to its loop (converse.degenerate)."""
    from memvault.converse.degenerate import LoopWatch, watched

    chunks: list[str] = []
    watch = LoopWatch()
    if not pretty:
        for delta in watched(stream, watch):
            chunks.append(delta)
            sys.stdout.write(delta)
            sys.stdout.flush()
        sys.stdout.write("\n")
        sys.stdout.flush()
    else:
        from rich.live import Live
        from rich.markdown import Markdown

        with Live(Markdown(""), console=console(), refresh_per_second=12, vertical_overflow="visible") as live:
            for delta in watched(stream, watch):
                chunks.append(delta)
                live.update(Markdown("".join(chunks)))
    if watch.finish() is None:  # its last line may close a loop too
        return "".join(chunks)
    err_console().print(f"(answer stopped: {watch.cut.reason}; only what came before it is remembered)",
                        style="dim", markup=False, highlight=False)
    return "".join(chunks)[:watch.cut.keep].rstrip()


def report_policy(session) -> None:
    """The write policy's HOLD and DROP events, one dim line each on stderr: never silent."""
    while session.events:  # popped one by one: the curation thread may append meanwhile
        event = session.events.pop(0)
        word = "held" if event.event == "HOLD" else "not remembered"
        err_console().print(f"{word}: {for_terminal(event.new_memory or '')} ({event.reason})", style="dim",
                            markup=False, highlight=False)


def end_session(session, llm) -> None:
    """Chat exit: the session ends (memvault.core.sessions.end_session), and the user sees what it did."""
    if not session.use_memory:
        return
    ended = session.memvault.end_session(session.conversation, llm)
    if ended is None:
        return
    session.events.extend(e for e in ended.events if e.event == "DROP")
    report_policy(session)
    promoted = sum(1 for e in ended.events if e.event in ("ADD", "UPDATE"))
    if ended.summary is not None or promoted:
        say(f"Session saved: {promoted} held fact(s) kept" + (", summary written" if ended.summary else "") + ".")



@dataclass
class Repl:
    session: object  # converse.MemoryChat
    llm: object
    show: bool
    history: list[dict] = field(default_factory=list)
    last_hits: list = field(default_factory=list)
    remembers: bool = True  # a chat with memory (not --no-memory nor --incognito): /incognito can pause it
    leaving: bool = False
    storing: bool = False  # a message is being written: a stop request waits for it

    def __post_init__(self) -> None:
        self.remembers = self.session.use_memory
        self.commands: dict[str, Callable[[str], None]] = {
            "/help": self.help, "/?": self.help, "/memories": self.memories, "/forget": self.forget,
            "/incognito": self.incognito, "/session": self.session_command,
            "/exit": self.exit, "/quit": self.exit, "/q": self.exit,
        }

    def run(self) -> None:
        with stopped_by_sigterm(self):
            self.loop()

    def stop_requested(self) -> None:
        """SIGTERM (a service manager's stop, the terminal closing): like Ctrl-C during an answer (the
        message is kept), then the chat leaves as /exit does, ending the session."""
        self.leaving = True
        if not self.storing:
            raise KeyboardInterrupt

    def loop(self) -> None:
        reader = LineReader(history_dir_of(self.session.memvault if self.remembers else None))
        say(f"Chatting in '{self.session.conversation}' ({self.llm.settings.model}). /help for commands, "
            "/exit or Ctrl-D to leave.")
        while not self.leaving:
            try:
                text = reader.read("you>")
            except EOFError:
                break
            if not text.strip():
                continue
            if text.startswith("/") and not text.startswith("//"):
                self.command(text.strip())
            else:
                self.answer(text[1:] if text.startswith("//") else text)
        self.leave()

    def command(self, line: str) -> None:
        word, _, rest = line.partition(" ")
        handler = self.commands.get(word.lower())
        if handler is None:
            say(f"unknown command {for_terminal(word)[:40]} (/help lists them; //text sends text starting with /)")
            return
        try:
            handler(rest.strip())
        except MemvaultError as exc:  # a bad id or the like: one line, and the chat goes on
            warn(str(exc))

    def answer(self, text: str) -> None:
        from memvault.converse.chat import ChatTurn

        session = self.session
        self.history.append({"role": "user", "content": text})
        turn = None
        try:
            turn = session.prepare(self.history)
            if turn.history is not None:  # compacted: the next turns start from the shorter history
                self.history[:] = turn.history
            self.last_hits = turn.hits
            if self.show:
                show_memories(turn.hits)
            reply = stream_reply(self.llm, turn.messages, sys.stdout.isatty())
        except KeyboardInterrupt:
            say("(answer interrupted: your message is kept, the partial answer is not)")
            self.history.append({"role": "assistant", "content": INTERRUPTED})
            self.keep(turn or ChatTurn(messages=[]), text, "")
            return
        except MemvaultError as exc:  # the model failed, or the message is over a limit: say so, chat on
            self.history.pop()  # nothing was answered: the user sees why and can send it again
            warn(str(exc))
            return
        self.history.append({"role": "assistant", "content": reply})
        self.keep(turn, text, reply)

    def keep(self, turn, text: str, reply: str) -> None:
        """Store the turn (the user's message alone when `reply` is empty) and curate it."""
        session = self.session
        self.storing = True
        try:
            with interrupts_held():  # a second, impatient Ctrl-C must not cost the message being stored
                session.persist(turn, text, reply)
        finally:
            self.storing = False
        session.curate(turn, [m for m in self.history if m["content"] != INTERRUPTED], self.llm)
        for problem in session.errors:
            warn(problem)
        session.errors.clear()
        report_policy(session)

    def leave(self) -> None:
        session = self.session
        if session.pending:
            say("Saving what was learned...")
        session.wait()
        report_policy(session)
        session.use_memory = self.remembers  # incognito at the end: what was stored before it still ends
        end_session(session, self.llm)  # held facts, the session summary and the daily log: one commit
        for problem in session.errors:
            warn(problem)

    # Slash commands: each gets the rest of the line.

    def help(self, _rest: str) -> None:
        err_console().print(HELP, markup=False, highlight=False)

    def memories(self, rest: str) -> None:
        if rest:
            if not self.session.use_memory:
                say("incognito: memory is not read")
                return
            hits = self.session.prepare([{"role": "user", "content": rest}]).hits
        else:
            hits = self.last_hits
        if not hits:
            say("no memories" + (" match that" if rest else " were used for the last answer"))
            return
        show_memories(hits)

    def forget(self, rest: str) -> None:
        from memvault.core.caller import Caller
        from memvault.errors import UsageError

        if not rest or " " in rest:
            raise UsageError("usage: /forget ID (an id or its first 8 characters, as /memories shows)")
        if self.session.memvault is None:
            raise UsageError("this chat opened no vault (--incognito): there is nothing to forget")
        # Only a memory of the chat's owner: another user's is not this chat's to see.
        _, entry = self.session.memvault.get_live(rest, caller=Caller.of(self.session.scopes, person=True))
        self.session.memvault.delete([entry.id])
        self.last_hits = [hit for hit in self.last_hits if hit.id != entry.id]
        say(f"forgot {entry.id[:8]}  {for_terminal(entry.text)}")

    def incognito(self, _rest: str) -> None:
        if not self.remembers:
            say("this chat reads and writes no memory from the start (--incognito or --no-memory)")
            return
        self.session.use_memory = not self.session.use_memory
        if self.session.use_memory:
            say("incognito off: memory is read and written again")
        else:
            say("incognito on: nothing is read from or written to memory until /incognito again")

    def session_command(self, rest: str) -> None:
        from memvault.errors import UsageError

        if rest.lower() != "end":
            raise UsageError("usage: /session end")
        if self.session.memvault is None or not self.session.use_memory:
            say("incognito: there is no stored session to end")
            return
        self.session.wait()
        report_policy(self.session)
        end_session(self.session, self.llm)
        self.history.clear()
        say("Session ended; a new one starts with your next message.")

    def exit(self, _rest: str) -> None:
        self.leaving = True


@contextmanager
def stopped_by_sigterm(repl: Repl) -> Iterator[None]:
    """SIGTERM handled by `repl.stop_requested` while inside (main thread only)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda _signum, _frame: repl.stop_requested())
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def interrupts_held() -> Iterator[None]:
    """Ctrl-C ignored inside (the main thread only can hold it; elsewhere nothing changes)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
