"""``seed-gym bench retriever``: retrieval speed, from one run, as ratios against a baseline.

Measurements (all on SynWiki passages and its oracle hop queries):

* per backend at ``passages`` passages: index build seconds and batched queries/s;
* bm25s at ``large`` passages (queries/s; build seconds);
* the HTTP server (a real ``seed-gym serve retriever`` subprocess over the bm25s index at
  ``passages``): ``clients`` concurrent client threads each sending ``requests`` one-query requests;
  throughput (requests/s) and p50/p99 latency.

The baseline is bm25s queries/s at ``passages`` from the same run; every rate is also printed as a
ratio to it. No number here is asserted by a test (speed depends on the machine).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from seed_gym.envs.searchqa.data import write_jsonl
from seed_gym.envs.searchqa.questions import generate_questions
from seed_gym.envs.searchqa.recall import hop_queries
from seed_gym.envs.searchqa.world import generate_world


def _corpus(passages: int, seed: int = 0) -> tuple[list[tuple[str, str]], list[str]]:
    """``passages`` (id, contents) pairs and the hop queries of the world's test questions."""
    world = generate_world(seed, max(50, passages))
    docs = [(p.pid, p.contents) for p in world.passages[:passages]]
    questions = generate_questions(world, {s: {"test": 200} for s in ("syn_nq", "syn_hotpotqa", "syn_musique")})
    return docs, [query for _, _, query, _ in hop_queries(questions)]


def _cycle(items: list[str], n: int) -> list[str]:
    return [items[i % len(items)] for i in range(n)]


def _measure(backend: str, docs: list[tuple[str, str]], queries: list[str]) -> dict[str, Any]:
    from seed_gym.retrieval import build_retriever

    started = time.perf_counter()
    retriever = build_retriever(backend, docs)
    build_s = time.perf_counter() - started
    retriever.search(queries[:8], 3)  # warm-up (JVM, model weights)
    started = time.perf_counter()
    retriever.search(queries, 3)
    search_s = time.perf_counter() - started
    return {"backend": backend, "passages": len(docs), "build_s": build_s, "qps": len(queries) / search_s,
            "retriever": retriever}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _load(url: str, queries: list[str], clients: int, requests: int) -> tuple[float, list[float]]:
    """``clients`` threads, each with its own keep-alive connection, sending one-query requests."""
    import httpx

    def client(index: int) -> list[float]:
        latencies = []
        with httpx.Client(base_url=url, timeout=120) as http:
            for r in range(requests):
                query = queries[(index * requests + r) % len(queries)]
                started = time.perf_counter()
                response = http.post("/retrieve", json={"queries": [query], "topk": 3, "return_scores": True})
                response.raise_for_status()
                latencies.append(time.perf_counter() - started)
        return latencies

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = [x for row in pool.map(client, range(clients)) for x in row]
    return time.perf_counter() - started, latencies


def _server_run(retriever: Any, docs: list[tuple[str, str]], queries: list[str], clients: int,
                requests: int) -> dict[str, Any]:
    import httpx

    with tempfile.TemporaryDirectory(prefix="seed-gym-bench-") as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        write_jsonl(corpus, ({"id": i, "contents": c} for i, c in docs))
        index = retriever.save(Path(tmp) / "index")
        port = _free_port()
        process = subprocess.Popen([sys.executable, "-m", "seed_gym.cli", "serve", "retriever", "--corpus", str(corpus),
                                    "--index", str(index), "--port", str(port)], env=dict(os.environ),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        try:
            while True:
                if process.poll() is not None:
                    raise RuntimeError("the retrieval server exited during startup")
                try:
                    if httpx.get(url + "/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)
            wall, latencies = _load(url, queries, clients, requests)
            health = httpx.get(url + "/health").json()
        finally:
            process.terminate()
            process.wait(timeout=30)
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
    return {"clients": clients, "requests": len(latencies), "rps": len(latencies) / wall, "p50_ms": 1000 * pick(0.50),
            "p99_ms": 1000 * pick(0.99), "batches": health["batches"], "max_batch_seen": health["max_batch_seen"]}


def run_benchmark(*, passages: int = 10_000, large: int = 1_000_000, backends: list[str] | None = None,
                  queries: int = 500, clients: int = 32, requests: int = 20,
                  log: Callable[[str], None] = print) -> dict[str, Any]:
    backends = list(backends or ["bm25s", "pyserini", "dense"])
    if "bm25s" not in backends:
        backends.insert(0, "bm25s")  # the baseline
    docs, hop_qs = _corpus(passages)
    query_list = _cycle(hop_qs, queries)
    rows: list[dict[str, Any]] = []
    retrievers: dict[str, Any] = {}
    for backend in backends:
        log(f"bench: {backend} at {len(docs)} passages")
        try:
            row = _measure(backend, docs, query_list if backend != "dense" else query_list[: max(50, queries // 5)])
        except ImportError as error:
            rows.append({"backend": backend, "passages": len(docs), "skipped": str(error)})
            continue
        retrievers[backend] = row.pop("retriever")
        rows.append(row)
    if large:
        log(f"bench: bm25s at {large} passages (generating the world)")
        big_docs, big_qs = _corpus(large)
        row = _measure("bm25s", big_docs, _cycle(big_qs, queries))
        row.pop("retriever")
        rows.append(row)
        del big_docs
    baseline = next(r["qps"] for r in rows if r["backend"] == "bm25s")
    for row in rows:
        if "qps" in row:
            row["ratio"] = row["qps"] / baseline
    log(f"bench: server with {clients} clients")
    server = _server_run(retrievers["bm25s"], docs, hop_qs, clients, requests)
    server["ratio"] = server["rps"] / baseline
    return {"baseline": f"bm25s in-process queries/s at {len(docs)} passages", "baseline_qps": baseline,
            "rows": rows, "server": server}


def print_result(result: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    table = Table(title=f"retrievers (ratio vs {result['baseline']} = {result['baseline_qps']:.0f}/s)")
    for column in ("backend", "passages", "build s", "queries/s", "ratio"):
        table.add_column(column, justify="left" if column == "backend" else "right")
    for row in result["rows"]:
        if "skipped" in row:
            table.add_row(row["backend"], str(row["passages"]), "-", "skipped", row["skipped"][:40])
        else:
            table.add_row(row["backend"], str(row["passages"]), f"{row['build_s']:.1f}", f"{row['qps']:.1f}",
                          f"{row['ratio']:.2f}x")
    server = result["server"]
    table.add_section()
    table.add_row(f"server ({server['clients']} clients)", str(result["rows"][0]["passages"]), "-",
                  f"{server['rps']:.1f} req/s", f"{server['ratio']:.2f}x")
    console.print(table)
    console.print(f"server latency p50 {server['p50_ms']:.1f} ms, p99 {server['p99_ms']:.1f} ms over "
                  f"{server['requests']} requests; {server['batches']} batches, largest {server['max_batch_seen']}")
