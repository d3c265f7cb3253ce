"""Evaluation runs: one agent x env x split into one resumable run directory.

``evaluate(config)`` resolves the split (generating embedded data if needed), plans the episodes
(the first ``n`` tasks of the split x ``group``), opens the run directory (or checks that an
existing one is the same run, by :func:`~seed_gym.records.identity_diff`), plays only the episodes
it does not have yet, and writes ``summary.json`` from the records of the planned episodes.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from seed_gym.agent import AgentSpec, agent_class, make_agent
from seed_gym.pools import DEFAULT_CALL_TIMEOUT, make_pool
from seed_gym.progress import EvalProgress
from seed_gym.records import RunDir, provenance
from seed_gym.core import MissingDataError, SeedGymError, TextEnv
from seed_gym.registry import make, profile, takes_env_kwarg
from seed_gym.rollout import plan_episodes, run_rollouts
from seed_gym.scoring import summarize
from seed_gym.tasks import fingerprint


@dataclass
class EvalConfig:
    env: str
    split: str
    agent: str
    out: Path
    n: int | None = None
    group: int = 1
    seed: int = 0
    max_steps: int | None = None
    backend: str = "process"
    workers: int = field(default_factory=lambda: max(1, os.cpu_count() or 1))
    live_episodes: int | None = None  # episodes in play at once (None: 4 per worker)
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    call_timeout: float = DEFAULT_CALL_TIMEOUT  # seconds per env call before its worker is replaced
    recycle_after: int | None = None            # replace a worker after this many episodes
    ray_address: str | None = None              # the Ray cluster of backend="ray" (None: local Ray)
    waves: int = 1                              # >1: the envs of some waves step while the agent acts on another


@dataclass
class PreparedRun:
    config: EvalConfig
    identity: dict[str, Any]
    extra: dict[str, Any]
    episodes: list[Any]
    env_kwargs: dict[str, Any]
    #: What a run that never recorded an identity key used (``RunDir.open``'s ``defaults``).
    identity_defaults: dict[str, Any] = field(default_factory=dict)


class MissingExpertError(SeedGymError):
    """An agent reads ``info["expert_action"]`` but the env has no expert."""


def expert_kwargs(env_id: str, env: TextEnv, agent: str) -> dict[str, Any]:
    """What switches ``env``'s expert on for ``agent``: ``{"expert": True}`` when its constructor
    takes that keyword, ``{}`` when its expert is always on; an env without one is an error."""
    if not env.has_expert():
        raise MissingExpertError(f"agent {agent!r} plays info['expert_action'], but env {env_id!r} has no expert "
                                 f"({type(env).__name__} does not implement _expert_action)")
    return {"expert": True} if takes_env_kwarg(env_id, "expert") else {}


def prepare(config: EvalConfig) -> PreparedRun:
    """Resolve everything a run's identity depends on, without playing anything (nor loading a model)."""
    agent_spec = AgentSpec.parse(config.agent)
    needs_expert = agent_class(agent_spec).requires_expert
    agent = make_agent(agent_spec, seed=config.seed)
    agent.bind_env(config.env)
    agent_identity = agent.identity()
    env_kwargs = dict(config.env_kwargs)
    if config.max_steps is not None:
        env_kwargs["max_steps"] = config.max_steps
    probe = make(config.env, **env_kwargs)
    task_set = probe.task_set()
    split = task_set.split(config.split)
    task_ids = split.select(config.n)
    if not task_ids:  # an env's loader names the file; this catches any env whose split came out empty
        raise MissingDataError(f"{config.env}: split {config.split!r} has no tasks (data "
                               f"{task_set.data_fingerprint}); check the data the env reads")
    episodes = plan_episodes(task_ids, group=config.group, seed=config.seed)
    identity = {
        "env": config.env, "env_version": probe.version, "env_kwargs": env_kwargs,
        "split": config.split, "split_fingerprint": split.fingerprint,
        "data_fingerprint": task_set.data_fingerprint, "agent": str(agent_spec),
        "max_steps": probe.max_steps, "group": config.group, "seed": config.seed,
        "tasks": len(task_ids), "tasks_fingerprint": fingerprint(task_ids), "agent_config": agent_identity,
    }
    # Runs of agents whose identity was empty recorded no agent_config.
    defaults = {"agent_config": {}, **{f"agent_config.{key}": value
                                       for key, value in agent.identity_defaults().items()}}
    describe = getattr(probe, "describe", None)
    extra = {"env_description": describe() if describe else {}, "agent_description": agent.describe(),
             "task_ids": task_ids,
             "provenance": provenance(profile(config.env).packages)}
    probe.close()
    if needs_expert:
        env_kwargs = {**env_kwargs, **expert_kwargs(config.env, probe, str(agent_spec))}
    return PreparedRun(config, identity, extra, episodes, env_kwargs, defaults)


