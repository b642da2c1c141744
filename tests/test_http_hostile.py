"""Hostile HTTP at the server (issue 23, items 6 and 7): a 64 KB path is a 414, a body both sized and
chunked is a 400 (RFC 9112 §6.1), a nonsense chunk size logs no traceback, hop-by-hop headers (and
those `Connection:` names) never reach the upstream, and no path in memvault's or mem0's namespaces
is ever passed to the LLM: the pass-through is an allow-list (OpenAI's API, plus what the operator adds)."""

from __future__ import annotations

import logging
import socket

import httpx
import pytest

from memvault.server.run import running
from tests.support.server import isolated_env, server_settings
from tests.support.upstream import served_upstream


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    home = tmp_path_factory.mktemp("home")
    with isolated_env(home), served_upstream() as upstream:
        settings = server_settings(home / "vault", upstream.root + "/v1", llm_key="operator-key")
        settings.server.passthrough_paths = "api/tags, props"
        with running(settings) as url:
            yield url, upstream


def raw(url: str, request: bytes, wait: float = 30) -> bytes:
    """Send bytes as they are (no client would); the status line of the answer ("" when none, the
    connection closed after `wait` seconds of silence)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as conn:
        conn.sendall(request)
        answer = b""
        try:
            while chunk := conn.recv(65536):
                answer += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return answer.split(b"\r\n", 1)[0]


HEAD = b"Host: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\n"


def test_a_64_kb_path_is_a_414(served):
    url, _ = served
    for path in (b"/v1/" + b"a" * 65536, b"/" + b"m" * 65536, b"/v1/models?q=" + b"q" * 65536):
        assert raw(url, b"GET " + path + b" HTTP/1.1\r\n" + HEAD + b"\r\n").startswith(b"HTTP/1.1 414")


def test_content_length_and_transfer_encoding_together_are_refused(served):
    url, upstream = served
    before = len(upstream.requests)
    line = raw(url, b"POST /v1/memories/ HTTP/1.1\r\n" + HEAD + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n"
               b"\r\n2\r\n{}\r\n0\r\n\r\n")
    assert line.startswith(b"HTTP/1.1 400")
    line = raw(url, b"POST /v1/embeddings HTTP/1.1\r\n" + HEAD + b"Content-Length: 2\r\nTransfer-Encoding: chunked\r\n"
               b"\r\n2\r\n{}\r\n0\r\n\r\n")
    assert line.startswith(b"HTTP/1.1 400") and len(upstream.requests) == before


@pytest.mark.parametrize("path", [b"/v1/embeddings", b"/v1/chat/completions", b"/memories", b"/v1/memories/"])
def test_a_nonsense_chunk_size_logs_no_traceback(served, caplog, path):
    url, _ = served
    with caplog.at_level(logging.WARNING):
        # The server waits for that many bytes, so the client gives up and goes away mid-body.
        raw(url, b"POST " + path + b" HTTP/1.1\r\n" + HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
            b"ffffffffffffffffffff\r\n{}\r\n0\r\n\r\n", wait=2)
        assert httpx.get(url + "/health", timeout=60).status_code == 200  # the server serves on
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]


def test_headers_named_in_connection_and_hop_by_hop_ones_never_reach_the_upstream(served):
    url, upstream = served
    reply = httpx.get(url + "/v1/models", timeout=60, headers={
        "Connection": "keep-alive, X-Secret-Hop", "X-Secret-Hop": "internal", "Keep-Alive": "timeout=5",
        "Proxy-Authorization": "Basic abc", "TE": "trailers", "X-Kept": "yes"})
    assert reply.status_code == 200
    seen = {name.lower() for name in upstream.requests[-1]["headers"]}
    assert "x-kept" in seen
    assert not seen & {"x-secret-hop", "keep-alive", "proxy-authorization", "te"}


NAMESPACES = [("GET", "/entities"), ("DELETE", "/entities/user/vic"), ("GET", "/v1/entities"),
              ("GET", "/v1/entities/"), ("DELETE", "/v1/entities/user/vic"), ("GET", "/v1/configure"),
              ("GET", "/configure"), ("POST", "/v1/configure"), ("GET", "/v2/memories/"), ("POST", "/v2/anything"),
              ("GET", "/v3/whatever"), ("GET", "/search"), ("PUT", "/reset"), ("GET", "/v1/reset"),
              ("PATCH", "/memories/x"), ("GET", "/api/v1/orgs/"), ("GET", "/v1/batch/"), ("GET", "/v1/ping"),
              ("GET", "/v1//memories/x"), ("GET", "/x/../v1/entities"), ("GET", "/other/path"),
              ("POST", "/v1/admin/keys")]


@pytest.mark.parametrize(("method", "path"), NAMESPACES)
def test_no_path_outside_the_allow_list_reaches_the_upstream(served, method, path):
    url, upstream = served
    before = len(upstream.requests)
    reply = httpx.request(method, url + path, timeout=60)
    assert reply.status_code < 500 or reply.status_code == 501, (path, reply.status_code)  # memvault answers
    assert len(upstream.requests) == before, f"{method} {path} reached the LLM's address"


def test_configure_is_a_403_and_openai_and_operator_paths_pass(served):
    url, upstream = served
    assert httpx.get(url + "/configure", timeout=60).status_code == 403
    for path, upstream_path in (("/v1/models", "/v1/models"), ("/v1/embeddings", "/v1/embeddings"),
                                ("/api/tags", "/v1/api/tags"), ("/v1/props", "/v1/props")):
        assert httpx.get(url + path, timeout=60).status_code == 200, path
        assert upstream.requests[-1]["path"] == upstream_path
