"""Candidate games: candidate ``i`` of a split is a pure function of ``(seed, split, i)``.

Rules:

* Candidate ``i`` has the task type ``type_schedule(quotas)[i % period]`` and draws everything
  else (room, task, object placement, agent start) from its own RNG, seeded by a hash of
  ``(seed, split, i)``. Nothing depends on other candidates, timing or worker count.
* The room is uniform over the split's FloorPlans that can host the task type.
* Its trial id is ``trial_gen_<scene>_<n>``; ``n`` (also ``scene.random_seed`` in
  ``traj_data.json``) is a six-digit number that is a bijection of ``i`` within a split, so two
  candidates of one split never share a folder.
"""

from __future__ import annotations

import functools
import hashlib
import random
from dataclasses import dataclass

from .placement import GameState, place_objects
from .scenes import load_scene
from .splits import split_scenes
from .tasks import Task, sample_task, valid_tasks

TRIAL_SPACE = 1_000_000
_TRIAL_STRIDE = 738_197  # coprime with TRIAL_SPACE: i -> n is a bijection for i < TRIAL_SPACE


@dataclass(frozen=True)
class Candidate:
    """One game before verification."""

    index: int
    trial_number: int
    task: Task
    state: GameState
    wording_seed: int  # seeds `random` before alfworld picks the goal's wording template

    @property
    def scene(self) -> int:
        return self.state.scene.number

    @property
    def trial_id(self) -> str:
        return f"trial_gen_{self.scene}_{self.trial_number:06d}"

    @property
    def relative_dir(self) -> str:
        """``<task folder>/<trial id>`` inside the split directory."""
        return f"{self.task.folder_name(self.scene)}/{self.trial_id}"


def _digest(*parts: object) -> int:
    text = "/".join(["seed-gym/alfworld-gen", *map(str, parts)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def candidate_rng(seed: int, split: str, index: int) -> random.Random:
    """The private RNG of candidate ``index``."""
    return random.Random(_digest(seed, split, index))


def trial_number(seed: int, split: str, index: int) -> int:
    """Six-digit trial number of candidate ``index``; distinct for distinct indices."""
    if not 0 <= index < TRIAL_SPACE:
        raise ValueError(f"candidate index {index} out of range")
    return (_digest(seed, split, "trial") + index * _TRIAL_STRIDE) % TRIAL_SPACE


@functools.lru_cache(maxsize=None)
def eligible_scenes(split: str, task_type: str) -> tuple[int, ...]:
    """The split's FloorPlans that can host ``task_type``."""
    return tuple(s for s in split_scenes(split) if valid_tasks(load_scene(s), task_type))


def make_candidate(seed: int, split: str, index: int, task_type: str) -> Candidate:
    """Build candidate ``index`` of ``task_type`` (see module rules)."""
    rng = candidate_rng(seed, split, index)
    scenes = eligible_scenes(split, task_type)
    if not scenes:
        raise ValueError(f"no FloorPlan of split {split!r} can host {task_type}")
    scene = load_scene(rng.choice(scenes))
    task = sample_task(rng, scene, task_type)
    state = place_objects(rng, scene, task)
    return Candidate(index=index, trial_number=trial_number(seed, split, index), task=task,
                     state=state, wording_seed=rng.randrange(2**32))
