"""ALFWorld task types and ALFRED's rules for which tasks a scene can host.

Rules (ALFRED's ``generate_trajectories.py`` constraints plus the text engine's needs):

* Task types and their rooms follow ``constants.GOALS_VALID``: look only in living rooms and
  bedrooms, heat/cool only in kitchens, clean in kitchens and bathrooms, pick/pick2 anywhere.
* Clean/heat/cool need their appliance as a reachable receptacle (``SinkBasin`` — the domain's
  ``CleanObject`` accepts nothing else —, ``Microwave``, ``Fridge``), the target must have the
  affordance in ``VAL_ACTION_OBJECTS``, and the parent may not be that appliance.
* pick_two may not use ``CoffeeMachine``, ``ToiletPaperHanger`` or ``HandTowelHolder`` as parent;
  no task uses ``Toaster`` (ALFRED drops it as uninteresting).
* The parent must be able to hold the target (``VAL_RECEPTACLE_OBJECTS``), and the target must
  be able to start somewhere that is neither a parent-type receptacle nor the appliance, so the
  goal is false at reset.
* Look tasks use a ``DeskLamp`` standing on a desk, side table, dresser or shelf; FloorLamps
  lack ``inReceptacle`` in ALFWorld and make the task unsolvable.
* Every target is an ALFRED class name (``Apple``, ``CounterTop``), never a sliced variant.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass

from alfworld.gen import constants

from .scenes import Scene

TASK_TYPES: tuple[str, ...] = (  # in ALFWorld's id order 1..6 (env.task_types)
    "pick_and_place_simple",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_two_obj_and_place",
)

APPLIANCE: dict[str, str] = {
    "pick_clean_then_place_in_recep": "SinkBasin",
    "pick_heat_then_place_in_recep": "Microwave",
    "pick_cool_then_place_in_recep": "Fridge",
}
AFFORDANCE: dict[str, str] = {
    "pick_clean_then_place_in_recep": "Cleanable",
    "pick_heat_then_place_in_recep": "Heatable",
    "pick_cool_then_place_in_recep": "Coolable",
}
INVALID_PARENTS: dict[str, frozenset[str]] = {
    "pick_two_obj_and_place": frozenset({"CoffeeMachine", "ToiletPaperHanger", "HandTowelHolder"}),
    **{task: frozenset({appliance}) for task, appliance in APPLIANCE.items()},
}
NEVER_PARENT = frozenset({"Toaster"})
LAMP = "DeskLamp"
LAMP_RECEPTACLES = ("Desk", "SideTable", "Dresser", "Shelf")
LOOK = "look_at_obj_in_light"
PICK_TWO = "pick_two_obj_and_place"

# Object classes that can be carried: anything some receptacle accepts, minus sliced variants.
PICKUPABLE: frozenset[str] = frozenset(
    set().union(*constants.VAL_RECEPTACLE_OBJECTS.values()) & set(constants.OBJECTS))


@dataclass(frozen=True, order=True)
class Task:
    """One ALFWorld task: ``traj_data.json``'s ``task_type`` and ``pddl_params``."""

    task_type: str
    object_target: str
    parent_target: str = ""
    toggle_target: str = ""
    mrecep_target: str = ""
    object_sliced: bool = False

    def pddl_params(self) -> dict[str, object]:
        params = asdict(self)
        del params["task_type"]
        return params

    def folder_name(self, scene: int) -> str:
        """``<task_type>-<Object>-<MovableRecep|None>-<Parent|Toggle>-<scene>``."""
        last = self.toggle_target if self.task_type == LOOK else self.parent_target
        mrecep = self.mrecep_target or "None"
        return f"{self.task_type}-{self.object_target}-{mrecep}-{last}-{scene}"


def holds(rtype: str, otype: str) -> bool:
    """Whether a receptacle type may contain an object type (``VAL_RECEPTACLE_OBJECTS``)."""
    return otype in constants.VAL_RECEPTACLE_OBJECTS.get(rtype, ())


def placeable_types(scene: Scene) -> list[str]:
    """Carryable object types of the scene that fit at least one of its receptacles, sorted."""
    rtypes = scene.receptacle_types
    return sorted(t for t in scene.object_types & PICKUPABLE if any(holds(r, t) for r in rtypes))


def start_receptacle_types(scene: Scene, otype: str, task: Task) -> list[str]:
    """Receptacle types an instance of ``otype`` may start in, so that the goal is false at reset.

    The task's target never starts in a parent-type receptacle nor in the task's appliance
    (a cool target must not start cold in the fridge, a clean one not in the sink).
    """
    banned: set[str] = set()
    if otype == task.object_target and task.task_type != LOOK:
        banned.add(task.parent_target)
        if task.task_type in APPLIANCE:
            banned.add(APPLIANCE[task.task_type])
    return sorted(r for r in scene.receptacle_types if holds(r, otype) and r not in banned)


def lamp_receptacles(scene: Scene) -> list[str]:
    """Receptacle types of the scene a desk lamp can stand on."""
    return [r for r in LAMP_RECEPTACLES if r in scene.receptacle_types]


def valid_tasks(scene: Scene, task_type: str) -> list[Task]:
    """Every task of ``task_type`` that ``scene`` can host under the rules above, sorted."""
    if scene.room not in constants.GOALS_VALID[task_type]:
        return []
    objects = placeable_types(scene)
    if task_type == LOOK:
        if LAMP not in scene.object_types or not lamp_receptacles(scene):
            return []
        return [Task(task_type, obj, toggle_target=LAMP) for obj in objects]
    appliance = APPLIANCE.get(task_type)
    if appliance and appliance not in scene.receptacle_types:
        return []
    affordance = AFFORDANCE.get(task_type)
    invalid = INVALID_PARENTS.get(task_type, frozenset()) | NEVER_PARENT
    tasks = []
    for obj in objects:
        if affordance and obj not in constants.VAL_ACTION_OBJECTS[affordance]:
            continue
        for parent in sorted(scene.receptacle_types):
            if parent in invalid or parent == obj or not holds(parent, obj):
                continue
            task = Task(task_type, obj, parent_target=parent)
            if start_receptacle_types(scene, obj, task):
                tasks.append(task)
    return tasks


def sample_task(rng: random.Random, scene: Scene, task_type: str) -> Task:
    """A task of ``task_type`` for ``scene``: target uniform over objects, then parent uniform.

    Drawing the object first (not a uniform pair) keeps objects with many possible parents,
    like a mug, from crowding out the rest.
    """
    tasks = valid_tasks(scene, task_type)
    if not tasks:
        raise ValueError(f"FloorPlan{scene.number} cannot host {task_type}")
    target = rng.choice(sorted({t.object_target for t in tasks}))
    return rng.choice([t for t in tasks if t.object_target == target])
