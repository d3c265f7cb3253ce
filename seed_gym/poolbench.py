"""``seed-gym bench pools``: what env pools and the rollout engine cost, every figure a ratio
against a baseline measured in the same run.

1. **Env-steps/s per pool**: the rollout engine with a zero-cost scripted agent (a seeded random
   admissible action, or the env's expert where it lists none) on the inline pool (one process,
   ``envs_per_worker`` envs), and on the process and ray pools at 1, 2 and 4 workers of
   ``envs_per_worker`` envs each; after an untimed warm-up run of as many episodes (first loads). Ratio: to inline.
2. **Engine overhead**: the same agent and episodes through the rollout engine on an inline pool of
   ``envs_per_worker`` envs (one lock-step batch, as rollouts run), against a bare lock-step
   ``reset``/``act``/``step`` loop on the pool's own envs that records nothing (the same env work
   and schedule, so the difference is the engine's own bookkeeping); the better of ``repeats``
   alternating runs each, after a warm-up of both, in CPU seconds of the thread that runs them.
   Overhead = engine / bare - 1 (target: under 10%).
3. **Lock-step vs waves** with a model agent (``hf:<model>``, sampled, so identical records show
   that sampling belongs to the episode): the same episodes on a process pool with ``waves=1`` and
   ``waves=2``; seconds per round (a round: every live episode acts once) and the ratio, plus
   whether every episode's record matched.
4. **Memory per worker**: one worker with one env plays ``memory_episodes`` episodes (cycling
   through the split) on the process pool, the ray pool, and the ray pool without the env's shared
   state; RSS and PSS (shared pages divided among the processes sharing them) at 0, 1/4, 1/2 and all.

On a busy machine absolute times are upper bounds; the ratios compare runs made side by side.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from seed_gym.agent import Agent, CountingAgent, make_agent
from seed_gym.core import TextEnv
from seed_gym.evaluate import expert_kwargs
from seed_gym.pools import EnvPool, InlinePool, ProcessPool, pss_bytes, rss_bytes
from seed_gym.records import EpisodeRecord
from seed_gym.registry import make
from seed_gym.rollout import EpisodeSpec, run_rollouts, task_seed

WORKER_COUNTS = (1, 2, 4)


@dataclass
class EnvSetup:
    """What every section plays on one env: its tasks, the zero-cost agent, the env arguments."""

    env_id: str
    task_ids: list[str]
    agent: str  # "random" where the env lists admissible actions, else "expert"
    env_kwargs: dict[str, Any]


def setup(env_id: str, split: str, *, max_steps: int, env_kwargs: dict[str, Any] | None = None,
          seed: int = 0) -> EnvSetup:
    kwargs = {**(env_kwargs or {}), "max_steps": max_steps}
    probe = make(env_id, **kwargs)
    try:
        task_ids = list(probe.task_set().split(split).task_ids)
        _, info = probe.reset(seed=seed, options={"task_id": task_ids[0]})
        if info.get("admissible_actions"):
            return EnvSetup(env_id, task_ids, "random", kwargs)
        return EnvSetup(env_id, task_ids, "expert", {**kwargs, **expert_kwargs(env_id, probe, "expert")})
    finally:
        probe.close()


def cycled(task_ids: Sequence[str], episodes: int, seed: int = 0) -> list[EpisodeSpec]:
    """``episodes`` episodes over ``task_ids`` in order, again and again (each pass a new group index)."""
    return [EpisodeSpec(task_ids[i % len(task_ids)], i // len(task_ids), task_seed(seed, task_ids[i % len(task_ids)]))
            for i in range(episodes)]


def _agent(env: EnvSetup, seed: int = 0) -> Agent:
    agent = make_agent(env.agent, seed=seed)
    agent.bind_env(env.env_id)
    return agent


def _timed(pool: EnvPool, agent: Any, episodes: list[EpisodeSpec], **options: Any) -> tuple[float, list[EpisodeRecord]]:
    started = time.perf_counter()
    records = run_rollouts(pool, agent, episodes, **options)
    return time.perf_counter() - started, records


# -- 1. env-steps/s per pool ------------------------------------------------------------------
def make_bench_pool(backend: str, env: EnvSetup, workers: int, envs_per_worker: int, **options: Any) -> EnvPool:
    if backend == "inline":
        return InlinePool(env.env_id, env.env_kwargs, envs_per_worker)
    if backend == "process":
        return ProcessPool(env.env_id, env.env_kwargs, workers=workers, envs_per_worker=envs_per_worker)
    from seed_gym.raypool import RayPool

    return RayPool(env.env_id, env.env_kwargs, workers=workers, envs_per_worker=envs_per_worker, **options)


def steps_per_second(env: EnvSetup, *, episodes: int, envs_per_worker: int,
                     worker_counts: Sequence[int] = WORKER_COUNTS, backends: Sequence[str] = ("process", "ray"),
                     ray_address: str | None = None) -> list[dict[str, Any]]:
    rows = []
    plan = [("inline", 1)] + [(backend, workers) for backend in backends for workers in worker_counts]
    for backend, workers in plan:
        options = {"address": ray_address} if backend == "ray" else {}
        with make_bench_pool(backend, env, workers, envs_per_worker, **options) as pool:
            # warm-up: as many episodes as timed (other tasks): one per slot left a worker's lazily
            # loaded state (WebShop: 2.3 s) inside the timed run
            run_rollouts(pool, _agent(env), cycled(env.task_ids, max(episodes, pool.num_slots), seed=1))
            seconds, records = _timed(pool, _agent(env), cycled(env.task_ids, episodes))
        steps = sum(r.num_steps for r in records)
        rows.append({"backend": backend, "workers": workers, "envs": workers * envs_per_worker, "episodes": len(records),
                     "steps": steps, "errors": sum(r.status == "error" for r in records),
                     "seconds": round(seconds, 3), "steps_per_s": round(steps / seconds, 1) if seconds else None})
    base = rows[0]["steps_per_s"]
    for row in rows:
        row["vs_inline"] = round(row["steps_per_s"] / base, 2) if base and row["steps_per_s"] else None
    return rows


# -- 1b. transport floor ---------------------------------------------------------------------
def _echo(conn: Any) -> None:
    while (message := conn.recv()) is not None:
        conn.send(message)


class _EchoActor:
    def echo(self, message: Any) -> Any:
        return message


def transport_floor(calls: int = 200) -> dict[str, float]:
    """Median round trip (ms) of an empty batch through each worker transport alone: a pipe to a
    spawned process, and a Ray actor method (needs a Ray session). What a pool's call costs above
    its envs' work is bounded below by these."""
    import multiprocessing

    import ray

    def median_ms(round_trip: Callable[[], Any]) -> float:
        round_trip()  # warm-up
        times = []
        for _ in range(calls):
            started = time.perf_counter()
            round_trip()
            times.append(time.perf_counter() - started)
        return round(1000 * statistics.median(times), 3)

    parent, child = multiprocessing.get_context("spawn").Pipe()
    process = multiprocessing.get_context("spawn").Process(target=_echo, args=(child,), daemon=True)
    process.start()
    try:
        pipe_ms = median_ms(lambda: (parent.send([]), parent.recv()))
    finally:
        parent.send(None)
        process.join(timeout=10)
    actor = ray.remote(_EchoActor).options(num_cpus=1).remote()
    try:
        ray_ms = median_ms(lambda: ray.get(actor.echo.remote([])))
    finally:
        ray.kill(actor)
    return {"process_pipe_ms": pipe_ms, "ray_actor_ms": ray_ms, "calls": calls}


