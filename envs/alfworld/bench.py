"""``seed-gym bench alfworld``: env-steps/s of our process backend vs alfworld's ``AlfredTWEnv``.

Every runner plays the same games, resets included, with uniformly random admissible actions for
``steps`` steps (a random policy almost never wins, so every game costs the same number of steps).
Baselines are measured in the same run: ``AlfredTWEnv(config, "eval_out_of_distribution")
.init_env(batch_size=B)`` — alfworld's own async batch env, one subprocess per game in the batch —
at B = 1 and 2. Each of our rows is divided by the baseline with the same parallelism.
"""

from __future__ import annotations

import contextlib
import io
import random
import time
from pathlib import Path
from typing import Any

from seed_gym.agent import make_agent
from seed_gym.backends import make_pool
from seed_gym.registry import make
from seed_gym.rollout import plan_episodes, run_rollouts


def _pick_games(split: str, games: int, env_kwargs: dict[str, Any]) -> tuple[Any, list[str]]:
    env = make("alfworld", **env_kwargs)
    ids = env.task_set().split(split).select(games)
    return env, ids


def _ours(task_ids: list[str], steps: int, workers: int, env_kwargs: dict[str, Any]) -> float:
    kwargs = {**env_kwargs, "max_steps": steps}
    with make_pool("process", "alfworld", kwargs, num_slots=workers, workers=workers) as pool:
        run_rollouts(pool, make_agent("random", seed=0), plan_episodes(task_ids[:1]))  # warm the workers
        started = time.perf_counter()
        records = run_rollouts(pool, make_agent("random", seed=0), plan_episodes(task_ids))
        elapsed = time.perf_counter() - started
    return sum(r.num_steps for r in records) / elapsed


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


def _alfredtwenv(game_files: list[str], steps: int, batch_size: int) -> float:
    from alfworld.agents.environment.alfred_tw_env import AlfredTWEnv

    with contextlib.redirect_stdout(io.StringIO()):  # it prints progress for every game
        runner = AlfredTWEnv(_alfred_config(Path(game_files[0]).parents[2]), "eval_out_of_distribution")
    runner.game_files = list(game_files)
    runner.num_games = len(game_files)
    config = runner.config
    config["dagger"]["training"]["max_nb_steps_per_episode"] = steps
    env = runner.init_env(batch_size=batch_size)
    rng = random.Random(0)
    total_steps = 0
    try:
        env.reset()  # warm the subprocesses, as for our runner
        started = time.perf_counter()
        for _ in range(0, len(game_files), batch_size):
            _, infos = env.reset()
            dones = [False] * batch_size
            for _ in range(steps):
                commands = [rng.choice(cmds) for cmds in infos["admissible_commands"]]
                total_steps += sum(not d for d in dones)
                _, _, dones, infos = env.step(commands)
                if all(dones):
                    break
        elapsed = time.perf_counter() - started
    finally:
        env.close()
    return total_steps / elapsed


def run_benchmark(*, games: int = 8, steps: int = 20, split: str = "unseen",
                  env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    env_kwargs = dict(env_kwargs or {})
    probe, task_ids = _pick_games(split, games, env_kwargs)
    game_files = [str(probe.source.root / tid / "game.tw-pddl") for tid in task_ids]
    baselines = {b: _alfredtwenv(game_files, steps, b) for b in (1, 2)}
    rows = [{"runner": f"AlfredTWEnv batch_size={b}", "steps_per_s": s, "ratio": 1.0} for b, s in baselines.items()]
    for workers in (1, 2):
        rate = _ours(task_ids, steps, workers, env_kwargs)
        rows.append({"runner": f"seed-gym process workers={workers}", "steps_per_s": rate,
                     "ratio": rate / baselines[workers]})
    return {"games": len(task_ids), "steps": steps, "split": split, "data": probe.describe(), "rows": rows,
            "baseline": "AlfredTWEnv with the same parallelism (batch_size = workers)"}
