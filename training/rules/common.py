"""The public toolkit of rule analyzers: what an env's rule (declared as ``rule`` in its profile,
e.g. ``envs/<env>/rule.py``) and :func:`~seed_gym.training.rules.generic_rule` share.

Rules: each helper is a pure function of the record (or of plain strings) and returns text for a
skill: the observation an action produced (:func:`step_result`), an English list
(:func:`english_list`), how an episode ended (:func:`episode_ending`) and the warning signs every
failed episode can show (:func:`common_warnings`: invalid actions, loops, a spent step budget).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from seed_gym.records import EpisodeRecord


def step_result(record: EpisodeRecord, index: int) -> str:
    """The observation that step ``index``'s action produced."""
    steps = record.steps
    return steps[index + 1].observation if index + 1 < len(steps) else record.final_observation


def english_list(items: Sequence[str], limit: int = 8) -> str:
    """``a, b and c`` (at most ``limit`` items, then ``and N more``)."""
    items = list(items)
    if len(items) > limit:
        items = items[:limit] + [f"{len(items) - limit} more"]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def episode_ending(record: EpisodeRecord) -> str:
    steps = f"{record.num_steps} step{'s' if record.num_steps != 1 else ''}"
    if record.won:
        return f"succeeded in {steps}"
    if record.status == "truncated":
        return f"failed: it ran out of steps after {steps} (score {record.score:.2f})"
    return f"failed after {steps} (score {record.score:.2f})"


def _repeats(actions: Sequence[str], minimum: int = 3) -> list[str]:
    """Actions repeated at least ``minimum`` times, most frequent first (ties: first seen)."""
    counts = Counter(actions)
    order = {a: i for i, a in reversed(list(enumerate(actions)))}
    shown = [(a if len(a) <= 60 else a[:57] + "...", n)
             for a, n in sorted(counts.items(), key=lambda kv: (-kv[1], order[kv[0]])) if n >= minimum]
    return [f"'{a}' x{n}" for a, n in shown]


def common_warnings(record: EpisodeRecord) -> list[str]:
    signs = []
    if record.num_invalid:
        signs.append(f"{record.num_invalid} of {record.num_steps} actions were invalid")
    loops = _repeats([s.action for s in record.steps if s.action])
    if loops:
        signs.append(f"repeated actions ({english_list(loops, 3)})")
    if record.status == "truncated":
        signs.append("the step budget ran out")
    return signs