# -- 2. engine overhead -------------------------------------------------------------------------
def _bare_loop(envs: Sequence[TextEnv], agent: Agent, episodes: list[EpisodeSpec]) -> tuple[float, int]:
    """The same episodes stepped by hand on ``envs`` in lock-step, as the engine schedules them on
    as many slots (every live episode acts once per round, one agent batch; a finished episode's env
    takes the next episode), recording nothing: the env work and the agent calls alone."""
    pending = deque(episodes)
    live: dict[int, tuple[str, str, dict[str, Any]]] = {}
    steps = 0

    def start(slot: int) -> None:
        spec = pending.popleft()
        observation, info = envs[slot].reset(seed=spec.seed, options={"task_id": spec.task_id})
        agent.reset([spec.episode_id], [observation], [info])
        live[slot] = (spec.episode_id, observation, info)

    started = time.perf_counter()
    for slot in range(len(envs)):
        if pending:
            start(slot)
    while live:
        slots = sorted(live)
        actions = agent.act([live[s][0] for s in slots], [live[s][1] for s in slots], [live[s][2] for s in slots])
        for slot, action in zip(slots, actions):
            observation, _, terminated, truncated, info = envs[slot].step(
                action if isinstance(action, str) else action.action)
            steps += 1
            if terminated or truncated:
                agent.end([live.pop(slot)[0]])
                if pending:
                    start(slot)
            else:
                live[slot] = (live[slot][0], observation, info)
    return time.perf_counter() - started, steps


