"""Static rooms read from the FloorPlan layouts shipped in the ``alfworld==0.4.2`` wheel.

A :class:`Scene` is everything about a FloorPlan that does not change between games: its room
type, its receptacles (with ids and interaction poses), the object types THOR has in it, and the
reachable floor points left free. Rules:

* Every receptacle in ``FloorPlan<N>-openable.json`` keeps its real THOR id and sits at the
  interaction pose stored there (``[x, z, rotation, horizon]``). Receptacles with the same pose
  share one location, as in real ALFWorld files ("You are facing the shelf 3, and shelf 2").
* Receptacle types that ``-objects.json`` lists but ``-openable.json`` does not (THOR never
  precomputed a pose for them: coffee machine, toaster, stove burners, garbage can, towel
  holders, toilet paper hanger, laundry hamper) get a synthetic THOR-style id at a free
  reachable point of ``-layout.npy``. Their placement depends on the scene number only, so a
  room looks the same in every game, like a real THOR scene.
* Ids are mangled the way ALFWorld's PDDL files spell them (see :func:`mangle`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import random
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import numpy as np

GRID = 0.25  # THOR's navigation step (m); locations are named in grid units

ROOM_RANGES: dict[str, range] = {
    "Kitchen": range(1, 31),
    "LivingRoom": range(201, 231),
    "Bedroom": range(301, 331),
    "Bathroom": range(401, 431),
}

# type -> (count range, height of the object's centre in m, camera horizon at its pose).
# Counts follow real ALFWorld rooms: 4 burners per stove, 1-2 towel holders per bathroom.
SYNTHETIC_RECEPTACLES: dict[str, tuple[tuple[int, int], float, int]] = {
    "CoffeeMachine": ((1, 1), 0.90, 30),
    "Toaster": ((1, 1), 0.90, 30),
    "StoveBurner": ((4, 4), 0.92, 30),
    "GarbageCan": ((1, 1), 0.00, 30),
    "TowelHolder": ((1, 2), 1.10, 0),
    "HandTowelHolder": ((1, 2), 1.60, 0),
    "ToiletPaperHanger": ((1, 1), 0.75, 30),
    "LaundryHamper": ((1, 1), 0.00, 30),
}

_MANGLE = (("-", "_minus_"), ("|", "_bar_"), ("+", "_plus_"), (".", "_dot_"), (",", "_comma_"))


def layouts_dir() -> Path:
    """``alfworld/gen/layouts`` inside the installed wheel (found without importing alfworld)."""
    spec = find_spec("alfworld")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("alfworld==0.4.2 is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / "gen" / "layouts"


def mangle(thor_id: str) -> str:
    """``Sink|-01.90|+00.97|-01.50|SinkBasin`` -> ``Sink_bar__minus_01_dot_90..._bar_SinkBasin``."""
    for char, word in _MANGLE:
        thor_id = thor_id.replace(char, word)
    return thor_id


def demangle(pddl_id: str) -> str:
    """Inverse of :func:`mangle`."""
    for char, word in _MANGLE:
        pddl_id = pddl_id.replace(word, char)
    return pddl_id


def format_coord(value: float) -> str:
    """THOR's id coordinate: sign, two integer digits, two decimals; exact zero has no sign."""
    value = round(value, 2)
    sign = "+" if value > 0 else "-" if value < 0 else ""
    return f"{sign}{abs(value):05.2f}"


def thor_id(obj_type: str, x: float, y: float, z: float) -> str:
    """A THOR object id, e.g. ``Apple|+01.20|+00.95|-02.31``."""
    return "|".join((obj_type, format_coord(x), format_coord(y), format_coord(z)))


def parse_position(thor_object_id: str) -> tuple[float, float, float]:
    """The (x, y, z) written in a THOR id."""
    parts = thor_object_id.split("|")
    return float(parts[1]), float(parts[2]), float(parts[3])


def receptacle_type_of(thor_object_id: str) -> str:
    """ALFRED class of a receptacle id: the basin for sinks/bathtubs, else the id's prefix."""
    parts = thor_object_id.split("|")
    if len(parts) == 5 and parts[4].endswith("Basin"):
        return parts[4]
    return parts[0]


def room_type(scene: int) -> str:
    """Kitchen 1-30, LivingRoom 201-230, Bedroom 301-330, Bathroom 401-430."""
    for name, numbers in ROOM_RANGES.items():
        if scene in numbers:
            return name
    raise ValueError(f"FloorPlan{scene} is in no known room range")


