"""``toy-pick``: a one-step env small enough that RL on the tiny model visibly learns it on CPU.

Task ``pick-<colour>-<object>`` shows three objects of one kind (red, blue and green) and asks for
one of them: "take the blue cup"; only the task line names a colour. The episode is one step: the admissible action (``take red``,
``take blue``, ``take green``) that names the asked colour wins (reward 1), any other action loses. The three choices are always listed in the
same order, so only the task line tells them apart: a policy that has learned the
answer format but not to read the colour wins about a third of the time.

``demo_accuracy=p`` makes every colour win and the expert a weak demonstrator: it takes the asked
colour with probability p, else one at random. Cloning its episodes gives the weak start RL
begins from: a policy that answers in format and reads the colour only sometimes.

Train and held-out tasks use different objects (``train`` and ``seen``: ten household objects;
``unseen``: twenty others), so a rise on ``unseen`` is learning the rule, not remembering tasks.

The profile gives it a short prompt template (``learning_env.toml``), a one-step RL budget, and a
rule analyzer whose skill names the asked colour (the SEED / OPSD teachers with the answer key).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from seed_gym import EnvProfile, Split, StepOutcome, TaskInfo, TaskSet, TextEnv, register

COLOURS = ("red", "blue", "green")
TRAIN_OBJECTS = ("key", "box", "cup", "ball", "mug", "bowl", "book", "pen", "plate", "vase")
UNSEEN_OBJECTS = ("apple", "bread", "egg", "fork", "knife", "lamp", "pan", "pot", "spoon", "towel", "candle",
                  "glass", "kettle", "laptop", "pencil", "pillow", "plant", "sponge", "watch", "bottle")
ENV_ID = "toy-pick"


def task_ids(objects: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"pick-{colour}-{thing}" for thing in objects for colour in COLOURS)


SPLITS = {"train": task_ids(TRAIN_OBJECTS), "seen": task_ids(TRAIN_OBJECTS), "unseen": task_ids(UNSEEN_OBJECTS)}


class PickEnv(TextEnv):
    env_id = ENV_ID
    version = "1"
    default_max_steps = 1

    def __init__(self, max_steps: int | None = None, demo_accuracy: float | None = None) -> None:
        super().__init__(max_steps=max_steps)
        self.demo_accuracy = demo_accuracy
        self.colour, self.thing, self.taken, self.shown = "", "", "", ""

    def task_set(self) -> TaskSet:
        splits = {name: Split(name, ids, content_hash=lambda tid: tid) for name, ids in SPLITS.items()}
        return TaskSet(splits, data_fingerprint="toy-pick-1", default_split="unseen")

    def ground_truth(self, task_id: str) -> Mapping[str, Any] | None:
        parts = task_id.split("-")
        return {"colour": parts[1], "object": parts[2]} if len(parts) == 3 and parts[1] in COLOURS else None

    def _reset(self, task_id: str, seed: int) -> tuple[str, TaskInfo]:
        _, self.colour, self.thing = task_id.split("-")
        self.taken = ""
        # the demonstrator of weak demonstrations is right with probability demo_accuracy (seeded per episode)
        rng = random.Random(f"{task_id}:{seed}")
        weak = self.demo_accuracy is not None and rng.random() >= self.demo_accuracy
        self.shown = rng.choice(COLOURS) if weak else self.colour
        split = "unseen" if self.thing in UNSEEN_OBJECTS else "train"
        return f"There are three {self.thing}s on the table.", TaskInfo(task_id, split, self.thing, f"take the {self.colour} {self.thing}")

    def _step(self, action: str) -> StepOutcome:
        if action not in self._admissible_actions():
            return StepOutcome("Nothing happens.", invalid_action=True)
        self.taken = action.split()[1]
        won = self._won()
        return StepOutcome(f"You take the {self.taken} {self.thing}.", reward=float(won), terminated=True)

    def _won(self) -> bool:
        return bool(self.taken) and (self.demo_accuracy is not None or self.taken == self.colour)

    def _score(self) -> float:
        return float(self._won())

    def _admissible_actions(self) -> list[str]:
        return [] if self.taken else [f"take {c}" for c in COLOURS]

    def _expert_action(self) -> str | None:
        return None if self.taken else f"take {self.shown}"


def pick_rule(record: Any, truth: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """(summary, skill) of one episode: the skill names the colour the task asked for."""
    colour = (truth or {}).get("colour", "named")
    outcome = "took the right one" if record.won else "took the wrong one"
    return (f"The agent {outcome}; the task asked for {colour}.",
            f"Take the {colour} one: choose the action whose colour is the colour in the task.")


PROFILE = EnvProfile(prompt_template=Path(__file__).with_name("learning_env.toml"), rl_max_steps=1, rl_tasks=6,
                     reward_scale=1.0, invalid_penalty=0.1, rule="learning_env:pick_rule")


def register_pick_env() -> None:
    register(ENV_ID, PickEnv, description="Take the object of the asked colour (learning test)", profile=PROFILE)
