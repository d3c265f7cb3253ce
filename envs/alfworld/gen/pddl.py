"""``initial_state.pddl``: the PDDL problem of one game, in the layout of ALFWorld's real files.

Structure (checked against the 582 files of ALFWorld's valid splits):

* header ``(define (problem plan_<trial_id>)`` ``(:domain alfred)``;
* ``:objects``: ``agent1 - agent``; the 79 ALFRED class names ``- object`` and their ``<Class>Type
  - otype``; the 30 static receptacle types ``<Recep>Type - rtype``; the instances (mangled THOR
  ids) ``- object`` / ``- receptacle``; every location used ``- location``;
* ``:init`` always: ``receptacleType``, ``objectType``, ``canContain RType OType`` (``PutObject``
  needs it), ``pickupable`` (``PickupObject`` needs it; not the lamp), ``atLocation agent1``,
  ``inReceptacle``, ``receptacleAtLocation``, ``objectAtLocation``; as applicable: ``openable``
  (fridge, cabinet, microwave, drawer, safe), ``isReceptacleObject`` (bowl, box, cup, mug, pan,
  plate, pot), ``cleanable`` / ``heatable`` / ``coolable`` / ``toggleable`` / ``sliceable`` (from
  ``VAL_ACTION_OBJECTS``), ``isCool`` for what starts in a fridge;
* never ``isHot``, ``isClean``, ``isToggled``, ``opened``, distances, costs or ``:metric``;
* the goal is ``gdict[task_type]['pddl']`` with ``#`` -> ``-`` and the type names filled in; it
  ends with the ``)`` that closes ``(define``.
"""

from __future__ import annotations

from alfworld.gen import constants, goal_library

from .placement import GameState
from .scenes import mangle
from .tasks import Task, holds

# The 79 class-name constants every real file declares: all ALFRED objects that are not static
# receptacles (movable receptacles like Mug count as objects), in constants.OBJECTS order.
STATIC_RECEPTACLE_TYPES: tuple[str, ...] = tuple(
    sorted(set(constants.RECEPTACLES) - set(constants.MOVABLE_RECEPTACLES)))
CLASS_CONSTANTS: tuple[str, ...] = tuple(
    o for o in constants.OBJECTS
    if o not in constants.RECEPTACLES or o in constants.MOVABLE_RECEPTACLES_SET)

OPENABLE_RECEPTACLES = frozenset(constants.OPENABLE_CLASS_LIST) & set(STATIC_RECEPTACLE_TYPES)
AFFORDANCE_PREDICATES = (("cleanable", "Cleanable"), ("heatable", "Heatable"),
                         ("coolable", "Coolable"), ("toggleable", "Toggleable"),
                         ("sliceable", "Sliceable"))
INDENT = " " * 8


def goal_pddl(task: Task) -> str:
    """The ``(:goal ...)`` block of ``task`` followed by the ``)`` closing ``(define``."""
    template = goal_library.gdict[task.task_type + ("_slice" if task.object_sliced else "")]
    return template["pddl"].replace("#", "-").format(
        obj=task.object_target, recep=task.parent_target, toggle=task.toggle_target,
        mrecep=task.mrecep_target)


def init_facts(state: GameState) -> list[str]:
    """The ``:init`` facts of ``state``, grouped by predicate in the real files' order."""
    receptacles = sorted(state.scene.receptacles, key=lambda r: r.pddl_id)
    objects = sorted(state.objects, key=lambda o: o.thor_id)
    oid = {o.thor_id: mangle(o.thor_id) for o in objects}
    facts: list[str] = []
    facts += [f"(receptacleType {r.pddl_id} {r.rtype}Type)" for r in receptacles]
    facts += [f"(objectType {oid[o.thor_id]} {o.otype}Type)" for o in objects]
    rtypes = sorted({r.rtype for r in receptacles})
    otypes = sorted({o.otype for o in objects})
    facts += [f"(canContain {r}Type {o}Type)" for r in rtypes for o in otypes if holds(r, o)]
    facts += [f"(pickupable {oid[o.thor_id]})" for o in objects
              if o.otype not in constants.VAL_ACTION_OBJECTS["Toggleable"]]
    facts += [f"(isReceptacleObject {oid[o.thor_id]})" for o in objects
              if o.otype in constants.MOVABLE_RECEPTACLES_SET]
    facts += [f"(openable {r.pddl_id})" for r in receptacles if r.rtype in OPENABLE_RECEPTACLES]
    facts.append(f"(atLocation agent1 {state.agent.location})")
    for predicate, affordance in AFFORDANCE_PREDICATES:
        facts += [f"({predicate} {oid[o.thor_id]})" for o in objects
                  if o.otype in constants.VAL_ACTION_OBJECTS[affordance]]
    facts += [f"(isCool {oid[o.thor_id]})" for o in objects if o.receptacle.rtype == "Fridge"]
    facts += [f"(inReceptacle {oid[o.thor_id]} {o.receptacle.pddl_id})" for o in objects]
    facts += [f"(receptacleAtLocation {r.pddl_id} {r.pose.location})" for r in receptacles]
    facts += [f"(objectAtLocation {oid[o.thor_id]} {o.receptacle.pose.location})"
              for o in objects]
    return facts


def locations(state: GameState) -> list[str]:
    """Every location named in the problem: receptacle poses and the agent's start, sorted."""
    names = {r.pose.location for r in state.scene.receptacles} | {state.agent.location}
    return sorted(names)


def problem_pddl(trial_id: str, state: GameState, task: Task) -> str:
    """The full text of ``initial_state.pddl`` (also ``game.tw-pddl``'s ``pddl_problem``)."""
    declared = ["agent1 - agent"]
    declared += [f"{c} - object" for c in CLASS_CONSTANTS]
    declared += [f"{c}Type - otype" for c in CLASS_CONSTANTS]
    declared += [f"{r}Type - rtype" for r in STATIC_RECEPTACLE_TYPES]
    declared += [f"{mangle(i)} - object" for i in sorted(o.thor_id for o in state.objects)]
    declared += [f"{r} - receptacle" for r in sorted(r.pddl_id for r in state.scene.receptacles)]
    declared += [f"{loc} - location" for loc in locations(state)]
    lines = [f"(define (problem plan_{trial_id})", "(:domain alfred)", "(:objects"]
    lines += [INDENT + d for d in declared]
    lines += [INDENT + ")", "", "(:init"]
    lines += [INDENT + fact for fact in init_facts(state)]
    lines += [INDENT + ")", ""]
    return "\n".join(lines) + goal_pddl(task)
