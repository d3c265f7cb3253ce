"""Scoring: pure functions from episode records to metrics.

Metrics (one name, one meaning, everywhere):

* ``success_rate`` — share of episodes with ``won`` (as each env defines winning: a solved game, a perfect purchase, an exact answer).
* ``mean_score`` — mean final ``score`` in [0, 1] (the env's own partial credit: 0/1, a purchase reward, answer F1).
* ``mean_steps`` — mean env steps per episode.
* ``invalid_action_rate`` — invalid steps / all steps, pooled over the run.
* ``per_family`` — the same metrics per ``task.family`` (a task type, a product category, ...), plus the
  ``macro_success_rate`` over families.
* ``ci95`` — 95% intervals. ``success_rate`` gets a Wilson score interval, which never collapses at
  0% or 100% (10 wins of 10 is about [72, 100], not [100, 100]); episodes of one task (a group of
  G) are correlated, so its sample size is the effective one, ``episodes / deff`` with Kish's design
  effect ``deff = 1 + (mean group size - 1) * ICC`` (ICC by one-way ANOVA over tasks, clipped to
  [0, 1]). ``invalid_action_rate`` is a proportion of steps and gets the same interval, with a
  task's steps as its group (a run that was invalid on every step is not ``[100, 100]``). The means
  (score, steps) get percentile intervals of a bootstrap that resamples *tasks* with all their
  episodes (a cluster bootstrap), from a fixed seed.

Episodes with ``status == "error"`` count as failures and are also reported as ``errors``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import math

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


def wilson_interval(successes: float, n: float, z: float = 1.959964) -> list[float]:
    """The Wilson score interval of a proportion ``successes / n`` (``n`` may be an effective,
    non-integer sample size); ``[0, 1]`` when ``n`` is 0."""
    if n <= 0:
        return [0.0, 1.0]
    p = min(1.0, max(0.0, successes / n))
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z / denominator * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [0.0 if p == 0 else max(0.0, center - half), 1.0 if p == 1 else min(1.0, center + half)]


def effective_sample_size(groups: Sequence[tuple[int, int]]) -> float:
    """``episodes / deff`` for per-task ``(episodes, wins)`` (see the module rules)."""
    return grouped_effective_size([(size, wins, wins) for size, wins in groups])


def grouped_effective_size(groups: Sequence[tuple[int, float, float]]) -> float:
    """``n / deff`` for per-group ``(size, sum of values, sum of squared values)``: Kish's design
    effect with the ICC of the values by one-way ANOVA over the groups (0/1 values: a proportion)."""
    groups = [group for group in groups if group[0] > 0]
    n = sum(size for size, _, _ in groups)
    k = len(groups)
    if k < 2 or n <= k:
        return float(n)
    mean = sum(total for _, total, _ in groups) / n
    between = sum(size * (total / size - mean) ** 2 for size, total, _ in groups) / (k - 1)
    within = sum(squares - total * total / size for size, total, squares in groups) / (n - k)
    n0 = (n - sum(size * size for size, _, _ in groups) / n) / (k - 1)
    denominator = between + (n0 - 1) * within
    icc = min(1.0, max(0.0, (between - within) / denominator)) if denominator > 0 else 0.0
    return n / (1 + (n / k - 1) * icc)


def grouped_rate_interval(groups: Sequence[tuple[int, int]]) -> list[float]:
    """The 95% Wilson interval of ``sum(hits) / sum(size)`` over per-group ``(size, hits)``, with the
    effective sample size of the groups."""
    n = sum(size for size, _ in groups)
    n_eff = effective_sample_size([(size, hits) for size, hits in groups if size > 0])
    return wilson_interval(sum(hits for _, hits in groups) / n * n_eff if n else 0.0, n_eff)


def _per_task(records: Sequence[EpisodeRecord], size: Callable[[EpisodeRecord], int],
              hits: Callable[[EpisodeRecord], int]) -> list[tuple[int, int]]:
    """Per task: ``(sum of size, sum of hits)`` over its episodes."""
    by_task: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for record in records:
        counts = by_task[record.task["id"]]
        counts[0] += size(record)
        counts[1] += hits(record)
    return [(n, k) for n, k in by_task.values()]


def success_interval(records: Sequence[EpisodeRecord]) -> list[float]:
    """The 95% Wilson interval of the success rate, over the effective number of episodes."""
    return grouped_rate_interval(_per_task(records, lambda r: 1, lambda r: int(bool(r.won))))


def invalid_interval(records: Sequence[EpisodeRecord]) -> list[float]:
    """The 95% Wilson interval of the invalid-action rate, over the effective number of steps."""
    return grouped_rate_interval(_per_task(records, lambda r: r.num_steps, lambda r: r.num_invalid))


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
        "ci95": {**bootstrap_ci(records), "success_rate": success_interval(records),
                 "invalid_action_rate": invalid_interval(records)} if with_ci else {},
    }
