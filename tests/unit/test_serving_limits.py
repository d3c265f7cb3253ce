"""The connection limits every seed-gym server runs with (seed_gym.serving.server_config), over real
loopback sockets against a real uvicorn server, for both of uvicorn's HTTP implementations.

A slow client is detected by the server closing the socket (``recv`` returns ``b""``); each wait is
bounded (``BOUND_S``, far above the 1 s test timeout) only so that a server that never closes fails
instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import http.client
import select
import socket
import time
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi import FastAPI, Request

from seed_gym.serving import server_config, serve_in_thread

READ_TIMEOUT_S = 1.0
BOUND_S = 20.0


def make_app() -> FastAPI:
    app = FastAPI()

    @app.get("/ping")
    async def ping() -> dict:
        return {"ok": True}

    @app.post("/echo")
    async def echo(request: Request) -> dict:
        return {"body": (await request.body()).decode()}

    @app.get("/slow")
    async def slow() -> dict:
        await asyncio.sleep(2 * READ_TIMEOUT_S)  # a long generation: slower than the read timeout
        return {"ok": True}

    return app


@pytest.fixture(scope="module", params=["h11", "httptools"])
def server(request):
    if request.param == "httptools":
        pytest.importorskip("httptools")
    uvicorn_server, url = serve_in_thread(make_app(), read_timeout_s=READ_TIMEOUT_S, keep_alive_s=30,
                                          http=request.param)
    yield url
    uvicorn_server.should_exit = True


def connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    return socket.create_connection((parts.hostname, parts.port), timeout=BOUND_S)


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (fails if it never does)."""
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except socket.timeout:
        pytest.fail(f"the server kept a slow client's connection open for {BOUND_S} s")
    except ConnectionResetError:
        pass
    return received


def test_a_partial_header_is_closed_with_408(server):
    with connect(server) as sock:
        sock.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        assert read_until_closed(sock).startswith(b"HTTP/1.1 408")


def test_a_partial_body_is_closed_with_408(server):
    with connect(server) as sock:
        sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n" + b"x" * 10)
        assert read_until_closed(sock).startswith(b"HTTP/1.1 408")


def test_a_connection_that_sends_nothing_is_closed(server):
    with connect(server) as sock:
        assert read_until_closed(sock) == b""


def test_trickling_bytes_does_not_extend_the_deadline(server):
    """The deadline covers the whole request, not the gap between bytes (slowloris)."""
    with connect(server) as sock:
        sock.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        for _ in range(int(BOUND_S / 0.2)):
            if select.select([sock], [], [], 0.2)[0]:
                break
            try:
                sock.sendall(b"a")
            except (BrokenPipeError, ConnectionResetError):
                break
        assert read_until_closed(sock).startswith(b"HTTP/1.1 408")


def test_normal_clients_are_served_while_slow_ones_hang(server):
    slow = [connect(server) for _ in range(8)]
    try:
        for sock in slow:
            sock.sendall(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\nabc")
        assert httpx.get(server + "/ping", timeout=BOUND_S).json() == {"ok": True}
        assert httpx.post(server + "/echo", content=b"hello", timeout=BOUND_S).json() == {"body": "hello"}
    finally:
        for sock in slow:
            sock.close()


def test_a_response_slower_than_the_read_timeout_is_delivered(server):
    assert httpx.get(server + "/slow", timeout=BOUND_S).json() == {"ok": True}


def test_a_keep_alive_connection_pausing_between_requests_stays_usable(server):
    parts = urlsplit(server)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=BOUND_S)
    try:
        conn.request("GET", "/ping")
        assert conn.getresponse().read() == b'{"ok":true}'
        first_socket = conn.sock
        time.sleep(1.5 * READ_TIMEOUT_S)  # idle longer than the read timeout, shorter than keep-alive
        conn.request("POST", "/echo", body=b"again")
        assert conn.getresponse().read() == b'{"body":"again"}'
        assert conn.sock is first_socket
    finally:
        conn.close()


def test_past_max_connections_requests_get_503():
    uvicorn_server, url = serve_in_thread(make_app(), read_timeout_s=60, max_connections=2)
    held = [connect(url) for _ in range(2)]
    try:
        for sock in held:
            sock.sendall(b"GET /ping HTTP/1.1\r\nHost: x\r\n")
        statuses = []
        for _ in range(100):  # until the server has accepted the held connections (a readiness poll)
            statuses.append(httpx.get(url + "/ping", timeout=BOUND_S).status_code)
            if statuses[-1] == 503:
                break
            time.sleep(0.05)
        assert statuses[-1] == 503
    finally:
        for sock in held:
            sock.close()
    for _ in range(100):
        if httpx.get(url + "/ping", timeout=BOUND_S).status_code == 200:
            break
        time.sleep(0.05)
    else:
        pytest.fail("the server did not recover once the held connections closed")
    uvicorn_server.should_exit = True


@pytest.mark.parametrize("limits", [{"read_timeout_s": 0}, {"keep_alive_s": -1}, {"max_connections": 0},
                                    {"http": "spdy"}])
def test_bad_limits_are_one_clear_error(limits):
    with pytest.raises(ValueError, match="read_timeout_s|keep_alive_s|max_connections|http must be"):
        server_config(make_app(), **limits)
