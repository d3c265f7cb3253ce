"""The TextEnv contract: a gymnasium env whose observations and actions are strings.

Rules every env follows (tests in ``tests/unit/test_core.py`` hold them to it):

* ``reset(seed=None, options={"task_id": ...})`` returns ``(observation, info)``; ``step(action)``
  returns the gymnasium 5-tuple ``(observation, reward, terminated, truncated, info)``.
* ``terminated`` means the task ended (won, bought, answered); ``truncated`` means the step budget
  ``max_steps`` ran out. They are never both true.
* ``info`` always carries the :data:`INFO_KEYS`: ``task``, ``admissible_actions``, ``won``,
  ``score``, ``invalid_action``, ``expert_action``.
* A bad action never raises: any string (empty, 100 KB, unicode, control characters) or even a
  non-string gets an explanatory observation and ``invalid_action=True``, and the env stays usable.
  A string longer than the action space's :data:`MAX_TEXT_LENGTH` is invalid without reaching
  ``_step``; up to that length an env must answer in time linear in the action's length.
* Misuse raises a typed :class:`SeedGymError`: stepping before reset or after the episode ended,
  an unknown task id (the base class accepts exactly the ids its splits list), an unknown
  ``reset`` option key, missing data (:class:`MissingDataError`), unusable data
  (:class:`DataError`, raised when the data loads, not during an episode).
* ``info["expert_action"]`` is filled by envs that override ``_expert_action``
  (:meth:`TextEnv.has_expert`); an agent that needs it on an env without one is refused up front.
* Heavy read-only state (a catalogue, a corpus, a search index) that every instance built with
  the same arguments would load again may be offered through :meth:`TextEnv.shared_state`; an env
  pool then builds it once per machine and installs it (:class:`SharedState`) in each worker
  before the worker builds its envs (:mod:`seed_gym.raypool`).

Subclasses implement :meth:`TextEnv._reset` and :meth:`TextEnv._step`; this base class does the
bookkeeping (step budget, action coercion, the info keys) once, for every env.
"""

from __future__ import annotations

import difflib
import string
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from seed_gym.tasks import TaskSet

INFO_KEYS = ("task", "admissible_actions", "won", "score", "invalid_action", "expert_action")

#: Observations and actions are natural language: printable ASCII plus whitespace, and the
#: space's ``contains`` is never used to reject an action (bad actions are handled by ``step``).
TEXT_CHARSET = frozenset(string.printable)
MAX_TEXT_LENGTH = 1 << 20


class SeedGymError(Exception):
    """Base class of the errors seed-gym raises on misuse."""


class EnvMisuseError(SeedGymError, RuntimeError):
    """The env was used out of order (step before reset, step after the episode ended)."""


class UnknownTaskError(SeedGymError, KeyError):
    """A task id that is not in the env's data."""

    def __str__(self) -> str:  # KeyError would print the repr of the message
        return str(self.args[0]) if self.args else "unknown task"


class MissingDataError(SeedGymError, FileNotFoundError):
    """The data an env needs is not where it was told to look."""


class DataError(SeedGymError):
    """The data an env was pointed at is there but unusable: empty, cut short, not UTF-8, not the
    expected shape, a record without a required field. Raised when the data *loads* (never in the
    middle of an episode, where it would only become an error record), naming the file, the line
    where there is one, and the fix."""

    def __init__(self, path: Any, problem: str, fix: str, line: int | None = None) -> None:
        super().__init__(str(path), problem, fix, line)  # all in args, so it pickles
        self.path, self.problem, self.fix, self.line = str(path), problem, fix, line

    def __str__(self) -> str:
        where = f"{self.path}, line {self.line}" if self.line else self.path
        return f"bad data in {where}: {self.problem}; to fix: {self.fix}"


@dataclass(frozen=True)
class TaskInfo:
    """What ``info["task"]`` holds: enough to group, score and report an episode."""

    id: str
    split: str
    family: str
    instruction: str

    def as_dict(self) -> dict[str, str]:
        # Spelled out: every step's info carries it, and dataclasses.asdict deep-copies (a sixth
        # of a WebShop step's time).
        return {"id": self.id, "split": self.split, "family": self.family, "instruction": self.instruction}