def engine_overhead(env: EnvSetup, *, episodes: int, slots: int = 4, repeats: int = 20,
                    budget_s: float = 120.0) -> dict[str, Any]:
    """The engine on an inline pool against the bare loop on *the same* envs (same objects, same
    warm caches), in alternating order; both timed in CPU seconds of this thread, which everything
    here runs in, so that another process taking the core does not count. Repeats stop early once
    ``budget_s`` has passed (after at least 3): an env whose steps are slow is also less noisy."""
    plan = cycled(env.task_ids, episodes)
    seconds: dict[str, list[float]] = {"bare": [], "engine": []}
    steps = {"bare": 0, "engine": 0}
    deadline = time.perf_counter() + budget_s
    with InlinePool(env.env_id, env.env_kwargs, slots) as pool:
        for repeat in range(repeats + 1):  # the first pass of each warms caches (first loads, per-task caches)
            if repeat > 3 and time.perf_counter() > deadline:
                break
            for arm in ("bare", "engine") if repeat % 2 == 0 else ("engine", "bare"):
                agent, started = _agent(env), time.thread_time()
                if arm == "bare":
                    _, steps[arm] = _bare_loop(pool.envs, agent, plan)
                    seconds[arm].append(time.thread_time() - started)
                else:
                    records = run_rollouts(pool, agent, plan)
                    seconds[arm].append(time.thread_time() - started)
                    steps[arm] = sum(r.num_steps for r in records)
                    del records  # kept, they would weigh on the garbage collector of the next runs
    bare, engine = seconds["bare"][1:], seconds["engine"][1:]
    return {"episodes": episodes, "slots": slots, "steps": steps["engine"], "same_steps": steps["engine"] == steps["bare"],
            "clock": "thread CPU seconds", "bare_seconds": round(min(bare), 4), "engine_seconds": round(min(engine), 4),
            "overhead": round(min(engine) / min(bare) - 1, 4), "repeats": len(engine),
            # each repeat's pair ran back to back: their ratio cancels slow drifts in machine load
            "overhead_median_of_pairs": round(statistics.median(e / b for e, b in zip(engine, bare)) - 1, 4)}


# -- 3. lock-step vs waves ------------------------------------------------------------------------
def played(records: list[EpisodeRecord]) -> dict[str, Any]:
    """What each episode did, without wall times and backend diagnostics."""
    return {r.episode_id: (r.won, r.score, r.status, r.final_observation,
                           [(s.observation, s.action, s.response, s.reward) for s in r.steps]) for r in records}


