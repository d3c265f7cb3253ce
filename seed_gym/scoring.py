"""Scoring: pure functions from episode records to metrics.

Metrics (one name, one meaning, everywhere):

* ``success_rate`` — share of episodes with ``won`` (as each env defines winning: a solved game, a perfect purchase, an exact answer).
* ``mean_score`` — mean final ``score`` in [0, 1] (the env's own partial credit: 0/1, a purchase reward, answer F1).
* ``mean_steps`` — mean env steps per episode.
* ``invalid_action_rate`` — invalid steps / all steps, pooled over the run.
* ``per_family`` — the same metrics per ``task.family`` (a task type, a product category, ...), plus the
  ``macro_success_rate`` over families.
* ``ci95`` — 95% bootstrap intervals. Episodes of one task (a group of G) are correlated, so the
  bootstrap resamples *tasks*, with all their episodes (a cluster bootstrap), from a fixed seed.

Episodes with ``status == "error"`` count as failures and are also reported as ``errors``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from seed_gym.records import EpisodeRecord

METRICS = ("success_rate", "mean_score", "mean_steps", "invalid_action_rate")
BOOTSTRAP_SAMPLES = 2000
BOOTSTRAP_SEED = 0


def _episode_arrays(records: Sequence[EpisodeRecord]) -> dict[str, np.ndarray]:
    return {
        "won": np.array([float(r.won) for r in records]),
        "score": np.array([float(r.score) for r in records]),
        "steps": np.array([float(r.num_steps) for r in records]),
        "invalid": np.array([float(r.num_invalid) for r in records]),
    }


def _metrics(arrays: Mapping[str, np.ndarray]) -> dict[str, float]:
    total_steps = arrays["steps"].sum()
    return {
        "success_rate": float(arrays["won"].mean()),
        "mean_score": float(arrays["score"].mean()),
        "mean_steps": float(arrays["steps"].mean()),
        "invalid_action_rate": float(arrays["invalid"].sum() / total_steps) if total_steps else 0.0,
    }


def bootstrap_ci(records: Sequence[EpisodeRecord], *, samples: int = BOOTSTRAP_SAMPLES,
                 seed: int = BOOTSTRAP_SEED, level: float = 0.95) -> dict[str, list[float]]:
    """Percentile intervals of every metric, resampling tasks (clusters) with replacement."""
    if not records:
        return {}
    by_task: dict[str, list[int]] = defaultdict(list)
    for index, record in enumerate(records):
        by_task[record.task["id"]].append(index)
    clusters = [by_task[task] for task in sorted(by_task)]  # independent of completion order
    arrays = _episode_arrays(records)
    # Per-task sums make each resample a weighted sum instead of a concatenation.
    sums = {key: np.array([arrays[key][c].sum() for c in clusters]) for key in arrays}
    counts = np.array([len(c) for c in clusters], dtype=float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(clusters), size=(samples, len(clusters)))
    weights = np.zeros((samples, len(clusters)))
    np.add.at(weights, (np.arange(samples)[:, None], draws), 1.0)
    n_episodes = weights @ counts
    steps = weights @ sums["steps"]
    estimates = {
        "success_rate": (weights @ sums["won"]) / n_episodes,
        "mean_score": (weights @ sums["score"]) / n_episodes,
        "mean_steps": steps / n_episodes,
        "invalid_action_rate": np.divide(weights @ sums["invalid"], steps,
                                         out=np.zeros(samples), where=steps > 0),
    }
    tail = (1.0 - level) / 2 * 100
    return {name: [float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail))]
            for name, values in estimates.items()}


def summarize(records: Iterable[EpisodeRecord], *, with_ci: bool = True) -> dict[str, Any]:
    """The scores of a set of episodes, overall and per family."""
    records = list(records)
    if not records:
        return {"episodes": 0, "tasks": 0, "errors": 0, **{m: None for m in METRICS},
                "per_family": {}, "macro_success_rate": None, "ci95": {}}
    families: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in records:
        families[record.task.get("family", "")].append(record)
    per_family = {
        family: {"episodes": len(group), **_metrics(_episode_arrays(group))}
        for family, group in sorted(families.items())
    }
    return {
        "episodes": len(records),
        "tasks": len({r.task["id"] for r in records}),
        "errors": sum(r.status == "error" for r in records),
        **_metrics(_episode_arrays(records)),
        "macro_success_rate": float(np.mean([f["success_rate"] for f in per_family.values()])),
        "per_family": per_family,
        "ci95": bootstrap_ci(records) if with_ci else {},
    }
