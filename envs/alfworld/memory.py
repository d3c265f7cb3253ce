"""``seed-gym bench alfworld-memory``: a worker's resident memory over many episodes.

One process-pool worker (the rollout engine's, one env) plays ``episodes`` episodes of seeded
random admissible actions, cycling through the games of a split, and its RSS is read from
``/proc`` before the first episode and at each checkpoint. Runs with and without recycling
(``recycle_after``) are measured in the same invocation, side by side (one worker each), so the
figures compare like with like.
The fast engine's per-process caches are bounded (``SEED_GYM_ALFWORLD_CACHE`` games), so growth
up to the cache's size is expected and growth after it is a leak. Disk is measured too
(AgentBench's account of ALFWorld leaking disk is about temp files): the workers get a private temp
folder, whose files and bytes left at the end are reported (both runs together), and the growth of
the fast engine's translation store, which is bounded by the number of distinct games.
"""

from __future__ import annotations

import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from seed_gym.agent import make_agent
from seed_gym.envs.alfworld import translations
from seed_gym.pools import ProcessPool, rss_bytes
from seed_gym.registry import make
from seed_gym.rollout import EpisodeSpec, run_rollouts, task_seed


def folder_usage(root: str | os.PathLike[str]) -> tuple[int, int]:
    """(files, bytes) under ``root``; (0, 0) when it does not exist."""
    files = size = 0
    for folder, _, names in os.walk(root):
        for name in names:
            try:
                size += os.path.getsize(os.path.join(folder, name))
                files += 1
            except OSError:  # removed while we looked
                pass
    return files, size


def cycled_episodes(task_ids: list[str], episodes: int, seed: int = 0) -> list[EpisodeSpec]:
    """``episodes`` episodes over ``task_ids`` in order, again and again (each pass a new group index)."""
    return [EpisodeSpec(task_ids[i % len(task_ids)], i // len(task_ids), task_seed(seed, task_ids[i % len(task_ids)]))
            for i in range(episodes)]


def measure(task_ids: list[str], *, episodes: int, checkpoints: list[int], steps: int,
            recycle_after: int | None, env_kwargs: dict[str, Any]) -> dict[str, Any]:
    plan = cycled_episodes(task_ids, episodes)
    readings: dict[int, int | None] = {}
    done = 0
    with ProcessPool("alfworld", {**env_kwargs, "max_steps": steps}, workers=1, envs_per_worker=1,
                     recycle_after=recycle_after) as pool:
        readings[0] = rss_bytes(pool.worker_pids()[0])
        started = time.perf_counter()

        def on_records(records: list[Any]) -> None:
            nonlocal done
            for _ in records:
                done += 1
                if done in checkpoints:
                    readings[done] = rss_bytes(pool.worker_pids()[0])

        records = run_rollouts(pool, make_agent("random", seed=0), plan, on_records=on_records)
        seconds = time.perf_counter() - started
        recycled = pool.recycled
    return {"recycle_after": recycle_after, "episodes": len(records),
            "errors": sum(r.status == "error" for r in records), "recycled": recycled,
            "rss_mib": {str(k): None if v is None else round(v / 2**20, 1) for k, v in sorted(readings.items())},
            "seconds": round(seconds, 1)}


def run_memory_benchmark(*, episodes: int = 1000, recycle_after: int = 250, steps: int = 5,
                         split: str = "unseen", env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """RSS of one worker at 0, 1/4, 1/2 and all of ``episodes``, without and with recycling."""
    env_kwargs = dict(env_kwargs or {})
    probe = make("alfworld", **env_kwargs)
    task_ids = probe.task_set().split(split).task_ids
    checkpoints = sorted({episodes // 4, episodes // 2, episodes} - {0})
    store = translations.disk_store_root()
    store_before = folder_usage(store) if store else (0, 0)
    with tempfile.TemporaryDirectory(prefix="seed-gym-memory-bench-") as private_tmp:
        previous = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = private_tmp  # the workers' temp folder: what they leave is theirs
        try:
            with ThreadPoolExecutor(max_workers=2) as threads:  # the work is in the worker processes
                rows = list(threads.map(lambda r: measure(task_ids, episodes=episodes, checkpoints=checkpoints,
                                                          steps=steps, recycle_after=r, env_kwargs=env_kwargs),
                                        (None, recycle_after)))
        finally:
            if previous is None:
                os.environ.pop("TMPDIR", None)
            else:
                os.environ["TMPDIR"] = previous
        temp_files, temp_bytes = folder_usage(private_tmp)
    store_after = folder_usage(store) if store else (0, 0)
    return {"temp_files_left": temp_files, "temp_bytes_left": temp_bytes,
            "translation_store_files_added": store_after[0] - store_before[0],
            "translation_store_bytes_added": store_after[1] - store_before[1],
            "episodes": episodes, "steps": steps, "split": split, "games": len(task_ids),
            "checkpoints": [0, *checkpoints], "engine": probe.version, "data": probe.describe(), "rows": rows}
