"""The three files of a game folder, as ALFWorld's loaders read them.

* ``initial_state.pddl`` — the PDDL problem (:mod:`.pddl`).
* ``traj_data.json`` — ``task_id``, ``task_type``, ``pddl_params`` (read by
  ``add_task_to_grammar`` and the handcoded expert), ``scene``, one generated annotation, empty
  ``plan`` and ``images``.
* ``game.tw-pddl`` — JSON ``{pddl_domain, grammar, pddl_problem, solvable, walkthrough}``: the
  wheel's ``alfred.pddl``; ``alfred.twl2`` with the goal text in place of ``UNKNOWN GOAL`` via
  alfworld's own ``add_task_to_grammar``; the problem; and the expert's result.

The goal's wording is drawn with the global ``random`` (alfworld calls ``random.choice``), so it
is seeded per candidate first and the caller's global state is restored afterwards.
"""

from __future__ import annotations

import functools
import json
import random
import re
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from .candidates import Candidate
from .pddl import problem_pddl

GAME_FILE = "game.tw-pddl"
TRAJ_FILE = "traj_data.json"
PROBLEM_FILE = "initial_state.pddl"
_TASK_LINE = re.compile(r'"rhs": "Your task is to: (.*)\."')


@functools.lru_cache(maxsize=None)
def logic_text(name: str) -> str:
    """``alfred.pddl`` or ``alfred.twl2`` from the wheel's ``alfworld/data``."""
    spec = find_spec("alfworld")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("alfworld==0.4.2 is not installed")
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    return (data / name).read_text(encoding="utf-8")


def grammar_with_goal(traj_data: dict[str, Any], wording_seed: int) -> str:
    """``alfred.twl2`` with the templated goal, exactly as ``alfworld-generate`` would write it."""
    from alfworld.agents.utils.misc import add_task_to_grammar

    outer = random.getstate()
    random.seed(wording_seed)
    try:
        return add_task_to_grammar(logic_text("alfred.twl2"), traj_data)
    finally:
        random.setstate(outer)


def goal_text(grammar: str) -> str:
    """The goal sentence a grammar announces ("put a clean mug in coffeemachine")."""
    match = _TASK_LINE.search(grammar)
    if match is None:
        raise ValueError("grammar has no task line")
    return match.group(1)


def traj_data(candidate: Candidate, task_desc: str = "") -> dict[str, Any]:
    """The ``traj_data.json`` content of ``candidate``."""
    scene = candidate.scene
    return {
        "task_id": candidate.trial_id,
        "task_type": candidate.task.task_type,
        "pddl_params": candidate.task.pddl_params(),
        "scene": {"floor_plan": f"FloorPlan{scene}", "scene_num": scene,
                  "random_seed": candidate.trial_number},
        "turk_annotations": {"anns": [{"task_desc": task_desc, "high_descs": [],
                                       "votes": [1, 1, 1], "assignment_id": "generated"}]},
        "plan": {"high_pddl": [], "low_actions": []},
        "images": [],
    }


def write_game(folder: Path, candidate: Candidate, walkthrough: list[str] | None = None) -> Path:
    """Write the three files into ``folder``; the path of ``game.tw-pddl``.

    Without a ``walkthrough`` the game is marked ``solvable: false`` (as before verification).
    """
    folder.mkdir(parents=True, exist_ok=True)
    problem = problem_pddl(candidate.trial_id, candidate.state, candidate.task)
    grammar = grammar_with_goal(traj_data(candidate), candidate.wording_seed)
    sentence = goal_text(grammar)
    traj = traj_data(candidate, task_desc=sentence[:1].upper() + sentence[1:] + ".")
    game = {"pddl_domain": logic_text("alfred.pddl"), "grammar": grammar,
            "pddl_problem": problem, "solvable": walkthrough is not None,
            "walkthrough": list(walkthrough or [])}
    (folder / PROBLEM_FILE).write_text(problem, encoding="utf-8")
    (folder / TRAJ_FILE).write_text(json.dumps(traj), encoding="utf-8")
    (folder / GAME_FILE).write_text(json.dumps(game), encoding="utf-8")
    return folder / GAME_FILE
