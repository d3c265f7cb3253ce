"""The rollout engine: tasks x group size, lock-step across every live episode.

Each tick the agent gets *one* batch with every live episode (one batched forward pass for a model
agent); the pool steps them all (in parallel across worker processes); finished episodes become
records at once and their slots take the next pending episodes. Group members of one task share
the episode seed, so they start from an identical state; agents tell them apart by episode id.

Resilience: an env failure (an exception, a dead or hung worker) fails only the episodes it
touched; they are retried from the start up to ``max_retries`` times, then recorded with
``status="error"``. Finished records go to ``on_records`` as soon as a tick ends, so a caller that
persists them (the run directory) loses at most the episodes in flight when killed. The steps of
each tick go to ``on_steps`` as they are taken (progress displays count them).

Cost: a :class:`RolloutClock` passed as ``clock`` adds up the seconds spent in the pool's calls
(env resets and steps) and in the agent's calls (``reset`` and ``act``), and the env steps taken.
"""

from __future__ import annotations

import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from seed_gym.agent import Agent, as_agent_action
from seed_gym.pools import Call, CallError, EnvPool
from seed_gym.records import EpisodeRecord, StepRecord, episode_id


@dataclass
class RolloutClock:
    """Seconds in env pool calls and in agent calls, and env steps taken, summed over rollouts."""

    env_s: float = 0.0
    agent_s: float = 0.0
    steps: int = 0

    def env(self, run: Callable[[], Any]) -> Any:
        return self._timed("env_s", run)

    def agent(self, run: Callable[[], Any]) -> Any:
        return self._timed("agent_s", run)

    def _timed(self, total: str, run: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        try:
            return run()
        finally:
            setattr(self, total, getattr(self, total) + time.perf_counter() - started)


@dataclass(frozen=True)
class EpisodeSpec:
    task_id: str
    group_index: int
    seed: int

    @property
    def episode_id(self) -> str:
        return episode_id(self.task_id, self.group_index)


def task_seed(run_seed: int, task_id: str) -> int:
    """The env seed of every episode of one task: group members start identically."""
    return (run_seed * 1_000_003 + zlib.crc32(task_id.encode())) % (2**31)


def plan_episodes(task_ids: Iterable[str], *, group: int = 1, seed: int = 0) -> list[EpisodeSpec]:
    if group < 1:
        raise ValueError(f"group size must be >= 1, got {group}")
    return [EpisodeSpec(tid, g, task_seed(seed, tid)) for tid in task_ids for g in range(group)]


@dataclass
class _Live:
    spec: EpisodeSpec
    observation: str
    info: dict[str, Any]
    started: float
    attempt: int
    steps: list[StepRecord] = field(default_factory=list)
    total_reward: float = 0.0


OnRecords = Callable[[list[EpisodeRecord]], None]
OnSteps = Callable[[list[StepRecord]], None]
#: ``fail(spec, attempt, why, started)``: requeue a failed episode, or return its error record.
Fail = Callable[[EpisodeSpec, int, str, float], "EpisodeRecord | None"]


def run_rollouts(pool: EnvPool, agent: Agent, episodes: Sequence[EpisodeSpec], *,
                 on_records: OnRecords | None = None, on_steps: OnSteps | None = None,
                 max_retries: int = 1, clock: RolloutClock | None = None) -> list[EpisodeRecord]:
    """Play ``episodes`` with ``agent`` on ``pool``; return their records in completion order."""
    clock = clock or RolloutClock()
    pending: deque[tuple[EpisodeSpec, int]] = deque((spec, 0) for spec in episodes)
    free = list(range(pool.num_slots))[::-1]
    live: dict[int, _Live] = {}
    finished: list[EpisodeRecord] = []

    def emit(records: list[EpisodeRecord]) -> None:
        if records:
            finished.extend(records)
            if on_records:
                on_records(records)
            agent.end([r.episode_id for r in records])

    def fail(spec: EpisodeSpec, attempt: int, why: str, started: float) -> EpisodeRecord | None:
        if attempt < max_retries:
            pending.appendleft((spec, attempt + 1))
            return None
        return _error_record(spec, agent, why, started)

    while pending or live:
        done_now = _start_episodes(pool, agent, pending, free, live, fail, clock)
        if live:
            done_now += _tick(pool, agent, live, free, fail, clock, on_steps)
        emit(done_now)
    return finished


def _start_episodes(pool: EnvPool, agent: Agent, pending: deque[tuple[EpisodeSpec, int]],
                    free: list[int], live: dict[int, _Live], fail: Fail, clock: RolloutClock) -> list[EpisodeRecord]:
    starting: list[tuple[int, EpisodeSpec, int]] = []
    while free and pending:
        spec, attempt = pending.popleft()
        starting.append((free.pop(), spec, attempt))
    if not starting:
        return []
    now = time.perf_counter()
    results = clock.env(lambda: pool.run([Call("reset", slot, task_id=spec.task_id, seed=spec.seed)
                                          for slot, spec, _ in starting]))
    errors: list[EpisodeRecord] = []
    started: list[_Live] = []
    for (slot, spec, attempt), result in zip(starting, results):
        if isinstance(result, CallError):
            free.append(slot)
            errors += filter(None, [fail(spec, attempt, result.message, now)])
            continue
        observation, info = result
        live[slot] = _Live(spec, observation, info, now, attempt)
        started.append(live[slot])
    errors += _drop_lost(pool, live, free, fail)
    alive = {id(ep) for ep in live.values()}
    started = [ep for ep in started if id(ep) in alive]
    if started:
        clock.agent(lambda: agent.reset([ep.spec.episode_id for ep in started],
                                        [ep.observation for ep in started], [ep.info for ep in started]))
    return errors


def _tick(pool: EnvPool, agent: Agent, live: dict[int, _Live], free: list[int],
          fail: Fail, clock: RolloutClock, on_steps: OnSteps | None = None) -> list[EpisodeRecord]:
    slots = sorted(live)
    episodes = [live[slot] for slot in slots]
    outputs = clock.agent(lambda: agent.act([ep.spec.episode_id for ep in episodes],
                                            [ep.observation for ep in episodes], [ep.info for ep in episodes]))
    if len(outputs) != len(episodes):
        raise RuntimeError(f"agent {agent.name} returned {len(outputs)} actions for {len(episodes)} episodes")
    actions = [as_agent_action(output) for output in outputs]
    results = clock.env(lambda: pool.run([Call("step", slot, action=action.action)
                                          for slot, action in zip(slots, actions)]))
    clock.steps += len(slots)
    done: list[EpisodeRecord] = []
    taken: list[StepRecord] = []
    for slot, episode, action, result in zip(slots, episodes, actions, results):
        if isinstance(result, CallError):
            del live[slot]
            free.append(slot)
            done += filter(None, [fail(episode.spec, episode.attempt, result.message, episode.started)])
            continue
        observation, reward, terminated, truncated, info = result
        episode.steps.append(StepRecord(
            t=len(episode.steps), observation=episode.observation, action=action.action,
            reward=float(reward), invalid_action=bool(info.get("invalid_action")),
            admissible_actions=episode.info.get("admissible_actions"), **action.trace()))
        taken.append(episode.steps[-1])
        episode.total_reward += float(reward)
        episode.observation, episode.info = observation, info
        if terminated or truncated:
            del live[slot]
            free.append(slot)
            done.append(_finished_record(episode, agent, "completed" if terminated else "truncated"))
    if on_steps and taken:
        on_steps(taken)
    done += _drop_lost(pool, live, free, fail)
    return done


def _drop_lost(pool: EnvPool, live: dict[int, _Live], free: list[int], fail: Fail) -> list[EpisodeRecord]:
    """Episodes whose env state vanished with a restarted worker start over (or fail)."""
    records = []
    for slot in sorted(pool.pop_lost_slots()):
        episode = live.pop(slot, None)
        if episode is None:
            continue
        free.append(slot)
        records += filter(None, [fail(episode.spec, episode.attempt, "env worker restarted", episode.started)])
    return records


def _finished_record(episode: _Live, agent: Agent, status: str) -> EpisodeRecord:
    info = episode.info
    return EpisodeRecord(
        episode_id=episode.spec.episode_id, task=dict(info["task"]), agent=agent.name,
        group_index=episode.spec.group_index, seed=episode.spec.seed, steps=episode.steps,
        final_observation=episode.observation, won=bool(info.get("won")),
        score=float(info.get("score", 0.0)), total_reward=episode.total_reward, status=status,
        wall_seconds=round(time.perf_counter() - episode.started, 4))


def _error_record(spec: EpisodeSpec, agent: Agent, why: str, started: float) -> EpisodeRecord:
    return EpisodeRecord(
        episode_id=spec.episode_id, task={"id": spec.task_id, "split": "", "family": "", "instruction": ""},
        agent=agent.name, group_index=spec.group_index, seed=spec.seed, steps=[],
        final_observation="", won=False, score=0.0, total_reward=0.0, status="error",
        wall_seconds=round(time.perf_counter() - started, 4), error=why)
