"""``seed-gym bench alfworld``: the stock and the fast engine vs alfworld's ``AlfredTWEnv``.

Every runner plays the same games, twice over (pass 1: games the worker has not seen; pass 2:
the same games again, each reloaded, so the fast engine's per-worker caches hit), resets
included, with seeded random admissible actions for ``steps`` steps (a random policy almost
never wins, so every game costs about the same number of steps). Measured in one run, at 1 and
2 worker processes:

* ``AlfredTWEnv(config, "eval_out_of_distribution").init_env(batch_size=B)`` — alfworld's own
  async batch env, one subprocess per game in the batch (B = workers); a reset or step time is
  one batch call;
* our ``ALFWorldEnv`` with ``engine=stock`` and ``engine=fast``, one env per worker process,
  games dealt round robin. The fast engine runs twice: *cold*, with its on-disk translation store
  off (every game of pass 1 is translated in the worker, as on a machine that never saw it), and
  *store warm*, with a fresh store that the benchmark filled with these games' translations
  beforehand (as after generation, which translates every game it verifies, or any earlier run).

Rows give reset p50 (both passes, and pass 2 alone), step p50 and env-steps/s; each row's ratio
is its env-steps/s over AlfredTWEnv's at the same parallelism. Workers warm up on a game outside
the measured set, so pass 1 is a cold start for the caches.
"""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing as mp
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from seed_gym.envs.alfworld import translations
from seed_gym.registry import make


def _pick_games(split: str, games: int, env_kwargs: dict[str, Any]) -> tuple[Any, list[str]]:
    env = make("alfworld", **env_kwargs)
    ids = env.task_set().split(split).select(games + 1)
    return env, ids


