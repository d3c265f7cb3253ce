"""``seed-gym bench serve-load``: a bounded loopback load test of one server.

A :class:`LoadTarget` says how to start a server (a ``seed-gym serve ...`` command) and what its
clients send; targets come from the ``seed_gym.load_targets`` entry-point group (name -> a
function taking the ``--server-arg`` options and returning a target), so this module names no
server. :func:`run_load` then:

1. starts the server as a real subprocess on a free 127.0.0.1 port and waits for its health route;
2. **baseline**: one client sends ``baseline_requests`` short requests, one after another;
3. **load**: one client sends the target's *long* request, and once it is on its way ``clients``
   clients (threads, one keep-alive connection each) send ``requests`` short requests each, a fixed
   count, stopping early only if ``duration_s`` runs out (the run reports what it completed);
4. reports throughput, p50/p99/max latency and errors of the short requests, and ratios against
   the baseline from the same run (throughput vs one client; p99 vs the baseline p50).

**Starvation** is judged against the long request, not a clock: a short request *started while
the long one was in flight* is ``starved`` when it took longer than the long request itself (it
waited behind it); ``served_during_long`` counts short requests that started and finished while
the long one was in flight. A fair server has ``starved == 0``, and one that interleaves work
(the policy server's step-wise batching) serves many requests during a long one.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

#: The entry-point group of load targets.
ENTRY_POINT_GROUP = "seed_gym.load_targets"


@dataclass(frozen=True)
class Call:
    """One HTTP request: ``json`` (a JSON body) or ``data`` (a form) or neither. With ``trickle_s``
    the body goes out in ten chunks spread over that many seconds (a slow client's upload)."""

    method: str
    path: str
    json: Any = None
    data: dict[str, str] | None = None
    trickle_s: float = 0.0

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of ``httpx.Client.request`` beside method and path."""
        if not self.trickle_s:
            return {"json": self.json, "data": self.data}
        import json as json_lib
        from urllib.parse import urlencode

        body = (json_lib.dumps(self.json) if self.json is not None else urlencode(self.data or {})).encode()
        kind = "application/json" if self.json is not None else "application/x-www-form-urlencoded"

        def chunks() -> Iterator[bytes]:
            step = max(1, -(-len(body) // 10))
            for start in range(0, len(body), step):
                time.sleep(self.trickle_s / 10)
                yield body[start:start + step]

        return {"content": chunks(), "headers": {"Content-Type": kind}}


@dataclass(frozen=True)
class LoadTarget:
    """A server under load. ``serve``: the arguments after ``seed-gym serve`` (the port is added);
    ``health``: a GET path that answers 200 once it is up; ``short(client, i)``: the i-th request
    of a client; ``long``: the one long request; ``describe``: what the report says of the setup."""

    name: str
    serve: list[str]
    health: str
    short: Callable[[int, int], Call]
    long: Call
    describe: dict[str, Any] = field(default_factory=dict)
    start_timeout_s: float = 600.0


class LoadTestError(RuntimeError):
    """The server did not start, or a target is unknown."""


def targets() -> dict[str, Any]:
    """Target name -> its entry point (loaded on use)."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_target(name: str, options: dict[str, Any]) -> LoadTarget:
    known = targets()
    if name not in known:
        raise LoadTestError(f"no load target {name!r}; known: {', '.join(sorted(known)) or '(none)'}")
    return known[name].load()(**options)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def serving(target: LoadTarget) -> Iterator[str]:
    """``seed-gym serve ...`` of ``target`` in a subprocess on a free loopback port; yields its URL."""
    import httpx

    port = free_port()
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen([sys.executable, "-m", "seed_gym.cli", "serve", *target.serve, "--port", str(port)],
                                   stdout=log, stderr=log, env=dict(os.environ))
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + target.start_timeout_s
            while True:  # a readiness poll, bounded
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise LoadTestError(f"the {target.name} server did not start: "
                                        f"{log.read().decode(errors='replace')[-2000:]}")
                try:
                    if httpx.get(url + target.health, timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@dataclass
class Sample:
    start: float
    end: float
    ok: bool
    error: str | None = None

    @property
    def seconds(self) -> float:
        return self.end - self.start


def send(client: Any, call: Call) -> Sample:
    """One request; a 2xx/3xx answer is ok, anything else (or no answer) is an error."""
    start = time.perf_counter()
    try:
        response = client.request(call.method, call.path, **call.arguments())
        ok = response.status_code < 400
        error = None if ok else f"{response.status_code}: {response.text[:200]}"
    except Exception as exc:  # a refused or dropped connection, a timeout: an error, not a crash
        ok, error = False, f"{type(exc).__name__}: {exc}"
    return Sample(start, time.perf_counter(), ok, error)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def _client_run(url: str, calls: list[Call], stop_at: float, timeout_s: float) -> list[Sample]:
    import httpx

    samples = []
    with httpx.Client(base_url=url, timeout=timeout_s, follow_redirects=False) as client:
        for call in calls:
            if time.perf_counter() > stop_at:
                break
            samples.append(send(client, call))
    return samples


def run_load(target: LoadTarget, *, clients: int = 32, requests: int = 20, duration_s: float = 300.0,
             baseline_requests: int = 20, timeout_s: float = 600.0,
             log: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Start ``target``, measure the baseline and the load (module rules); returns the report."""
    if clients < 1 or requests < 1 or baseline_requests < 1 or duration_s <= 0:
        raise ValueError("clients, requests and baseline_requests must be >= 1 and duration_s > 0")
    with serving(target) as url:
        log(f"{target.name}: server up at {url}; baseline with 1 client")
        begun = time.perf_counter()
        baseline = _client_run(url, [target.short(0, i) for i in range(baseline_requests)],
                               begun + duration_s, timeout_s)
        baseline_wall = time.perf_counter() - begun
        log(f"{target.name}: {clients} clients x {requests} requests, one long request in flight")
        long_sample: list[Sample] = []
        long_thread = threading.Thread(target=lambda: long_sample.extend(
            _client_run(url, [target.long], float("inf"), timeout_s)))
        long_thread.start()
        time.sleep(0.2)  # the long request is on its way (and, on a loopback server, being served)
        stop_at = time.perf_counter() + duration_s
        results: list[list[Sample]] = [[] for _ in range(clients)]

        def client(index: int) -> None:
            results[index] = _client_run(url, [target.short(index, i) for i in range(requests)], stop_at, timeout_s)

        threads = [threading.Thread(target=client, args=(index,)) for index in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        long_thread.join()
    return _report(target, clients, requests, duration_s, baseline, baseline_wall, long_sample[0],
                   [s for row in results for s in row])


def _report(target: LoadTarget, clients: int, requests: int, duration_s: float, baseline: list[Sample],
            baseline_wall: float, long: Sample, shorts: list[Sample]) -> dict[str, Any]:
    done = [s for s in shorts if s.ok]
    wall = max((s.end for s in shorts), default=0.0) - min((s.start for s in shorts), default=0.0)
    latencies = [s.seconds for s in shorts]
    base_p50 = _percentile([s.seconds for s in baseline], 0.5)
    base_rps = len(baseline) / baseline_wall if baseline_wall else float("nan")
    throughput = len(done) / wall if wall else float("nan")
    during = [s for s in shorts if long.start <= s.start < long.end]
    errors = [s.error for s in [*shorts, *baseline, long] if not s.ok]
    return {
        "server": target.name, "setup": target.describe, "clients": clients, "requests_per_client": requests,
        "duration_cap_s": duration_s, "planned": clients * requests, "completed": len(shorts),
        "errors": len(errors), "error_examples": errors[:5],
        "wall_s": round(wall, 3), "throughput_rps": round(throughput, 2),
        "p50_ms": round(1000 * _percentile(latencies, 0.50), 2), "p99_ms": round(1000 * _percentile(latencies, 0.99), 2),
        "max_ms": round(1000 * max(latencies, default=float("nan")), 2),
        "baseline": {"clients": 1, "requests": len(baseline), "throughput_rps": round(base_rps, 2),
                     "p50_ms": round(1000 * base_p50, 2)},
        "throughput_vs_one_client": round(throughput / base_rps, 2) if base_rps else None,
        "p99_vs_baseline_p50": round(_percentile(latencies, 0.99) / base_p50, 2) if base_p50 else None,
        "long": {"ms": round(1000 * long.seconds, 2), "ok": long.ok},
        "started_during_long": len(during),
        "served_during_long": sum(1 for s in during if s.end <= long.end),
        "starved": sum(1 for s in during if s.seconds > long.seconds),
        "worst_wait_vs_long": round(max((s.seconds for s in during), default=0.0) / long.seconds, 3)
        if long.seconds else None,
    }


def summary_lines(report: dict[str, Any]) -> list[str]:
    """The report as a few lines for the terminal."""
    base, long = report["baseline"], report["long"]
    return [
        f"{report['server']}: {report['completed']}/{report['planned']} requests from {report['clients']} clients "
        f"in {report['wall_s']} s, {report['errors']} errors",
        f"throughput {report['throughput_rps']} req/s ({report['throughput_vs_one_client']}x one client's "
        f"{base['throughput_rps']}); p50 {report['p50_ms']} ms, p99 {report['p99_ms']} ms "
        f"({report['p99_vs_baseline_p50']}x the one-client p50 {base['p50_ms']} ms), max {report['max_ms']} ms",
        f"long request {long['ms']} ms ({'ok' if long['ok'] else 'FAILED'}): {report['started_during_long']} short "
        f"requests started while it ran, {report['served_during_long']} finished before it, "
        f"{report['starved']} starved (took longer than it); worst short wait {report['worst_wait_vs_long']}x it",
    ]