@dataclass
class StepOutcome:
    """What a subclass's ``_step`` returns; the base class turns it into the 5-tuple."""

    observation: str
    reward: float = 0.0
    terminated: bool = False
    invalid_action: bool = False
    extra_info: dict[str, Any] | None = None


@runtime_checkable
class SharedState(Protocol):
    """Read-only state one env instance loaded that other instances may use instead of loading
    their own (what :meth:`TextEnv.shared_state` returns). It must pickle; it is never mutated
    after it is returned (an object store may hand its arrays out read-only)."""

    def install(self) -> None:
        """Make envs built after this call in this process, with the arguments this state was
        loaded for, use this object instead of loading their own."""


class TextEnv(gym.Env[str, str]):
    """Base class of every seed-gym environment.

    Subclasses set :attr:`env_id` and :attr:`version`, expose their splits through
    :meth:`task_set`, and implement ``_reset`` / ``_step`` plus the ``_won``, ``_score``,
    ``_admissible_actions`` and ``_expert_action`` queries on their current state.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"]}
    #: The keys ``reset(options=...)`` accepts; a subclass that reads more adds them here.
    reset_options: ClassVar[frozenset[str]] = frozenset({"task_id"})
    env_id: ClassVar[str] = "text-env"
    version: ClassVar[str] = "0"
    default_max_steps: ClassVar[int] = 50
    invalid_action_message: ClassVar[str] = "Nothing happens."

    observation_space = spaces.Text(max_length=MAX_TEXT_LENGTH, charset=TEXT_CHARSET)
    action_space = spaces.Text(max_length=MAX_TEXT_LENGTH, min_length=0, charset=TEXT_CHARSET)

    def __init__(self, *, max_steps: int | None = None, render_mode: str | None = None) -> None:
        self.max_steps = int(max_steps or self.default_max_steps)
        if self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.render_mode = render_mode
        self._task: TaskInfo | None = None
        self._steps = 0
        self._done = True
        self._last_observation = ""

    # -- what subclasses implement -------------------------------------------------------
    @abstractmethod
    def task_set(self) -> TaskSet:
        """The env's named splits, as explicit ordered task-id lists with fingerprints."""

    @abstractmethod
    def _reset(self, task_id: str, seed: int) -> tuple[str, TaskInfo]:
        """Start ``task_id``; return the first observation and the task's description."""

    @abstractmethod
    def _step(self, action: str) -> StepOutcome:
        """Apply a (string) action. Invalid actions return ``invalid_action=True``."""

    @abstractmethod
    def _won(self) -> bool: ...

    @abstractmethod
    def _score(self) -> float: ...

    def _admissible_actions(self) -> list[str] | None:
        return None

    def _expert_action(self) -> str | None:
        """The expert's next action, or None. An env whose expert is costly may take an
        ``expert: bool`` constructor keyword; the harness passes ``expert=True`` only to such envs
        and only when an agent reads ``info["expert_action"]`` (see :meth:`has_expert`)."""
        return None

    @classmethod
    def has_expert(cls) -> bool:
        """Whether the env can fill ``info["expert_action"]``: it overrides :meth:`_expert_action`."""
        return cls._expert_action is not TextEnv._expert_action

    def ground_truth(self, task_id: str) -> Mapping[str, Any] | None:
        """What a rule analyzer may know of a task beyond its record (the answer key), or None.

        Only training's teachers read it (OPSD's ground-truth skills, SEED's rule analyzer); agents
        never see it. Envs document their keys; an unknown task id gives None, never an error."""
        return None

    def shared_state(self) -> SharedState | None:
        """This env's heavy read-only state, fully loaded, for other instances to share; None
        (the default): nothing worth sharing. See :class:`SharedState`."""
        return None

    @classmethod
    def shares_state(cls) -> bool:
        """Whether the env offers a :meth:`shared_state` (it overrides it)."""
        return cls.shared_state is not TextEnv.shared_state

    def data_fingerprint(self) -> str:
        """A hash of the env's data as a whole (which game files, catalog, corpus)."""
        return self.task_set().data_fingerprint

    # -- the gymnasium API, implemented once ---------------------------------------------
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
            raise EnvMisuseError(f"{self.env_id}: reset(seed=...) takes a non-negative integer or None, got {seed!r}")
        if options is not None and not isinstance(options, Mapping):
            raise EnvMisuseError(f"{self.env_id}: reset(options=...) takes a dict such as {{'task_id': ...}} or None, "
                                 f"got {type(options).__name__}")
        super().reset(seed=None if seed is None else int(seed))
        options = dict(options or {})
        unknown = sorted(map(str, set(options) - self.reset_options))
        if unknown:
            accepted = ", ".join(sorted(self.reset_options))
            hints = "".join(f" ({key!r}: did you mean {close[0]!r}?)" for key in unknown
                            if (close := difflib.get_close_matches(key, self.reset_options, n=1, cutoff=0.5)))
            raise EnvMisuseError(f"{self.env_id}: reset(options=...) got unknown key(s) "
                                 f"{', '.join(map(repr, unknown))}{hints}; it accepts {accepted}")
        task_id = options.get("task_id")
        if task_id is None:
            task_id = self._default_task_id()
        else:
            self._check_task_id(task_id)
        task_seed = int(seed) if seed is not None else 0
        observation, self._task = self._reset(str(task_id), task_seed)
        self._steps, self._done = 0, False
        self._last_observation = observation
        return observation, self._info(invalid_action=False)

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._task is None:
            raise EnvMisuseError(f"{self.env_id}: step() called before reset()")
        if self._done:
            raise EnvMisuseError(f"{self.env_id}: step() called after the episode ended; call reset()")
        self._steps += 1
        if isinstance(action, str) and len(action) <= MAX_TEXT_LENGTH:
            outcome = self._step(action)
        else:
            outcome = StepOutcome(self.invalid_action_message, invalid_action=True)
        terminated = bool(outcome.terminated)
        truncated = not terminated and self._steps >= self.max_steps
        self._done = terminated or truncated
        self._last_observation = outcome.observation
        info = self._info(invalid_action=outcome.invalid_action)
        if outcome.extra_info:
            info.update(outcome.extra_info)
        return outcome.observation, float(outcome.reward), terminated, truncated, info

    def render(self) -> str | None:
        return self._last_observation if self.render_mode == "ansi" else None

    # -- helpers ---------------------------------------------------------------------------
    @property
    def current_task(self) -> TaskInfo | None:
        return self._task

    @property
    def elapsed_steps(self) -> int:
        return self._steps

    def _check_task_id(self, task_id: Any) -> None:
        """A task id must be one of the ids the env's splits list, exactly (no aliases, no
        padding): one canonical id per task, checked here so no env has to."""
        if not isinstance(task_id, str) or not self._has_task(task_id):
            raise UnknownTaskError(f"{self.env_id}: unknown task id {task_id!r}; task ids are the ids "
                                   f"its splits list (see env.task_set())")

    def _has_task(self, task_id: str) -> bool:
        """Whether some split lists ``task_id``. An env whose splits are built lazily (generated
        on first use) overrides this to look only in the split the id can belong to."""
        return any(task_id in split for split in self.task_set().splits.values())

    def _default_task_id(self) -> str:
        """Without a task id, reset draws one from the first split, using the env's RNG."""
        task_set = self.task_set()
        ids = task_set.split(task_set.default_split).task_ids
        if not ids:
            raise MissingDataError(f"{self.env_id}: split {task_set.default_split!r} is empty")
        return ids[int(self.np_random.integers(len(ids)))]

    def _info(self, *, invalid_action: bool) -> dict[str, Any]:
        assert self._task is not None
        return {
            "task": self._task.as_dict(),
            "admissible_actions": self._admissible_actions(),
            "won": bool(self._won()),
            "score": float(self._score()),
            "invalid_action": bool(invalid_action),
            "expert_action": self._expert_action(),
        }