def _p50(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _worker(env_kwargs: dict[str, Any], store: str, warm: str, plan: list[tuple[int, str]], steps: int, seed: int,
            barrier: Any, queue: Any) -> None:
    os.environ[translations.DISK_CACHE_VARIABLE] = store
    env = make("alfworld", **{**env_kwargs, "max_steps": steps})
    rng = random.Random(seed)
    _, info = env.reset(seed=0, options={"task_id": warm})
    env.step(info["admissible_actions"][0])
    barrier.wait()
    started = time.perf_counter()
    resets: list[tuple[int, float]] = []
    step_times: list[float] = []
    for pass_no, task_id in plan:
        t0 = time.perf_counter()
        _, info = env.reset(seed=0, options={"task_id": task_id})
        resets.append((pass_no, time.perf_counter() - t0))
        for _ in range(steps):
            t0 = time.perf_counter()
            _, _, terminated, truncated, info = env.step(rng.choice(info["admissible_actions"]))
            step_times.append(time.perf_counter() - t0)
            if terminated or truncated:
                break
    queue.put({"started": started, "ended": time.perf_counter(), "resets": resets, "steps": step_times})
    env.close()


def _ours(task_ids: list[str], warm: str, steps: int, workers: int, env_kwargs: dict[str, Any],
          store: str = "off") -> dict[str, Any]:
    context = mp.get_context("spawn")
    barrier, queue = context.Barrier(workers), context.Queue()
    plans = [[(p, tid) for p in (1, 2) for tid in task_ids[w::workers]] for w in range(workers)]
    procs = [context.Process(target=_worker, args=(env_kwargs, store, warm, plans[w], steps, w, barrier, queue))
             for w in range(workers)]
    for proc in procs:
        proc.start()
    results = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()
    elapsed = max(r["ended"] for r in results) - min(r["started"] for r in results)
    resets = [t for r in results for t in r["resets"]]
    step_times = [t for r in results for t in r["steps"]]
    return {"reset_p50_s": _p50([t for _, t in resets]), "reset_seen_p50_s": _p50([t for p, t in resets if p == 2]),
            "step_p50_s": _p50(step_times), "env_steps": len(step_times), "seconds": elapsed,
            "steps_per_s": len(step_times) / elapsed}


def _alfred_config(game_root: Path) -> dict[str, Any]:
    return {
        "dataset": {"data_path": str(game_root), "eval_id_data_path": str(game_root),
                    "eval_ood_data_path": str(game_root), "num_train_games": -1, "num_eval_games": -1},
        "env": {"type": "AlfredTWEnv", "task_types": [1, 2, 3, 4, 5, 6], "domain_randomization": False,
                "goal_desc_human_anns_prob": 0.0, "expert_type": "handcoded", "expert_timeout_steps": 150},
        "general": {"training_method": "dagger"},
        "dagger": {"training": {"max_nb_steps_per_episode": 50}},
        "rl": {"training": {"max_nb_steps_per_episode": 50}},
    }


def _alfredtwenv(game_files: list[str], warm: str, steps: int, batch_size: int) -> dict[str, Any]:
    from alfworld.agents.environment.alfred_tw_env import AlfredTWEnv

    with contextlib.redirect_stdout(io.StringIO()):  # it prints progress for every game
        runner = AlfredTWEnv(_alfred_config(Path(game_files[0]).parents[2]), "eval_out_of_distribution")
    played = list(game_files) + list(game_files)  # two passes, as for our runners
    runner.game_files = [warm] * batch_size + played
    runner.num_games = len(runner.game_files)
    runner.config["dagger"]["training"]["max_nb_steps_per_episode"] = steps
    env = runner.init_env(batch_size=batch_size)
    rng = random.Random(0)
    resets: list[tuple[int, float]] = []
    step_times: list[float] = []
    total_steps = 0
    try:
        env.reset()  # warm the subprocesses on the warm-up game
        started = time.perf_counter()
        for start in range(0, len(played), batch_size):
            t0 = time.perf_counter()
            _, infos = env.reset()
            resets.append((1 if start < len(game_files) else 2, time.perf_counter() - t0))
            dones = [False] * batch_size
            for _ in range(steps):
                commands = [rng.choice(cmds) for cmds in infos["admissible_commands"]]
                total_steps += sum(not d for d in dones)
                t0 = time.perf_counter()
                _, _, dones, infos = env.step(commands)
                step_times.append(time.perf_counter() - t0)
                if all(dones):
                    break
        elapsed = time.perf_counter() - started
    finally:
        env.close()
    return {"reset_p50_s": _p50([t for _, t in resets]), "reset_seen_p50_s": _p50([t for p, t in resets if p == 2]),
            "step_p50_s": _p50(step_times), "env_steps": total_steps, "seconds": elapsed,
            "steps_per_s": total_steps / elapsed}


def _filled_store(root: Path, game_files: list[str]) -> str:
    """A fresh translation store under ``root`` holding every game's translation; its setting."""
    store = translations.Translations(1, translations.DiskStore(root / f"{translations.translator_version()}"
                                                                       f"+{translations.STORE_TAG}"))
    for game in game_files:
        data = json.loads(Path(game).read_text())
        store.task_and_sas(data["pddl_domain"], data["pddl_problem"])
    return str(root)


#: Our runners: (label, engine, translation store).
def _runners(warm_store: str) -> list[tuple[str, str, str]]:
    return [("stock", "stock", "off"), ("fast, cold", "fast", "off"), ("fast, store warm", "fast", warm_store)]


def run_benchmark(*, games: int = 8, steps: int = 20, split: str = "unseen",
                  env_kwargs: dict[str, Any] | None = None, workers: tuple[int, ...] = (1, 2)) -> dict[str, Any]:
    env_kwargs = {k: v for k, v in dict(env_kwargs or {}).items() if k != "engine"}
    probe, ids = _pick_games(split, games, env_kwargs)
    warm, task_ids = ids[-1], ids[:-1]
    root = probe.source.root
    game_files = [str(root / tid / "game.tw-pddl") for tid in task_ids]
    rows = []
    with tempfile.TemporaryDirectory(prefix="seed-gym-bench-store-") as folder:
        warm_store = _filled_store(Path(folder), game_files + [str(root / warm / "game.tw-pddl")])
        for count in workers:
            base = _alfredtwenv(game_files, str(root / warm / "game.tw-pddl"), steps, count)
            rows.append({"runner": f"AlfredTWEnv batch_size={count}", "engine": "alfworld", "workers": count,
                         **base, "ratio": 1.0})
            for label, engine, store in _runners(warm_store):
                ours = _ours(task_ids, warm, steps, count, {**env_kwargs, "engine": engine}, store)
                rows.append({"runner": f"seed-gym {label} workers={count}", "engine": engine,
                             "translation_store": "warm" if store != "off" else "off", "workers": count,
                             **ours, "ratio": ours["steps_per_s"] / base["steps_per_s"]})
    return {"games": len(task_ids), "passes": 2, "steps": steps, "split": split, "data": probe.describe(),
            "engines": {"stock": make("alfworld", **{**env_kwargs, "engine": "stock"}).version,
                        "fast": probe.version},
            "rows": rows, "cpu_count": mp.cpu_count(),
            "baseline": "AlfredTWEnv with the same parallelism (batch_size = workers)"}
