"""Splits: which FloorPlans each split draws from, and its mixture of task types.

Rules:

* ``unseen`` holds out rooms that ``train`` never uses, like ALFWorld's ``valid_unseen``:
  ALFWorld's own unseen FloorPlans 10, 219, 308, 424 plus one more of each room type (kitchen
  20, living room 205, bedroom 316, bathroom 415), so every task type, look included (219 has
  only a floor lamp), has more than one unseen room.
* ``train`` and ``seen`` use every other FloorPlan in the wheel; ``seen`` differs from ``train``
  only by its seed stream, so its games are new games in known rooms.
* Task-type counts are apportioned from ALFWorld's own split counts (largest remainder), so the
  default sizes reproduce them exactly (``valid_seen`` 35/13/27/16/25/24, ``valid_unseen``
  24/18/31/23/21/17, train 790/308/650/459/533/813 for pick/look/clean/heat/cool/pick2). From
  size 6 on, every task type gets at least one game.
"""

from __future__ import annotations

from .scenes import available_scenes
from .tasks import TASK_TYPES

SPLIT_DIRS = {"train": "train", "seen": "valid_seen", "unseen": "valid_unseen"}
DEFAULT_SIZES = {"train": 2420, "seen": 140, "unseen": 134}

ALFWORLD_UNSEEN_SCENES = (10, 219, 308, 424)
UNSEEN_SCENES = tuple(sorted(ALFWORLD_UNSEEN_SCENES + (20, 205, 316, 415)))

# ALFWorld's counts per task type, in TASK_TYPES order.
TASK_MIX: dict[str, tuple[int, ...]] = {
    "train": (790, 308, 650, 459, 533, 813),
    "seen": (35, 13, 27, 16, 25, 24),
    "unseen": (24, 18, 31, 23, 21, 17),
}


def check_split(split: str) -> None:
    if split not in SPLIT_DIRS:
        raise ValueError(f"unknown split {split!r}; expected one of {sorted(SPLIT_DIRS)}")


def split_scenes(split: str) -> list[int]:
    """FloorPlan numbers a split draws from (only FloorPlans present in the wheel)."""
    check_split(split)
    scenes = available_scenes()
    if split == "unseen":
        return [s for s in scenes if s in UNSEEN_SCENES]
    return [s for s in scenes if s not in UNSEEN_SCENES]


def task_quotas(split: str, size: int) -> dict[str, int]:
    """How many games of each task type a split of ``size`` games holds."""
    check_split(split)
    weights = TASK_MIX[split]
    total = sum(weights)
    exact = [size * w / total for w in weights]
    counts = [int(e) for e in exact]
    by_remainder = sorted(range(len(weights)), key=lambda k: (-(exact[k] - counts[k]), k))
    for k in by_remainder[: size - sum(counts)]:
        counts[k] += 1
    if size >= len(weights):  # every type present: take from the largest count
        for k in range(len(weights)):
            if counts[k] == 0:
                donor = max(range(len(weights)), key=lambda j: (counts[j], -j))
                counts[donor] -= 1
                counts[k] = 1
    return dict(zip(TASK_TYPES, counts))


def type_schedule(quotas: dict[str, int]) -> list[str]:
    """One period of the candidate order: each type as evenly spread as its quota allows.

    Candidate ``i`` has type ``schedule[i % len(schedule)]``; the first period holds exactly
    the quotas (smooth weighted round-robin, ties in ``TASK_TYPES`` order).
    """
    size = sum(quotas.values())
    assigned = dict.fromkeys(quotas, 0)
    schedule = []
    for k in range(size):
        behind = max(quotas, key=lambda t: (quotas[t] * (k + 1) / size - assigned[t],
                                            -TASK_TYPES.index(t)))
        assigned[behind] += 1
        schedule.append(behind)
    return schedule
