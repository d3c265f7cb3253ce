"""The rollout engine: tasks x group size, every live episode stepped each round.

Each round the agent gets *one* batch with the live episodes of a wave (one batched forward pass
for a model agent) and their steps go to the pool as one batch; finished episodes become records
at once. Group members of one task share the episode seed, so they start from an identical state;
agents tell them apart by episode id.

Waves (``waves=W``). The pool's slots are split into W waves (slot ``s`` is in wave ``s % W``)
and the engine takes them in turn: it collects wave w's batch, lets the agent act on wave w, and
submits wave w's next batch, so while the agent generates for one wave the envs of the others
step. ``waves=1`` is lock-step: every live episode in one batch, the agent and the envs taking
turns (the default).

Free slots. In lock-step a slot freed by a finished episode is reset for the next pending episode
before the agent acts, so the new episode is in the same round's batch (every slot acts every
round while episodes are pending). With waves, the resets of a wave's free slots go to the pool
with the wave's steps, so no wave waits on the batch of another; the new episodes act a round later.

What is guaranteed, for any number of waves, slots, workers or backend: each episode's record
is the same, because an episode's course depends only on its own reset (task id and seed) and on
the agent's actions for it, which agents derive from the episode alone (seeded per episode,
:mod:`seed_gym.agent`). What changes with the waves is only when episodes run: the order records
come back in, which batch an episode shared (``meta.batch_size``, latencies) and wall times.

Resilience: an env failure (an exception, a dead or hung worker) fails only the episodes it
touched; they are retried from the start up to ``max_retries`` times, then recorded with
``status="error"``. Finished records go to ``on_records`` as soon as their batch is read back, so a
caller that persists them (the run directory) loses at most the episodes in flight when killed.
The steps of each batch go to ``on_steps`` as they are read back (progress displays count them).

Cost: a :class:`RolloutClock` passed as ``clock`` adds up the seconds spent in the pool's calls
(submitting env resets and steps, and waiting for their results) and in the agent's calls
(``reset`` and ``act``), and the env steps taken. With several waves the envs also work while the
agent acts, so the env seconds are the time the engine waited on them, not their own time.
"""

from __future__ import annotations

import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from seed_gym.agent import Agent, AgentAction
from seed_gym.pools import Call, CallError, EnvPool, Ticket
from seed_gym.records import EpisodeRecord, StepRecord, episode_id


@dataclass
class RolloutClock:
    """Seconds in env pool calls and in agent calls, and env steps taken, summed over rollouts."""

    env_s: float = 0.0
    agent_s: float = 0.0
    steps: int = 0


@dataclass(frozen=True)
class EpisodeSpec:
    task_id: str
    group_index: int
    seed: int

    @cached_property
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
#: ``fail(spec, attempt, why, started)``: requeue a failed episode (``[]``), or return its error record.
Fail = Callable[[EpisodeSpec, int, str, float], list[EpisodeRecord]]


@dataclass(frozen=True)
class _Starting:
    """An episode whose reset is in flight."""

    spec: EpisodeSpec
    attempt: int
    started: float


@dataclass
class _Wave:
    """One wave's slots: the free ones, the live episodes, and the batch in flight (``sent`` says
    what each of its calls was for, in call order)."""

    free: list[int]
    live: dict[int, _Live] = field(default_factory=dict)
    ticket: Ticket | None = None
    sent: list[tuple[int, _Live | _Starting, str | AgentAction | None]] = field(default_factory=list)


def run_rollouts(pool: EnvPool, agent: Agent, episodes: Sequence[EpisodeSpec], *,
                 on_records: OnRecords | None = None, on_steps: OnSteps | None = None, max_retries: int = 1,
                 waves: int = 1, clock: RolloutClock | None = None) -> list[EpisodeRecord]:
    """Play ``episodes`` with ``agent`` on ``pool`` in ``waves`` waves (1: lock-step); return their
    records in completion order."""
    if waves < 1:
        raise ValueError(f"waves must be >= 1, got {waves}")
    clock = clock or RolloutClock()
    pending: deque[tuple[EpisodeSpec, int]] = deque((spec, 0) for spec in episodes)
    count = min(waves, pool.num_slots)
    lock_step = count == 1
    all_waves = [_Wave(free=[s for s in range(pool.num_slots) if s % count == w][::-1]) for w in range(count)]
    finished: list[EpisodeRecord] = []

    def emit(records: list[EpisodeRecord]) -> None:
        if records:
            finished.extend(records)
            if on_records:
                on_records(records)
            agent.end([r.episode_id for r in records])

    def fail(spec: EpisodeSpec, attempt: int, why: str, started: float) -> list[EpisodeRecord]:
        if attempt < max_retries:
            pending.appendleft((spec, attempt + 1))
            return []
        return [_error_record(spec, agent, why, started)]

    while pending or any(wave.live or wave.ticket for wave in all_waves):
        for wave in all_waves:
            done = _read_back(pool, agent, wave, all_waves, fail, clock, on_steps) if wave.ticket else []
            # Lock-step: the next episodes start before the agent acts, so they join this round's batch
            # instead of leaving their slots idle for a round. (With waves their resets go out with the
            # wave's steps, so that no wave waits on a batch of another.)
            while lock_step and wave.free and pending:
                _submit(pool, wave, _resets(wave, pending), clock)
                done += _read_back(pool, agent, wave, all_waves, fail, clock, on_steps)
            _submit(pool, wave, _act(agent, wave, clock) + _resets(wave, pending), clock)
            emit(done)
    return finished