def evaluate(config: EvalConfig, *, overwrite: bool = False,
             on_progress: Callable[[EvalProgress], None] | None = None, backend: Any = None) -> dict[str, Any]:
    """Run (or resume) one evaluation; returns the summary that lands in ``summary.json``.

    ``on_progress`` hears where the run stands after every tick of the rollout engine. ``backend``: a
    generation backend already holding the weights of the model the agent spec names (a trainer's
    rollout engine), which the model agent then uses instead of loading them; it is left open."""
    prepared = prepare(config)
    run = RunDir(config.out)
    if overwrite and run.exists():
        for path in (run.manifest_path, run.episodes_path, run.summary_path):
            path.unlink(missing_ok=True)
    run.open(prepared.identity, prepared.extra, prepared.identity_defaults)
    planned = {spec.episode_id for spec in prepared.episodes}
    finished = {k: v for k, v in run.finished().items() if k in planned}
    todo = [spec for spec in prepared.episodes if spec.episode_id not in finished]
    progress = EvalProgress(done=len(finished), total=len(prepared.episodes))
    if on_progress:
        on_progress(progress)
    started = time.perf_counter()
    pool_description: dict[str, Any] | None = None
    if todo:
        agent = (make_agent(config.agent, seed=config.seed) if backend is None else
                 agent_class(config.agent)(AgentSpec.parse(config.agent), seed=config.seed, backend=backend))
        agent.bind_env(config.env)
        num_slots = min(len(todo), config.live_episodes or 4 * max(1, config.workers))

        def persist(records: list[Any]) -> None:
            run.append(records)
            progress.done += len(records)
            if on_progress:
                on_progress(progress)

        def count(steps: list[Any]) -> None:
            progress.add_steps(steps)
            if on_progress:
                on_progress(progress)

        try:
            with make_pool(config.backend, config.env, prepared.env_kwargs, num_slots=num_slots,
                           workers=config.workers, call_timeout=config.call_timeout,
                           recycle_after=config.recycle_after, ray_address=config.ray_address) as pool:
                run_rollouts(pool, agent, todo, on_records=persist, on_steps=count, waves=config.waves)
                pool_description = pool.describe()
        finally:
            if backend is None:  # a backend passed in stays open: it is the caller's
                agent.close()
    records = [r for r in run.finished().values() if r.episode_id in planned]
    summary = {
        **{k: prepared.identity[k] for k in ("env", "env_version", "split", "agent", "split_fingerprint",
                                             "data_fingerprint", "max_steps", "group", "seed")},
        **summarize(records),
        "planned_episodes": progress.total,
        "complete": len(records) == progress.total,
        "resumed_episodes": len(finished),
        "wall_seconds_this_session": round(time.perf_counter() - started, 3),
        "pool_this_session": pool_description,
        "run_dir": str(config.out),
        "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(config).items()},
    }
    run.write_summary(summary)
    return summary
