"""Every `seed-gym serve ...` command closes slow clients (issue 20, defect 6): each server runs as a
real subprocess on a free loopback port with ``--read-timeout 1``, and raw sockets send a partial
header or a partial body. The server must close them (``recv`` returns ``b""``; each wait is bounded
far above the timeout only so that a server that never closes fails instead of hanging), and a
normal client is served meanwhile.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import httpx
import pytest

pytestmark = pytest.mark.integration
BOUND_S = 30.0
N = 300


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def serving(args: list[str], ready_path: str) -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "seed_gym.cli", "serve", *args, "--port", str(port),
                                "--read-timeout", "1", "--keep-alive", "30"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=dict(os.environ))
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(1200):  # a readiness poll while the server loads, not a timed assertion
            if process.poll() is not None:
                raise RuntimeError(process.stdout.read().decode()[-3000:] if process.stdout else "exited")
            try:
                if httpx.get(url + ready_path, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            raise RuntimeError("the server did not start")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def read_until_closed(url: str, data: bytes) -> bytes:
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=BOUND_S) as sock:
        sock.sendall(data)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except socket.timeout:
            pytest.fail(f"the server kept a slow client's connection open for {BOUND_S} s")
        except ConnectionResetError:
            pass
        return received


def check_slow_clients(url: str, body_path: str, normal: tuple[str, str, dict | None],
                       body_start: str = 'application/json\r\nContent-Length: 1000\r\n\r\n{"a": ') -> None:
    assert read_until_closed(url, b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ").startswith(b"HTTP/1.1 408")
    partial_body = f"POST {body_path} HTTP/1.1\r\nHost: x\r\nContent-Type: {body_start}".encode()
    assert read_until_closed(url, partial_body).startswith(b"HTTP/1.1 408")
    slow = socket.create_connection((urlsplit(url).hostname, urlsplit(url).port), timeout=BOUND_S)
    try:
        slow.sendall(partial_body)
        method, path, payload = normal
        assert httpx.request(method, url + path, json=payload, timeout=BOUND_S).status_code == 200
    finally:
        slow.close()


def test_the_webshop_server_closes_slow_clients():
    with serving(["webshop", "--products", str(N), "--seed", "5"], "/fixed_0") as url:
        check_slow_clients(url, "/fixed_0-slow", ("GET", "/fixed_1-fast", None),
                           "application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nsearch_query=sh")


def test_the_retrieval_server_closes_slow_clients():
    from seed_gym.envs.searchqa.data import load_data

    load_data(entities=N).retriever("bm25s")  # built here once; the server loads it
    with serving(["retriever", "--entities", str(N)], "/health") as url:
        check_slow_clients(url, "/retrieve", ("POST", "/retrieve", {"queries": ["capital"], "topk": 2}))


def test_the_policy_server_closes_slow_clients(tiny_model_dir):
    with serving(["policy", "--model", str(tiny_model_dir), "--device", "cpu"], "/health") as url:
        check_slow_clients(url, "/v1/completions", ("GET", "/v1/models", None))