def lockstep_vs_waves(env: EnvSetup, model: str, *, episodes: int, workers: int, slots: int,
                      waves: int = 2, seed: int = 0) -> dict[str, Any]:
    spec = f"hf:{model}@temperature=1.0,max_new_tokens=16,dtype=float32"
    plan = cycled(env.task_ids, episodes, seed=seed)
    agent = CountingAgent(make_agent(spec, seed=seed))
    agent.bind_env(env.env_id)
    runs = {}
    try:
        with ProcessPool(env.env_id, {k: v for k, v in env.env_kwargs.items() if k != "expert"}, workers=workers,
                         envs_per_worker=-(-slots // workers)) as pool:
            for count in (1, waves):  # warm-up: the weights, first loads, both schedules
                run_rollouts(pool, agent, plan[:2], waves=count)
            for count in (1, waves):
                agent.calls = 0
                seconds, records = _timed(pool, agent, plan, waves=count)
                rounds = agent.calls / count
                runs[count] = {"waves": count, "seconds": round(seconds, 3), "rounds": round(rounds, 1),
                               "seconds_per_round": round(seconds / rounds, 4) if rounds else None,
                               "steps": sum(r.num_steps for r in records), "played": played(records)}
    finally:
        agent.close()
    lock, overlapped = runs[1], runs[waves]
    return {"agent": spec, "episodes": episodes, "workers": workers, "slots": pool.num_slots,
            "same_records": lock.pop("played") == overlapped.pop("played"), "lock_step": lock, "overlapped": overlapped,
            "speedup": round(lock["seconds"] / overlapped["seconds"], 3) if overlapped["seconds"] else None}


# -- 4. memory per worker -----------------------------------------------------------------------------
def _memory(pid: int | None) -> dict[str, float | None]:
    return {name: None if value is None else round(value / 2**20, 1)
            for name, value in (("rss_mib", rss_bytes(pid)), ("pss_mib", pss_bytes(pid)))}


def memory_per_worker(env: EnvSetup, *, episodes: int, ray_address: str | None = None,
                      variants: Sequence[str] = ("process", "ray", "ray-unshared")) -> list[dict[str, Any]]:
    checkpoints = sorted({episodes // 4, episodes // 2, episodes} - {0})
    rows = []
    for variant in variants:
        backend = variant.split("-")[0]
        options = {"address": ray_address, "share_state": variant == "ray"} if backend == "ray" else {}
        readings: dict[int, dict[str, float | None]] = {}
        done = 0
        with make_bench_pool(backend, env, 1, 1, **options) as pool:
            pid = pool.worker_pids()[0]  # type: ignore[attr-defined]
            readings[0] = _memory(pid)

            def on_records(records: list[EpisodeRecord], pool: Any = pool) -> None:
                nonlocal done
                for _ in records:
                    done += 1
                    if done in checkpoints:
                        readings[done] = _memory(pool.worker_pids()[0])

            seconds, records = _timed(pool, _agent(env), cycled(env.task_ids, episodes), on_records=on_records)
        rows.append({"pool": variant, "episodes": len(records), "errors": sum(r.status == "error" for r in records),
                     "seconds": round(seconds, 1), "memory": {str(k): v for k, v in sorted(readings.items())}})
    return rows


# -- the whole benchmark --------------------------------------------------------------------------
def _section(result: dict[str, Any], env_id: str, name: str,
             on_section: Callable[[str, str, Any], None] | None, section: Callable[[], Any]) -> None:
    target = result if env_id == "*" else result["envs"][env_id]  # "*": a section of no one env
    target[name] = value = section()
    if on_section:
        on_section(env_id, name, value)


def run_pool_benchmark(envs: Sequence[str], *, split: str = "test", max_steps: int = 10, episodes: int = 128,
                       envs_per_worker: int = 4, worker_counts: Sequence[int] = WORKER_COUNTS,
                       overhead_episodes: int = 200, repeats: int = 20, model: str | None = None,
                       model_episodes: int = 16, memory_episodes: int = 1000, memory_max_steps: int = 5,
                       ray_address: str | None = None, env_args: dict[str, dict[str, Any]] | None = None,
                       splits: dict[str, str] | None = None,
                       on_section: Callable[[str, str, Any], None] | None = None) -> dict[str, Any]:
    """Every section on every env, inside one Ray session; ``on_section(env, section, result)`` as
    each finishes. ``splits`` / ``env_args`` override ``split`` / add constructor arguments per env."""
    from seed_gym.raypool import ray_session

    result: dict[str, Any] = {"cpus": os.cpu_count(), "split": split, "max_steps": max_steps, "episodes": episodes,
                              "envs_per_worker": envs_per_worker, "worker_counts": list(worker_counts),
                              "ray_address": ray_address or "local", "envs": {}}
    setups: dict[str, EnvSetup] = {}
    for env_id in envs:  # the engine's overhead first, while no Ray daemons share the cores
        env_split = (splits or {}).get(env_id, split)
        setups[env_id] = env = setup(env_id, env_split, max_steps=max_steps, env_kwargs=(env_args or {}).get(env_id, {}))
        result["envs"][env_id] = {"split": env_split, "agent": env.agent, "env_kwargs": env.env_kwargs}
        _section(result, env_id, "engine_overhead", on_section, lambda: engine_overhead(
            env, episodes=overhead_episodes, slots=envs_per_worker, repeats=repeats))
    with ray_session(ray_address, num_cpus=max([*worker_counts, os.cpu_count() or 1])):
        _section(result, "*", "transport_floor", on_section, transport_floor)
        for env_id, env in setups.items():
            sections: list[tuple[str, Callable[[], Any]]] = [
                ("steps_per_s", lambda: steps_per_second(env, episodes=episodes, envs_per_worker=envs_per_worker,
                                                         worker_counts=worker_counts, ray_address=ray_address)),
            ]
            if model:
                sections.append(("lock_step_vs_waves", lambda: lockstep_vs_waves(
                    env, model, episodes=model_episodes, workers=2, slots=8)))
            if memory_episodes:
                memory_env = replace(env, env_kwargs={**env.env_kwargs, "max_steps": memory_max_steps})
                sections.append(("memory", lambda: memory_per_worker(memory_env, episodes=memory_episodes,
                                                                     ray_address=ray_address)))
            for name, section in sections:
                _section(result, env_id, name, on_section, section)
    return result