@dataclass(frozen=True, order=True)
class Pose:
    """An agent pose on the navigation grid: metres, degrees (multiple of 90), camera horizon."""

    x: float
    z: float
    rotation: int
    horizon: int

    @property
    def location(self) -> str:
        """PDDL location name: ``loc_bar_<x/0.25>_bar_<z/0.25>_bar_<rot/90>_bar_<horizon>``."""
        parts = (round(self.x / GRID), round(self.z / GRID), round(self.rotation / 90) % 4,
                 int(self.horizon))
        return mangle("loc|" + "|".join(str(p) for p in parts))

    def ahead(self, distance: float) -> tuple[float, float]:
        """The floor point ``distance`` metres in front (THOR: rotation 0 faces +z, 90 faces +x)."""
        angle = math.radians(self.rotation)
        return self.x + distance * math.sin(angle), self.z + distance * math.cos(angle)


@dataclass(frozen=True)
class Receptacle:
    """A static receptacle: THOR id, ALFRED type, centre, and the pose it is used from."""

    thor_id: str
    rtype: str
    position: tuple[float, float, float]
    pose: Pose
    synthetic: bool = False

    @property
    def pddl_id(self) -> str:
        return mangle(self.thor_id)


@dataclass(frozen=True)
class Scene:
    """One FloorPlan, as far as the text engine can see it."""

    number: int
    room: str
    receptacles: tuple[Receptacle, ...]
    object_types: frozenset[str]     # every type listed in -objects.json
    free_points: tuple[tuple[float, float], ...]  # reachable, no receptacle is used from here

    @property
    def receptacle_types(self) -> frozenset[str]:
        return frozenset(r.rtype for r in self.receptacles)

    def receptacles_of(self, rtype: str) -> tuple[Receptacle, ...]:
        return tuple(r for r in self.receptacles if r.rtype == rtype)


def available_scenes() -> list[int]:
    """FloorPlan numbers with all three layout files in the wheel, ascending."""
    root = layouts_dir()
    numbers = []
    for path in root.glob("FloorPlan*-objects.json"):
        number = int(path.name[len("FloorPlan"):-len("-objects.json")])
        if all((root / f"FloorPlan{number}-{s}").exists() for s in ("openable.json", "layout.npy")):
            numbers.append(number)
    return sorted(numbers)


def _scene_rng(number: int) -> random.Random:
    # Per-scene stream, independent of any generation seed: a room is fixed, like THOR's.
    digest = hashlib.sha256(f"seed-gym/alfworld-gen/scene/{number}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _synthetic_receptacles(rtype: str, count: int, points: list[tuple[float, float]],
                           rng: random.Random) -> list[Receptacle]:
    """``count`` receptacles of ``rtype`` used from free points (taken out of ``points``).

    Stove burners come in front/back pairs that share one pose, like THOR's 2x2 stoves.
    """
    _, height, horizon = SYNTHETIC_RECEPTACLES[rtype]
    per_pose = 2 if rtype == "StoveBurner" else 1
    made: list[Receptacle] = []
    while len(made) < count and points:
        x, z = points.pop(rng.randrange(len(points)))
        pose = Pose(x, z, rng.choice((0, 90, 180, 270)), horizon)
        for k in range(min(per_pose, count - len(made))):
            cx, cz = pose.ahead(0.55 + 0.21 * k)
            made.append(Receptacle(thor_id(rtype, cx, height, cz), rtype, (round(cx, 2), height,
                                                                           round(cz, 2)),
                                   pose, synthetic=True))
    return made


@functools.lru_cache(maxsize=None)
def load_scene(number: int) -> Scene:
    """Read FloorPlan ``number`` from the wheel into a :class:`Scene` (cached)."""
    root = layouts_dir()
    openable: dict[str, list[float]] = json.loads(
        (root / f"FloorPlan{number}-openable.json").read_text())
    object_types = frozenset(json.loads((root / f"FloorPlan{number}-objects.json").read_text()))
    layout = np.load(root / f"FloorPlan{number}-layout.npy")

    receptacles = []
    for rid in sorted(openable):
        x, z, rotation, horizon = openable[rid]
        receptacles.append(Receptacle(rid, receptacle_type_of(rid), parse_position(rid),
                                      Pose(float(x), float(z), int(rotation), int(horizon))))

    used = {(r.pose.x, r.pose.z) for r in receptacles}
    points = sorted({(round(float(x), 2), round(float(z), 2)) for x, z in layout} - used)
    present = {r.rtype for r in receptacles}
    rng = _scene_rng(number)
    for rtype, ((low, high), _, _) in SYNTHETIC_RECEPTACLES.items():
        if rtype in object_types and rtype not in present:
            receptacles.extend(_synthetic_receptacles(rtype, rng.randint(low, high), points, rng))

    return Scene(number=number, room=room_type(number), receptacles=tuple(receptacles),
                 object_types=object_types, free_points=tuple(points))
