"""The initial state of one game: which object instances lie in which receptacle, and the agent.

Rules (after ALFRED's scene sampling in ``generate_trajectories.py``):

* Only object types listed in the FloorPlan's ``-objects.json`` appear (THOR can only duplicate
  what a scene has), and only in receptacles that can hold them (``VAL_RECEPTACLE_OBJECTS``).
* The task target gets 1-4 instances (2-4 for pick_two; ``PICKUP_REPEAT_MAX``), every other
  placeable type 1-3 (``MAX_NUM_OF_OBJ_INSTANCES``), each in a random valid receptacle.
* The target never starts where the goal would already hold (see
  :func:`tasks.start_receptacle_types`).
* A scene with a desk lamp gets one, standing on a desk, side table, dresser or shelf.
* Each instance gets a THOR id at a point on its receptacle; it is seen from that receptacle's
  location. The agent starts at a free reachable point, facing a random way, horizon 30.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .scenes import Pose, Receptacle, Scene, thor_id
from .tasks import LAMP, PICK_TWO, Task, lamp_receptacles, placeable_types, start_receptacle_types

PICKUP_REPEAT_MAX = 4      # ALFRED constants.PICKUP_REPEAT_MAX
MAX_NUM_OF_OBJ_INSTANCES = 3  # ALFRED constants.MAX_NUM_OF_OBJ_INSTANCES
START_HORIZON = 30


@dataclass(frozen=True)
class PlacedObject:
    """One object instance: THOR id, ALFRED class, and the receptacle it starts in."""

    thor_id: str
    otype: str
    receptacle: Receptacle


@dataclass(frozen=True)
class GameState:
    """Everything ``initial_state.pddl`` describes besides the static room."""

    scene: Scene
    objects: tuple[PlacedObject, ...]
    agent: Pose


def instance_count(rng: random.Random, otype: str, task: Task) -> int:
    """How many instances of ``otype`` to place (see module rules)."""
    if otype == task.object_target:
        return rng.randint(2 if task.task_type == PICK_TWO else 1, PICKUP_REPEAT_MAX)
    return rng.randint(1, MAX_NUM_OF_OBJ_INSTANCES)


def _instance_id(rng: random.Random, otype: str, receptacle: Receptacle, taken: set[str]) -> str:
    """A fresh THOR id a little above and around the receptacle's centre."""
    x, y, z = receptacle.position
    while True:
        candidate = thor_id(otype, x + rng.uniform(-0.3, 0.3), y + rng.uniform(0.02, 0.2),
                            z + rng.uniform(-0.3, 0.3))
        if candidate not in taken:
            taken.add(candidate)
            return candidate


def place_objects(rng: random.Random, scene: Scene, task: Task) -> GameState:
    """Sample the initial state of a game for ``task`` in ``scene``."""
    taken = {r.thor_id for r in scene.receptacles}
    objects: list[PlacedObject] = []

    def put(otype: str, rtypes: list[str]) -> None:
        choices = [r for r in scene.receptacles if r.rtype in rtypes]
        receptacle = rng.choice(choices)
        objects.append(PlacedObject(_instance_id(rng, otype, receptacle, taken), otype, receptacle))

    for otype in placeable_types(scene):
        rtypes = start_receptacle_types(scene, otype, task)
        if not rtypes:  # cannot happen for a task from valid_tasks; skip rather than crash
            continue
        for _ in range(instance_count(rng, otype, task)):
            put(otype, rtypes)

    if LAMP in scene.object_types and lamp_receptacles(scene):
        put(LAMP, lamp_receptacles(scene))

    if scene.free_points:
        x, z = rng.choice(scene.free_points)
    else:  # no free floor left: stand where the first receptacle is used from
        x, z = scene.receptacles[0].pose.x, scene.receptacles[0].pose.z
    agent = Pose(x, z, rng.choice((0, 90, 180, 270)), START_HORIZON)
    return GameState(scene=scene, objects=tuple(objects), agent=agent)
