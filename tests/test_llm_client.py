"""LLMClient through real litellm against a tiny OpenAI-compatible server on 127.0.0.1 (no network)."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memvault.curate.llm import LLMClient
from memvault.errors import LLMError
from memvault.settings import LLMSettings

REPLY = "Hello from the scripted server"
MESSAGES = [{"role": "user", "content": "Say hello"}]


class ScriptedServer:
    """Answers chat completions; `script` lists what to do before answering normally: an HTTP
    status to fail with, or "break" to fail a stream after its first words."""

    def __init__(self) -> None:
        self.script: list[int | str] = []
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                # Header names are case-insensitive (RFC 9110): litellm/openai now send them in lower case.
                server.headers.append({k.lower(): v for k, v in self.headers.items()})
                status = server.script.pop(0) if server.script else 200
                if status == "break":
                    self.send_stream(body, broken=True)
                elif status != 200:
                    self.send_json(status, {"error": {"message": f"scripted status {status}", "type": "error"}})
                elif body.get("stream"):
                    self.send_stream(body)
                else:
                    self.send_json(200, completion(body))

            def send_json(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def send_stream(self, body, broken=False):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                pieces = [{"role": "assistant", "content": ""}] + [{"content": w} for w in words(REPLY)] + [{}]
                for i, delta in enumerate(pieces):
                    finish = "stop" if i == len(pieces) - 1 else None
                    chunk = {
                        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": body["model"],
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                    }
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.flush()
                    if broken and i == 2:
                        error = {"error": {"message": "overloaded mid-stream", "type": "server_error", "code": 503}}
                        self.wfile.write(f"data: {json.dumps(error)}\n\n".encode())
                        return
                self.wfile.write(b"data: [DONE]\n\n")

            def log_message(self, *args):  # keep test output clean
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def words(text):
    parts = text.split(" ")
    return [parts[0]] + [" " + p for p in parts[1:]]


def completion(body):
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
    }


@pytest.fixture
def server():
    srv = ScriptedServer()
    yield srv
    srv.close()


def client(api_base, max_retries=3, model="openai/scripted"):
    settings = LLMSettings(model=model, api_base=api_base, api_key="test-key", timeout=10, max_retries=max_retries)
    return LLMClient(settings, retry_base_delay=0.001)


def test_complete_sends_the_configured_request(server):
    assert client(server.api_base).complete(MESSAGES, json_schema={"type": "array"}) == REPLY
    [request] = server.requests
    assert request["model"] == "scripted" and request["messages"] == MESSAGES
    assert request["temperature"] == 0.0
    assert request["response_format"]["json_schema"]["schema"] == {"type": "array"}
    assert request["max_tokens"] == LLMSettings().max_tokens  # curation answers are bounded
    assert server.headers[0]["authorization"] == "Bearer test-key"


def test_stream_yields_several_deltas(server):
    deltas = list(client(server.api_base).stream(MESSAGES))
    assert len(deltas) > 1 and "".join(deltas) == REPLY
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["max_tokens"] == 1024  # llm.max_tokens: a looping model stops there at the latest


def test_rate_limit_is_retried_then_succeeds(server):
    server.script = [429, 429]
    assert client(server.api_base, max_retries=3).complete(MESSAGES) == REPLY
    assert len(server.requests) == 3


def test_stream_retries_a_failure_before_the_first_token(server):
    server.script = [503]
    assert "".join(client(server.api_base).stream(MESSAGES)) == REPLY
    assert len(server.requests) == 2


def test_stream_failing_after_the_first_token_is_not_retried(server):
    server.script = ["break"]
    deltas = []
    with pytest.raises(LLMError):
        for delta in client(server.api_base).stream(MESSAGES):
            deltas.append(delta)
    assert deltas == words(REPLY)[:2]
    assert len(server.requests) == 1


def test_server_error_beyond_retries_is_one_line_llm_error(server):
    server.script = [500] * 10
    with pytest.raises(LLMError) as caught:
        client(server.api_base, max_retries=2).complete(MESSAGES)
    message = str(caught.value)
    assert len(server.requests) == 3  # the first try and two retries
    assert "\n" not in message
    assert "openai/scripted" in message and server.api_base in message and "check llm.model, llm.api_base" in message
    assert "scripted status 500" in message


def test_client_errors_are_not_retried(server):
    server.script = [401]
    with pytest.raises(LLMError):
        client(server.api_base).complete(MESSAGES)
    assert len(server.requests) == 1


def test_a_refused_json_schema_is_dropped_once(server):
    server.script = [400]
    assert client(server.api_base).complete(MESSAGES, json_schema={"type": "array"}) == REPLY
    assert "response_format" in server.requests[0] and "response_format" not in server.requests[1]


def test_connection_refused_names_the_address():
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    api_base = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(LLMError) as caught:
        client(api_base, max_retries=1).complete(MESSAGES)
    assert api_base in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(LLMError):
        list(client(api_base, max_retries=0).stream(MESSAGES))


def test_no_model_configured():
    llm = LLMClient(LLMSettings())
    with pytest.raises(LLMError, match="no LLM configured"):
        llm.complete(MESSAGES)
    with pytest.raises(LLMError, match="no LLM configured"):
        next(iter(llm.stream(MESSAGES)))


def test_a_timeout_says_what_timed_out_and_which_setting_raises_it():
    # A server that accepts the connection and never answers: what a busy local model looks like.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        api_base = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        settings = LLMSettings(model="openai/slow", api_base=api_base, timeout=0.5, max_retries=0)
        with pytest.raises(LLMError) as caught:
            LLMClient(settings).complete(MESSAGES)
    message = str(caught.value)
    assert "openai/slow" in message and api_base in message and "\n" not in message
    assert "within llm.timeout (0.5 s)" in message and "config set llm.timeout" in message
    assert "set llm.model" not in message  # it is set: that was the old, misleading advice
