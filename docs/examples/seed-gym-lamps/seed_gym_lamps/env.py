"""The env: task ``lamps-<order>`` (e.g. ``lamps-213``) is won by switching the lamps on in that
order; a lamp switched out of turn puts every lamp out again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from seed_gym import Split, StepOutcome, TaskInfo, TaskSet, TextEnv

# Splits are explicit, ordered task-id lists: `-n N` evaluates the first N of a split.
SPLITS = {
    "train": ("lamps-123", "lamps-132", "lamps-213", "lamps-231", "lamps-312", "lamps-321"),
    "test": ("lamps-1234", "lamps-2143", "lamps-3412", "lamps-4321"),
    "unseen": ("lamps-2413", "lamps-3142"),
}
SPLIT_OF = {task: split for split, tasks in SPLITS.items() for task in tasks}


def order_of(task_id: str) -> list[int]:
    return [int(c) for c in task_id.removeprefix("lamps-")]


class LampsEnv(TextEnv):
    env_id = "lamps"
    version = "lamps-1"   # goes into every run's identity: bump it when behaviour changes
    default_max_steps = 8

    def __init__(self, max_steps: int | None = None) -> None:
        # Constructor keywords are what `--env-arg key=value` may set (checked against their types).
        super().__init__(max_steps=max_steps)
        self.order: list[int] = []
        self.lit: list[int] = []

    def task_set(self) -> TaskSet:
        # content_hash(task_id) hashes what a task *is*; here the id says it all. A real env hashes
        # its task files, so editing a task changes the split fingerprint.
        splits = {name: Split(name, tasks, content_hash=lambda tid: tid) for name, tasks in SPLITS.items()}
        return TaskSet(splits, data_fingerprint="lamps-v1", default_split="test")

    def ground_truth(self, task_id: str) -> Mapping[str, Any] | None:
        # The answer key, for training's rule analyzer only (agents never see it).
        return {"order": order_of(task_id)} if task_id in SPLIT_OF else None

    def _reset(self, task_id: str, seed: int) -> tuple[str, TaskInfo]:
        # The base class has already checked that task_id is one its splits list.
        self.order, self.lit = order_of(task_id), []
        family = "three-lamps" if len(self.order) == 3 else "four-lamps"
        instruction = "switch on lamps " + ", ".join(map(str, self.order)) + " in this order"
        return (f"You are in a dark room with {len(self.order)} lamps. Your task is to: {instruction}.",
                TaskInfo(task_id, SPLIT_OF[task_id], family, instruction))

    def _step(self, action: str) -> StepOutcome:
        # `action` is a string of at most MAX_TEXT_LENGTH characters; anything may be in it.
        if action == "look":
            return StepOutcome(f"Lamps on: {', '.join(map(str, self.lit)) or 'none'}.")
        if action not in self._admissible_actions():
            return StepOutcome("Nothing happens.", invalid_action=True)
        lamp = int(action.rsplit(" ", 1)[1])
        if lamp != self.order[len(self.lit)]:
            self.lit = []
            return StepOutcome(f"Lamp {lamp} flickers and every lamp goes out.")
        self.lit.append(lamp)
        won = self._won()
        return StepOutcome(f"Lamp {lamp} is on.", reward=float(won), terminated=won)

    def _won(self) -> bool:
        return bool(self.order) and self.lit == self.order

    def _score(self) -> float:
        return len(self.lit) / len(self.order) if self.order else 0.0

    def _admissible_actions(self) -> list[str]:
        return ["look", *(f"switch on lamp {n}" for n in sorted(self.order) if n not in self.lit)]

    def _expert_action(self) -> str | None:
        # Overriding this hook is what gives the env an expert (`--agent expert`, SFT data).
        return None if self._won() else f"switch on lamp {self.order[len(self.lit)]}"
