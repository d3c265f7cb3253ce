"""A tiny deterministic TextEnv for testing the base class, the rollout engine and backends.

It is a real TextEnv subclass (not a mock): a counter game. Task ``count-N`` is won by saying
``up`` N times; ``admissible_actions`` is ``["up", "down"]``. ``crash`` kills the worker process
(to test worker restarts), ``boom`` raises inside the env (to test per-env failures), ``hang``
sleeps for an hour (to test call timeouts).
"""

from __future__ import annotations

import os
import time

from seed_gym.core import StepOutcome, TaskInfo, TextEnv, UnknownTaskError
from seed_gym.tasks import Split, TaskSet

TASKS = tuple(f"count-{n}" for n in range(1, 9))


class CounterEnv(TextEnv):
    env_id = "toy-counter"
    version = "1"
    default_max_steps = 10

    def __init__(self, max_steps: int | None = None, crash_on: str = "crash") -> None:
        super().__init__(max_steps=max_steps)
        self.value = 0
        self.target = 0
        self.seed_seen: int | None = None
        self.crash_on = crash_on

    def task_set(self) -> TaskSet:
        ids = {"train": TASKS[:6], "unseen": TASKS[6:]}
        splits = {name: Split(name, t, content_hash=lambda tid: tid) for name, t in ids.items()}
        return TaskSet(splits, data_fingerprint="toy", default_split="train")

    def _reset(self, task_id: str, seed: int) -> tuple[str, TaskInfo]:
        if task_id not in TASKS:
            raise UnknownTaskError(f"unknown task {task_id!r}")
        self.value, self.target, self.seed_seen = 0, int(task_id.split("-")[1]), seed
        family = "odd" if self.target % 2 else "even"
        return f"count to {self.target} (seed {seed})", TaskInfo(task_id, "train", family, f"count to {self.target}")

    def _step(self, action: str) -> StepOutcome:
        if action == self.crash_on:
            os._exit(3)
        if action == "boom":
            raise RuntimeError("boom")
        if action == "hang":
            time.sleep(3600)
        if action not in ("up", "down"):
            return StepOutcome("Nothing happens.", invalid_action=True)
        self.value += 1 if action == "up" else -1
        won = self.value == self.target
        return StepOutcome(f"value {self.value}", reward=float(won), terminated=won)

    def _won(self) -> bool:
        return self.value == self.target

    def _score(self) -> float:
        return 1.0 if self._won() else max(0.0, self.value / max(self.target, 1))

    def _admissible_actions(self) -> list[str]:
        return ["up", "down"]

    def _expert_action(self) -> str:
        return "up"


class CounterTable:
    """The shared state of :class:`SharedCounterEnv`: stands in for a catalogue or an index, and
    remembers the process that built it."""

    def __init__(self) -> None:
        self.built_by = os.getpid()

    def install(self) -> None:
        global _TABLE
        _TABLE = self


_TABLE: CounterTable | None = None


class SharedCounterEnv(CounterEnv):
    """The counter game with a shared state: every instance in a process uses one table (built
    by the first, or installed from elsewhere), and its first observation names the table's builder."""

    env_id = "toy-shared"

    def __init__(self, max_steps: int | None = None) -> None:
        super().__init__(max_steps=max_steps)
        global _TABLE
        self.table = _TABLE = _TABLE or CounterTable()

    def shared_state(self) -> CounterTable:
        return self.table

    def _reset(self, task_id: str, seed: int) -> tuple[str, TaskInfo]:
        observation, task = super()._reset(task_id, seed)
        return f"{observation} [table built by {self.table.built_by}, env in {os.getpid()}]", task
