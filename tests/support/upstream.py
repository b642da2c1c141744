"""A small OpenAI-shaped upstream on loopback that records what it receives.

    upstream = Upstream(forward_to=local_llm)      # relay to a real model server (streams too)
    upstream = Upstream(fail=(429, "slow down"))   # answer every request with an OpenAI error
    upstream = Upstream()                          # answer at once: "ok" (for benchmarks)
    with serving(upstream.app()) as root:          # "http://127.0.0.1:PORT"
        ... settings.llm.api_base = root + "/v1"; upstream.requests[-1]["json"] ...

Used between memvault's proxy and the model server, so tests can assert what the LLM was sent.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

INSTANT_TEXT = "ok"


class Upstream:
    def __init__(self, forward_to: str | None = None, fail: tuple[int, str] | None = None) -> None:
        self.forward_to = forward_to.rstrip("/") if forward_to else None  # ".../v1" of the real server
        self.fail = fail
        self.requests: list[dict[str, Any]] = []
        self.relay_ends: list[float] = []  # time.monotonic() when each relayed answer was fully sent
        self.lock = threading.Lock()

    def chat_requests(self) -> list[dict[str, Any]]:
        with self.lock:
            return [r["json"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def app(self):
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse, Response, StreamingResponse
        from starlette.routing import Route

        async def handle(request):
            raw = await request.body()
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            with self.lock:
                self.requests.append({"method": request.method, "path": request.url.path, "json": body,
                                      "headers": dict(request.headers), "query": request.url.query, "body": raw})
            if self.fail:
                status, message = self.fail
                return JSONResponse({"error": {"message": message, "type": "upstream_error", "code": str(status)}},
                                    status_code=status)
            if self.forward_to:
                return await self.relay(request, raw, Response, StreamingResponse)
            if request.url.path.endswith("/models"):
                return JSONResponse({"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "me"}]})
            if isinstance(body, dict) and body.get("stream"):
                return StreamingResponse(instant_stream(), media_type="text/event-stream")
            return JSONResponse(instant_completion())

        return Starlette(routes=[Route("/{path:path}", handle, methods=["GET", "POST", "PUT", "DELETE"])])

    async def relay(self, request, raw: bytes, Response, StreamingResponse):
        import httpx

        client = httpx.AsyncClient(timeout=300)
        path = request.url.path.removeprefix("/v1")
        headers = {k: v for k, v in request.headers.items() if k in ("content-type", "authorization", "accept")}
        reply = await client.send(client.build_request(request.method, self.forward_to + path, content=raw,
                                                       headers=headers), stream=True)

        async def body():
            try:
                async for piece in reply.aiter_raw():
                    yield piece
            finally:
                self.relay_ends.append(time.monotonic())
                await reply.aclose()
                await client.aclose()

        return StreamingResponse(body(), status_code=reply.status_code,
                                 media_type=reply.headers.get("content-type"))


def instant_completion(text: str = INSTANT_TEXT) -> dict[str, Any]:
    return {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": "fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def stream_chunk(delta: dict, finish: str | None = None) -> bytes:
    chunk = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()), "model": "fake",
             "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


async def instant_stream():
    yield stream_chunk({"role": "assistant", "content": INSTANT_TEXT})
    yield stream_chunk({}, "stop")
    yield b"data: [DONE]\n\n"


class LoopingUpstream:
    """A model that degenerates: one good line, then one line repeated for ever (streamed, until the
    client closes the request; at most MAX_LINES, so a test that fails still ends), or 686 times (not
    streamed, as the issue's stored answer). Streamed a word a chunk, as models do (litellm gives up
    on its own after 100 identical chunks in a row, which a real loop never sends). Records the
    requests, the lines it streamed, and when a stream was closed under it."""

    GOOD = "Your sister is called Ana."
    LOOP = "I am a helpful assistant and I am here to help."
    MAX_LINES = 20_000

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.streamed = 0  # loop lines sent by the last stream
        self.closed = threading.Event()  # the last stream ended (its client went away, or MAX_LINES)

    def app(self):
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse, StreamingResponse
        from starlette.routing import Route

        async def handle(request):
            body = await request.json()
            self.requests.append(body)
            if body.get("stream"):
                self.closed.clear()
                return StreamingResponse(self.forever(), media_type="text/event-stream")
            return JSONResponse(instant_completion(self.GOOD + "\n" + (self.LOOP + "\n") * 686))

        return Starlette(routes=[Route("/{path:path}", handle, methods=["POST"])])

    async def forever(self):
        import asyncio

        self.streamed = 0
        try:
            yield stream_chunk({"role": "assistant", "content": self.GOOD + "\n"})
            while self.streamed < self.MAX_LINES:
                self.streamed += 1
                for word in self.LOOP.split(" "):  # a token or so a chunk, as models stream
                    yield stream_chunk({"content": word + " "})
                yield stream_chunk({"content": "\n"})
                await asyncio.sleep(0.002)
            yield stream_chunk({}, "stop")
            yield b"data: [DONE]\n\n"
        finally:
            self.closed.set()


@contextmanager
def serving(app, timeout: float = 30.0) -> Iterator[str]:
    """Serve an ASGI app with uvicorn in a thread on a free loopback port; yields "http://127.0.0.1:PORT"."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the fake upstream did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def served(fake):
    """A fake upstream (anything with an `app()`) served on loopback; its URL is then `fake.root`."""
    with serving(fake.app()) as root:
        fake.root = root
        yield fake


def served_upstream():
    """A recording fake upstream that answers every chat at once, served; its URL is `.root`."""
    return served(Upstream())


def chat_concurrently(url: str, asks: list[tuple[str, str]], timeout: float = 60.0) -> list[str]:
    """Send each (message, memory_id) as its own chat request, all at once, through the real `openai`
    client to the proxy at `url`; returns the replies' texts, in the order they came. Fails the test if
    a request failed or did not finish within `timeout`."""
    import openai

    client = openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0, timeout=timeout)
    replies, failures = [], []

    def ask(message: str, memory_id: str) -> None:
        try:
            reply = client.chat.completions.create(model="fake", messages=[{"role": "user", "content": message}],
                                                   extra_body={"memory_id": memory_id})
            replies.append(reply.choices[0].message.content)
        except Exception as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=ask, args=pair) for pair in asks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout * 2)
    assert not failures and len(replies) == len(asks), failures
    return replies
