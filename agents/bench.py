"""``seed-gym bench agent``: generation throughput per backend and batch size, and what lock-step
batching buys over playing one episode at a time — all measured in one run, on real env prompts.

* Throughput: the first-step prompts of real tasks, greedy, a fixed ``max_new_tokens`` and no stop
  strings; new tokens/s = generated tokens / wall time, after one warm-up call per batch size.
* Lock-step vs sequential: the same agent plays the same tasks twice through the real rollout
  engine — once with every episode live at once (one batched call per tick), once with a single
  slot (one episode at a time). Greedy decoding makes both play identical actions, which the
  result reports as a check; the ratio is sequential time / lock-step time.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seed_gym.agent import CountingAgent, make_agent
from seed_gym.agents.backends import Backend, SamplingParams
from seed_gym.agents.model import ModelAgent
from seed_gym.pools import make_pool
from seed_gym.registry import make
from seed_gym.rollout import plan_episodes, run_rollouts


def first_step_prompts(env_id: str, split: str, n: int, *, seed: int = 0,
                       env_kwargs: dict[str, Any] | None = None) -> list[list[dict[str, str]]]:
    """The prompts a model agent would see at step 0 of the first ``n`` tasks of a split."""
    env = make(env_id, **(env_kwargs or {}))
    agent = ModelAgent(seed=seed, env_id=env_id)  # builds prompts; no backend is loaded
    try:
        task_ids = env.task_set().split(split).select(n)
        prompts = []
        for task_id in task_ids:
            observation, info = env.reset(seed=seed, options={"task_id": task_id})
            prompts += agent.prompts([task_id], [observation], [info])
        return prompts
    finally:
        env.close()


@dataclass
class ThroughputRow:
    backend: str
    batch: int
    new_tokens: int
    seconds: float

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.seconds if self.seconds else 0.0


def generation_throughput(backend: Backend, prompts: Sequence[Any], batch_sizes: Sequence[int], *,
                          max_new_tokens: int = 32, repeats: int = 1) -> list[ThroughputRow]:
    params = SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0)
    rows = []
    for batch in batch_sizes:
        chosen = [prompts[i % len(prompts)] for i in range(batch)]
        backend.generate(chosen, params)  # warm-up: compile, allocate the KV cache
        tokens, seconds = 0, 0.0
        for _ in range(repeats):
            started = time.perf_counter()
            generations = backend.generate(chosen, params)
            seconds += time.perf_counter() - started
            tokens += sum(g.completion_tokens for g in generations)
        rows.append(ThroughputRow(backend.name, batch, tokens, seconds))
    return rows


@dataclass
class LockstepResult:
    episodes: int
    lockstep_seconds: float
    sequential_seconds: float
    lockstep_ticks: int
    sequential_ticks: int
    same_actions: bool

    @property
    def speedup(self) -> float:
        return self.sequential_seconds / self.lockstep_seconds if self.lockstep_seconds else 0.0


def _play(agent_spec: str, env_id: str, task_ids: Sequence[str], *, slots: int, max_steps: int,
          seed: int) -> tuple[float, int, dict[str, list[str]]]:
    agent = CountingAgent(make_agent(agent_spec, seed=seed))
    agent.bind_env(env_id)
    episodes = plan_episodes(task_ids, seed=seed)
    try:
        agent.agent.backend  # load weights before the clock starts
        with make_pool("inline", env_id, {"max_steps": max_steps}, num_slots=slots) as pool:
            started = time.perf_counter()
            records = run_rollouts(pool, agent, episodes)  # type: ignore[arg-type]
            seconds = time.perf_counter() - started
    finally:
        agent.close()
    return seconds, agent.calls, {r.episode_id: [s.action for s in r.steps] for r in records}


def lockstep_speedup(agent_spec: str, env_id: str, split: str, n: int, *, max_steps: int = 5,
                     seed: int = 0) -> LockstepResult:
    env = make(env_id)
    task_ids = env.task_set().split(split).select(n)
    env.close()
    lock_s, lock_ticks, lock_actions = _play(agent_spec, env_id, task_ids, slots=len(task_ids),
                                             max_steps=max_steps, seed=seed)
    seq_s, seq_ticks, seq_actions = _play(agent_spec, env_id, task_ids, slots=1, max_steps=max_steps, seed=seed)
    return LockstepResult(len(task_ids), lock_s, seq_s, lock_ticks, seq_ticks, lock_actions == seq_actions)
