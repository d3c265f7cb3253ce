"""Offline generator of ALFWorld text games, grounded in the FloorPlans of the alfworld wheel.

``generate_split(root, split)`` writes ``root/json_2.1.1/<train|valid_seen|valid_unseen>/`` in
ALFWorld's official layout (``<task folder>/trial_gen_<scene>_<n>/{initial_state.pddl,
traj_data.json, game.tw-pddl}``), every game verified winnable by the handcoded expert. No THOR,
no downloads. Modules, one concept each:

* :mod:`.scenes` — a FloorPlan's receptacles, locations and object types;
* :mod:`.tasks` — task types and ALFRED's filters on them;
* :mod:`.placement` — the initial placement of objects and the agent;
* :mod:`.pddl` — ``initial_state.pddl`` and the goal;
* :mod:`.splits` — scenes and task-type mixture per split;
* :mod:`.candidates` — candidate ``i`` as a pure function of ``(seed, split, i)``;
* :mod:`.gamefiles` — ``traj_data.json`` and ``game.tw-pddl``;
* :mod:`.build` — parallel verification, deterministic selection, atomic output.
"""

from .build import GENERATOR_VERSION, generate_split
from .splits import DEFAULT_SIZES, SPLIT_DIRS, split_scenes

__all__ = ["DEFAULT_SIZES", "GENERATOR_VERSION", "SPLIT_DIRS", "generate_split", "split_scenes"]
