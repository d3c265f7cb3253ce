"""``seed-gym bench webshop``: latency numbers measured in one run.

* per catalogue size: text-env step latency p50/p99 (random admissible actions, the first action of
  each episode being its search) and search latency p50 (the goals' queries and instructions);
* bm25s vs pyserini on the first size: queries/s of each and the mean top-10 overlap, when the
  ``lucene`` extra is installed (otherwise the row says why it is missing).

Targets (printed, never asserted): step p50 <= 5 ms at 1k products, search p50 <= 20 ms at 100k.
"""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np

from seed_gym.envs.webshop.catalog import search_document
from seed_gym.envs.webshop.env import WebShopEnv


def _ms(samples: list[float], q: float) -> float:
    return float(np.percentile(np.array(samples) * 1000.0, q)) if samples else float("nan")


def measure_size(num_products: int, *, steps: int, queries: int, seed: int = 0) -> dict[str, Any]:
    env = WebShopEnv(num_products=num_products, seed=seed)
    rng = random.Random(seed)
    ids = env.task_set().split("test").task_ids
    step_times: list[float] = []
    while len(step_times) < steps:
        _, info = env.reset(options={"task_id": rng.choice(ids)})
        done = False
        while not done and len(step_times) < steps:
            action = rng.choice(info["admissible_actions"])
            start = time.perf_counter()
            _, _, term, trunc, info = env.step(action)
            step_times.append(time.perf_counter() - start)
            done = term or trunc
    goals = [env.shop.goal(t) for t in ids]
    texts = [g["query"] if i % 2 else g["instruction_text"].lower() for i, g in enumerate(goals)]
    search_times = []
    for i in range(queries):
        start = time.perf_counter()
        env.shop.search(texts[i % len(texts)].split(" "))
        search_times.append(time.perf_counter() - start)
    p50 = _ms(step_times, 50)
    s50 = _ms(search_times, 50)
    target = []
    if num_products <= 1000:
        target.append(f"step p50 <= 5 ms: {'met' if p50 <= 5 else 'missed'}")
    if num_products >= 100_000:
        target.append(f"search p50 <= 20 ms: {'met' if s50 <= 20 else 'missed'}")
    return {"products": len(env.shop.products), "step_p50_ms": p50, "step_p99_ms": _ms(step_times, 99),
            "search_p50_ms": s50, "steps": len(step_times), "queries": queries, "target": "; ".join(target) or "-"}


def compare_backends(num_products: int, *, queries: int, seed: int = 0) -> dict[str, Any]:
    """bm25s vs pyserini on the same documents: queries/s and mean top-10 overlap."""
    from seed_gym.retrieval import build_retriever

    env = WebShopEnv(num_products=num_products, seed=seed)
    docs = [(a, search_document(p)) for a, p in env.shop.products.items()]
    texts = [env.shop.goal(t)["query"] for t in env.task_set().split("test").task_ids][:queries]
    try:
        lucene = build_retriever("pyserini", docs)
    except Exception as error:  # the extra is optional
        return {"backends": "bm25s vs pyserini", "skipped": f"pyserini unavailable: {type(error).__name__}: {error}"[:300]}
    bm25 = env.shop.retriever()
    result: dict[str, Any] = {"backends": "bm25s vs pyserini", "queries": len(texts)}
    hits = {}
    for name, retriever in (("bm25s", bm25), ("pyserini", lucene)):
        start = time.perf_counter()
        hits[name] = [[h.doc_id for h in row] for row in (retriever.search([q], 10)[0] for q in texts)]
        result[f"{name}_qps"] = len(texts) / (time.perf_counter() - start)
    overlaps = [len(set(a) & set(b)) / max(1, min(10, len(a), len(b)) or 1)
                for a, b in zip(hits["bm25s"], hits["pyserini"])]
    result["top10_overlap"] = float(np.mean(overlaps)) if overlaps else float("nan")
    return result


def run_benchmark(sizes: list[int], *, steps: int = 300, queries: int = 200) -> dict[str, Any]:
    rows = [measure_size(n, steps=steps, queries=queries) for n in sizes]
    backends = [compare_backends(sizes[0], queries=min(queries, 200))] if sizes else []
    return {"sizes": rows, "backends": backends}
