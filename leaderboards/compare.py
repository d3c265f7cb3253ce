"""Paired comparison of two runs on the tasks they share.

Rules:

* Episodes are paired by episode id (``task_id#group_index``); only pairs present in both runs
  count. Tasks in one run only are reported, not used.
* The difference is **B minus A** (success rate and mean score over the pairs). The success
  difference's 95% interval is Newcombe's hybrid score interval for paired proportions
  (:func:`newcombe_paired_interval`), over the effective number of pairs (Kish's design effect with
  the ICC of the pair differences over tasks, as the success rates' Wilson intervals do); unlike a
  bootstrap it does not collapse to a point when every pair differs the same way. The score
  difference's interval is a paired cluster bootstrap: shared *tasks* are resampled with all their
  pairs, from a fixed seed.
* Significance is McNemar's exact test on the discordant pairs: ``b`` = pairs A won and B lost,
  ``c`` = pairs B won and A lost; two-sided ``p = min(1, 2 * P(X <= min(b, c)))`` with
  ``X ~ Binomial(b + c, 1/2)``, and ``p = 1`` when there are no discordant pairs.
* The runs must be comparable: env, split and data fingerprints, env version and step budget
  equal. Otherwise :func:`compare_runs` raises, unless ``allow_mismatch`` is set, in which case the
  differing fields are returned in ``mismatches`` for the caller to show.
* Several (A, B) pairs of runs (one per training seed, say) pool into one comparison
  (:func:`compare_run_pairs`): episodes pair within each run pair only, and a task of the k-th pair
  is its own cluster ``k/<task id>`` (two seeds' evaluations of one task are two clusters); the
  discordant counts add up, so McNemar's test is over all pairs.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from seed_gym.records import EpisodeRecord
from seed_gym.scoring import BOOTSTRAP_SAMPLES, BOOTSTRAP_SEED, grouped_effective_size, wilson_interval

from seed_gym.leaderboards.runs import LoadedRun, SubmissionError

PAIRING_FIELDS = ("env", "env_version", "split_fingerprint", "data_fingerprint", "max_steps")


@dataclass(frozen=True)
class TaskDifference:
    """A shared task whose outcome differs: the share of its paired episodes each run won."""

    task_id: str
    family: str
    won_a: float
    won_b: float


@dataclass
class PairedComparison:
    label_a: str
    label_b: str
    pairs: int
    tasks: int
    only_a: int
    only_b: int
    success_a: float
    success_b: float
    success_diff: float
    success_diff_ci: list[float]
    score_diff: float
    score_diff_ci: list[float]
    a_only_won: int
    b_only_won: int
    p_value: float
    differing: list[TaskDifference] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts ``b`` and ``c``."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def newcombe_paired_interval(both: float, a_only: float, b_only: float, neither: float, *,
                             effective_pairs: float | None = None) -> list[float]:
    """95% interval of ``p_B - p_A`` for paired binary outcomes from the 2x2 counts of the pairs.

    Newcombe's hybrid score interval without continuity correction (method 10 of R. G. Newcombe,
    "Improved confidence intervals for the difference between binomial proportions based on paired
    data", Statistics in Medicine 17:2635-2650, 1998; recommended by Fagerland, Lydersen and Laake,
    Statistics in Medicine 33:2850-2875, 2014): each margin's Wilson interval, combined with the
    phi correlation of the pairs (0 when a margin is empty). With ``effective_pairs`` the counts are
    scaled to that many pairs (proportions and phi unchanged, the Wilson intervals wider).
    """
    n = both + a_only + b_only + neither
    if n <= 0:
        return [-1.0, 1.0]
    scale = (effective_pairs or n) / n
    a, b, c, d = (count * scale for count in (both, a_only, b_only, neither))
    m = n * scale
    p_a, p_b = (a + b) / m, (a + c) / m
    (low_a, high_a), (low_b, high_b) = wilson_interval(a + b, m), wilson_interval(a + c, m)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    phi = (a * d - b * c) / math.sqrt(margins) if margins > 0 else 0.0
    below_b, above_a = p_b - low_b, high_a - p_a
    above_b, below_a = high_b - p_b, p_a - low_a
    low = p_b - p_a - math.sqrt(max(0.0, below_b ** 2 - 2 * phi * below_b * above_a + above_a ** 2))
    high = p_b - p_a + math.sqrt(max(0.0, above_b ** 2 - 2 * phi * above_b * below_a + below_a ** 2))
    return [max(-1.0, low), min(1.0, high)]


def paired_success_interval(task_pairs: Sequence[Sequence[tuple[float, float]]]) -> list[float]:
    """95% interval of B's minus A's success over paired (won_a, won_b) outcomes, grouped by task:
    :func:`newcombe_paired_interval` of the pairs' 2x2 counts over the effective number of pairs
    (Kish's design effect with the ICC of the pair differences over tasks)."""
    pairs = [pair for task in task_pairs for pair in task]
    both, a_only, b_only = (sum(1 for x, y in pairs if rule(x, y)) for rule in (
        lambda x, y: x and y, lambda x, y: x and not y, lambda x, y: y and not x))
    differences = [[y - x for x, y in task] for task in task_pairs]
    effective_pairs = grouped_effective_size([(len(t), sum(t), sum(v * v for v in t)) for t in differences])
    return newcombe_paired_interval(both, a_only, b_only, len(pairs) - both - a_only - b_only,
                                    effective_pairs=effective_pairs)


def paired_bootstrap_ci(task_diffs: Sequence[Sequence[float]], *, samples: int = BOOTSTRAP_SAMPLES,
                        seed: int = BOOTSTRAP_SEED, level: float = 0.95) -> list[float]:
    """Percentile interval of the mean pair difference, resampling tasks (lists of pair diffs)."""
    if not task_diffs:
        return [0.0, 0.0]
    sums = np.array([sum(diffs) for diffs in task_diffs], dtype=float)
    counts = np.array([len(diffs) for diffs in task_diffs], dtype=float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(task_diffs), size=(samples, len(task_diffs)))
    estimates = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    tail = (1.0 - level) / 2 * 100
    return [float(np.percentile(estimates, tail)), float(np.percentile(estimates, 100 - tail))]


def identity_mismatches(a: Mapping[str, object], b: Mapping[str, object]) -> list[str]:
    """The pairing fields on which two run identities differ."""
    return [name for name in PAIRING_FIELDS if a.get(name) != b.get(name)]


def pair_records(a: Sequence[EpisodeRecord], b: Sequence[EpisodeRecord]
                 ) -> dict[str, list[tuple[EpisodeRecord, EpisodeRecord]]]:
    """Task id -> the (A, B) episode pairs of that task, in A's order."""
    by_id_b = {record.episode_id: record for record in b}
    pairs: dict[str, list[tuple[EpisodeRecord, EpisodeRecord]]] = defaultdict(list)
    for record in a:
        other = by_id_b.get(record.episode_id)
        if other is not None:
            pairs[record.task["id"]].append((record, other))
    return dict(pairs)


def compare_runs(run_a: LoadedRun, run_b: LoadedRun, *, allow_mismatch: bool = False) -> PairedComparison:
    """The paired comparison of B against A (see the module rules)."""
    return compare_run_pairs([(run_a, run_b)], allow_mismatch=allow_mismatch)


def compare_run_pairs(runs: Sequence[tuple[LoadedRun, LoadedRun]], *,
                      allow_mismatch: bool = False) -> PairedComparison:
    """B against A pooled over several (A, B) run pairs (see the module rules); labelled by the first pair."""
    if not runs:
        raise SubmissionError("no runs to compare")
    mismatches: list[str] = []
    by_task: dict[str, list[tuple[EpisodeRecord, EpisodeRecord]]] = {}
    only_a = only_b = 0
    for index, (run_a, run_b) in enumerate(runs):
        differ = identity_mismatches(run_a.identity, run_b.identity)
        if differ and not allow_mismatch:
            details = "; ".join(f"{name}: {run_a.identity.get(name)!r} vs {run_b.identity.get(name)!r}"
                                for name in differ)
            raise SubmissionError(f"the runs are not comparable ({details}); pass --allow-mismatch "
                                  "to compare them anyway")
        mismatches += [name for name in differ if name not in mismatches]
        paired = pair_records(run_a.records, run_b.records)
        if not paired:
            raise SubmissionError(f"{run_a.path} and {run_b.path} share no episodes")
        prefix = f"{index}/" if len(runs) > 1 else ""
        by_task.update({prefix + task: pairs for task, pairs in paired.items()})
        tasks_a, tasks_b = {r.task["id"] for r in run_a.records}, {r.task["id"] for r in run_b.records}
        only_a, only_b = only_a + len(tasks_a - tasks_b), only_b + len(tasks_b - tasks_a)
    pairs = [pair for task_pairs in by_task.values() for pair in task_pairs]
    won = [[(float(x.won), float(y.won)) for x, y in task_pairs] for task_pairs in by_task.values()]
    score = [[(float(x.score), float(y.score)) for x, y in task_pairs] for task_pairs in by_task.values()]
    b_count = sum(x.won and not y.won for x, y in pairs)
    c_count = sum(y.won and not x.won for x, y in pairs)
    return PairedComparison(
        label_a=runs[0][0].label, label_b=runs[0][1].label, pairs=len(pairs), tasks=len(by_task),
        only_a=only_a, only_b=only_b,
        success_a=_mean(x for task in won for x, _ in task),
        success_b=_mean(y for task in won for _, y in task),
        success_diff=_mean(y - x for task in won for x, y in task),
        success_diff_ci=paired_success_interval(won),
        score_diff=_mean(y - x for task in score for x, y in task),
        score_diff_ci=paired_bootstrap_ci([[y - x for x, y in task] for task in score]),
        a_only_won=b_count, b_only_won=c_count, p_value=mcnemar_exact(b_count, c_count),
        differing=_differing_tasks(by_task), mismatches=mismatches)


def _differing_tasks(by_task: Mapping[str, Sequence[tuple[EpisodeRecord, EpisodeRecord]]]
                     ) -> list[TaskDifference]:
    differing = []
    for task_id, task_pairs in by_task.items():
        won_a = _mean(float(x.won) for x, _ in task_pairs)
        won_b = _mean(float(y.won) for _, y in task_pairs)
        if won_a != won_b:
            differing.append(TaskDifference(task_id, task_pairs[0][0].task.get("family", ""), won_a, won_b))
    return differing


def _mean(values) -> float:
    values = list(values)
    return float(sum(values) / len(values)) if values else 0.0