def _act(agent: Agent, wave: _Wave, clock: RolloutClock) -> list[Call]:
    """The agent acts on the wave's live episodes (one batch); their step calls."""
    if not wave.live:
        return []
    slots = sorted(wave.live)
    episodes = [wave.live[slot] for slot in slots]
    started = time.perf_counter()
    outputs = agent.act([ep.spec.episode_id for ep in episodes], [ep.observation for ep in episodes],
                        [ep.info for ep in episodes])
    clock.agent_s += time.perf_counter() - started
    if len(outputs) != len(episodes):
        raise RuntimeError(f"agent {agent.name} returned {len(outputs)} actions for {len(episodes)} episodes")
    wave.sent += zip(slots, episodes, outputs)
    return [Call("step", slot, None, None, _text(output)) for slot, output in zip(slots, outputs)]


def _resets(wave: _Wave, pending: deque[tuple[EpisodeSpec, int]]) -> list[Call]:
    """Reset calls of the wave's free slots for the next pending episodes."""
    calls: list[Call] = []
    now = time.perf_counter()
    while wave.free and pending:
        spec, attempt = pending.popleft()
        slot = wave.free.pop()
        calls.append(Call("reset", slot, spec.task_id, spec.seed))
        wave.sent.append((slot, _Starting(spec, attempt, now), None))
    return calls


def _submit(pool: EnvPool, wave: _Wave, calls: list[Call], clock: RolloutClock) -> None:
    """The wave's calls go to the pool as one batch."""
    if calls:
        started = time.perf_counter()
        wave.ticket = pool.submit(calls)
        clock.env_s += time.perf_counter() - started


def _read_back(pool: EnvPool, agent: Agent, wave: _Wave, all_waves: list[_Wave], fail: Fail,
               clock: RolloutClock, on_steps: OnSteps | None) -> list[EpisodeRecord]:
    """The wave's batch results: steps become step records (and finished episodes records),
    resets new live episodes, failures retries."""
    assert wave.ticket is not None
    started_at = time.perf_counter()
    results = pool.collect(wave.ticket)
    clock.env_s += time.perf_counter() - started_at
    sent, wave.ticket, wave.sent = wave.sent, None, []
    done: list[EpisodeRecord] = []
    started: list[_Live] = []
    taken: list[StepRecord] = []
    for (slot, item, action), result in zip(sent, results):
        if isinstance(result, CallError):
            wave.live.pop(slot, None)
            wave.free.append(slot)
            done += fail(item.spec, item.attempt, result.message, item.started)
        elif action is None:  # a reset
            observation, info = result
            wave.live[slot] = _Live(item.spec, observation, info, item.started, item.attempt)
            started.append(wave.live[slot])
        else:
            taken.append(_record_step(item, action, result))
            if result[2] or result[3]:  # terminated or truncated
                del wave.live[slot]
                wave.free.append(slot)
                done.append(_finished_record(item, agent, "completed" if result[2] else "truncated"))
    clock.steps += len(taken)
    if on_steps and taken:
        on_steps(taken)
    lost = pool.pop_lost_slots()
    if lost:
        done += _drop_lost(lost, all_waves, fail)
        alive = {id(ep) for ep in wave.live.values()}  # some just started may have gone with a worker
        started = [ep for ep in started if id(ep) in alive]
    if started:
        started_at = time.perf_counter()
        agent.reset([ep.spec.episode_id for ep in started], [ep.observation for ep in started],
                    [ep.info for ep in started])
        clock.agent_s += time.perf_counter() - started_at
    return done


def _text(output: str | AgentAction) -> str:
    return output.action if isinstance(output, AgentAction) else str(output)


_NO_TRACE: dict[str, Any] = {}  # a plain-string action's step keeps the trace fields' defaults


def _record_step(episode: _Live, output: str | AgentAction, result: Any) -> StepRecord:
    """Append the step to the episode and return it (a plain-string action has the default trace)."""
    observation, reward, _, _, info = result
    reward = float(reward)
    trace = output.trace() if isinstance(output, AgentAction) else _NO_TRACE
    step = StepRecord(len(episode.steps), episode.observation, _text(output), reward, bool(info.get("invalid_action")),
                      episode.info.get("admissible_actions"), **trace)
    episode.steps.append(step)
    episode.total_reward += reward
    episode.observation, episode.info = observation, info
    return step


def _drop_lost(lost: set[int], all_waves: list[_Wave], fail: Fail) -> list[EpisodeRecord]:
    """Episodes whose env state vanished with a restarted worker (on the ``lost`` slots) start over
    (or fail). A lost slot with a call in flight is left to that call, which the pool answers with
    a CallError (or, sent to the fresh worker, with a fresh env's answer)."""
    in_flight = {slot for wave in all_waves for slot, _, _ in wave.sent}
    records: list[EpisodeRecord] = []
    for slot in sorted(lost - in_flight):
        wave = all_waves[slot % len(all_waves)]
        episode = wave.live.pop(slot, None)
        if episode is None:
            continue
        wave.free.append(slot)
        records += fail(episode.spec, episode.attempt, "env worker restarted", episode.started)
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
