"""The server's request batcher: concurrent submissions share search calls, each gets its own rows."""

from __future__ import annotations

import asyncio

import pytest

from seed_gym.envs.searchqa.server import Batcher


def fake_search(calls: list[tuple[list[str], int]]):
    def search(queries: list[str], k: int) -> list[list[str]]:
        calls.append((list(queries), k))
        return [[f"{q}#{i}" for i in range(k)] for q in queries]
    return search


def test_concurrent_submissions_are_batched_and_sliced() -> None:
    calls: list[tuple[list[str], int]] = []

    async def main() -> list[list[list[str]]]:
        batcher = Batcher(fake_search(calls), max_batch=1000)
        batcher.start()
        jobs = [([f"q{i}a", f"q{i}b"], 1 + i % 4) for i in range(50)]
        results = await asyncio.gather(*(batcher.submit(q, k) for q, k in jobs))
        await batcher.stop()
        return results, jobs

    results, jobs = asyncio.run(main())
    for (queries, k), rows in zip(jobs, results):
        assert rows == [[f"{q}#{i}" for i in range(k)] for q in queries]
    # all 50 were queued before the loop ran, so they were merged (far fewer calls than requests)
    assert len(calls) < len(jobs)
    assert sum(len(q) for q, _ in calls) == 100


def test_max_batch_is_respected_and_errors_reach_every_waiter() -> None:
    calls: list[tuple[list[str], int]] = []

    async def run_small() -> None:
        batcher = Batcher(fake_search(calls), max_batch=3)
        batcher.start()
        await asyncio.gather(*(batcher.submit([f"q{i}"], 2) for i in range(10)))
        await batcher.stop()

    asyncio.run(run_small())
    assert max(len(q) for q, _ in calls) <= 3

    def broken(queries: list[str], k: int) -> list[list[str]]:
        raise RuntimeError("index is gone")

    async def run_broken() -> list[object]:
        batcher = Batcher(broken)
        batcher.start()
        out = await asyncio.gather(*(batcher.submit(["q"], 1) for _ in range(3)), return_exceptions=True)
        ok = None
        batcher.search = fake_search([])  # the loop survives the error
        ok = await batcher.submit(["z"], 1)
        await batcher.stop()
        return [*out, ok]

    *errors, ok = asyncio.run(run_broken())
    assert all(isinstance(e, RuntimeError) for e in errors) and ok == [["z#0"]]


def test_submit_before_start_is_a_clear_error() -> None:
    with pytest.raises(AssertionError, match="start"):
        asyncio.run(Batcher(fake_search([])).submit(["q"], 1))
