"""``alfworld``: ALFWorld text games on the real ALFWorld/TextWorld engine, as a TextEnv.

* Observation: the engine's text, unchanged (reset: the welcome text, the room and the task).
* Action: one command. It is normalised (lower case, single spaces) and must be one of
  ``info["admissible_actions"]`` (the engine's admissible commands); anything else — empty, junk,
  100 KB, unicode, control characters — gets ``Nothing happens.`` with ``invalid_action=True``,
  exactly what the engine says for a command it cannot apply, and never reaches the engine.
* Reward 1.0 on the step that wins; ``terminated`` = won; ``score`` = won as 0/1;
  ``family`` = the task type; ``max_steps`` = 50 by default.
* ``expert=True`` fills ``info["expert_action"]`` with the fixed handcoded expert's next action.
* ``engine="fast"`` (default) or ``"stock"``: the same engine with or without the caches of
  :mod:`seed_gym.envs.alfworld.fast`; ``version``/``describe()`` name the one that played.
* Determinism: a game always plays the same way. The engine's RNG (used only by the expert's
  fallbacks) starts from the same state for every episode of a game, so the expert replays the
  walkthrough the generator verified; the reset ``seed`` seeds only ``np_random``.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from seed_gym.core import MissingDataError, StepOutcome, TaskInfo, TextEnv
from seed_gym.envs.alfworld import data as alf_data
from seed_gym.envs.alfworld.engine import (ENGINE_VERSION, OwnRandom, engine_version, expert_next_action,
                                           make_engine, start_game)
from seed_gym.tasks import TaskSet

_TASK_RE = re.compile(r"Your task is to:\s*(.+?)\s*$", re.S)


def normalize_command(action: str) -> str:
    return " ".join(action.lower().split())


class ALFWorldEnv(TextEnv):
    env_id: ClassVar[str] = "alfworld"
    version: ClassVar[str] = ENGINE_VERSION
    default_max_steps: ClassVar[int] = 50

    def __init__(self, *, data: str | None = None, seed: int = 0, sizes: dict[str, int] | None = None,
                 expert: bool = False, max_steps: int | None = None, split: str = "train",
                 gen_workers: int | None = None, render_mode: str | None = None, engine: str = "fast") -> None:
        """``data``: ``None``/``"generated"`` (generated games, from ``seed`` and ``sizes``),
        ``"official"`` (``$ALFWORLD_DATA``) or a path to a ``json_2.1.1`` tree. ``split`` is where
        ``reset()`` without a task id draws from. ``engine``: ``"fast"`` (the default; cached
        parsing and translation, proven identical by ``seed-gym data alfworld --check-engine``)
        or ``"stock"`` (the untouched stack); the run's ``env_version`` says which played."""
        super().__init__(max_steps=max_steps, render_mode=render_mode)
        self.engine = str(engine)
        self.version = engine_version(self.engine)  # recorded in the run manifest
        if self.engine == "fast":
            from seed_gym.envs.alfworld.fast import check_versions

            check_versions()
        self.source = alf_data.game_source(data, seed=seed, sizes=sizes, workers=gen_workers)
        self.expert = bool(expert)
        self.default_split = split
        self._engine: Any = None
        self._task_set: TaskSet | None = None
        self._loaded_game: str | None = None
        self._state: Any = None
        self._rng = OwnRandom(0)

    # -- data ----------------------------------------------------------------------------
    def task_set(self) -> TaskSet:
        # Built once per env: its splits are resolved (scanned, or generated) on first use only,
        # and every reset checks its task id against them.
        if self._task_set is None:
            found = self.source.task_set()
            self._task_set = TaskSet(found.splits, found.data_fingerprint, default_split=self.default_split,
                                     aliases=found.aliases)
        return self._task_set

    def _has_task(self, task_id: str) -> bool:
        # An id's first folder names its split; never build the other (lazily generated) splits.
        split = {folder: name for name, folder in alf_data.SPLIT_DIRS.items()}.get(task_id.split("/", 1)[0])
        try:
            return split is not None and task_id in self.task_set().split(split)
        except MissingDataError:  # the tree has no folder for that split: no such task
            return False

    def describe(self) -> dict[str, Any]:
        return {"source": self.source.describe(), "engine": self.version, "expert": self.expert}

    # -- episode -------------------------------------------------------------------------
    def _reset(self, task_id: str, seed: int) -> tuple[str, TaskInfo]:
        game = str(alf_data.game_file(self.source.root, task_id))
        if self._engine is None:
            self._engine = make_engine(expert=self.expert, engine=self.engine)
        # Loading parses the PDDL; a reset alone rebuilds the state, so groups skip the load.
        self._state = start_game(self._engine, game, self._rng, load=game != self._loaded_game)
        self._loaded_game = game
        observation = self._state["feedback"]
        match = _TASK_RE.search(observation)
        split_dir = task_id.split("/", 1)[0]
        split = next((k for k, v in alf_data.SPLIT_DIRS.items() if v == split_dir), split_dir)
        task = TaskInfo(id=task_id, split=split, family=alf_data.task_type(self.source.root, task_id),
                        instruction=match.group(1) if match else "")
        return observation, task

    def _step(self, action: str) -> StepOutcome:
        command = normalize_command(action)
        if command not in self._state["admissible_commands"]:
            return StepOutcome(self.invalid_action_message, invalid_action=True)
        previous = self._state
        try:
            with self._rng.active():
                self._state, _, _ = self._engine.step(command)
        except Exception:
            # The expert's bookkeeping can fail when the agent strays from its plan; the engine
            # has already stepped (its state moved on), so keep playing without an expert hint.
            if not self.expert or self._engine.state is previous:
                raise
            self._state = self._engine.state
            self._state["extra.expert_plan"] = []
        won = bool(self._state["won"])
        return StepOutcome(self._state["feedback"], reward=1.0 if won else 0.0, terminated=won)

    # -- queries -------------------------------------------------------------------------
    def _won(self) -> bool:
        return bool(self._state["won"])

    def _score(self) -> float:
        return 1.0 if self._state["won"] else 0.0

    def _admissible_actions(self) -> list[str]:
        return list(self._state["admissible_commands"])

    def _expert_action(self) -> str | None:
        if not self.expert:
            return None
        action = expert_next_action(self._state)
        return action if action in self._state["admissible_commands"] else None

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None
            self._loaded_game = None
