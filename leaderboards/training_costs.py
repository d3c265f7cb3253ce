"""Where a training run's updates spend their time: the per-phase cost table of a leaderboard.

Rules: every ``seed-gym train`` run in a report gets one table in its env's section (after the
learning curves), read from the update rows of its ``metrics.jsonl`` by
:func:`seed_gym.training.costs.phase_table`: per phase, in the order an update runs them, the mean
seconds per update, the share of the update's wall time (rollouts through the weight sync, plus the
evaluation; ``other`` is what no phase covers) and the mean count per update (tokens, env steps,
bytes synced). A run whose rows carry no phase keys (SFT, runs older than the keys) shows none.
Seconds cells keep the raw number and name the metric (``time/<phase>_s``) and the run folder, like
the boards' cells.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from seed_gym.leaderboards import formatting as fmt
from seed_gym.leaderboards.runs import LoadedRun, metrics_rows
from seed_gym.leaderboards.tables import Cell, Table
from seed_gym.training.costs import OTHER, count_unit, phase_table, update_rows


@dataclass(frozen=True)
class PhaseCost:
    """One phase's mean cost per update."""

    phase: str
    seconds: float
    share: float
    count: float


@dataclass(frozen=True)
class TrainingCost:
    """The per-phase cost of one training run."""

    label: str
    run: Path
    updates: int
    rollout_backends: tuple[str, ...]
    phases: tuple[PhaseCost, ...]

    @property
    def seconds_per_update(self) -> float:
        return sum(p.seconds for p in self.phases)


def training_cost(label: str, folder: Path) -> TrainingCost | None:
    """The per-phase cost of the training run in ``folder``, or None when its rows have none."""
    rows = metrics_rows(folder)
    table = phase_table(rows)
    if not table:
        return None
    updates = update_rows(rows)
    backends = tuple(sorted({str(row.get("rollout_backend", "hf")) for row in updates}))
    return TrainingCost(label, folder, len(updates), backends,
                        tuple(PhaseCost(*entry) for entry in table))


def env_training_costs(env: str, runs: Sequence[LoadedRun]) -> list[TrainingCost]:
    """One cost per training run evaluated on ``env`` (its splits' rows share the run folder)."""
    costs: dict[Path, TrainingCost | None] = {}
    for run in runs:
        if run.identity["env"] == env and run.training_dir is not None and run.training_dir not in costs:
            costs[run.training_dir] = training_cost(run.submission.name, run.training_dir)
    return [cost for cost in costs.values() if cost is not None]


def cost_table(cost: TrainingCost) -> Table:
    """Phase, seconds / update, share of the update, count / update (with its unit)."""
    run = str(cost.run)
    rows = [[Cell(p.phase, tooltip=None if p.phase != OTHER else "wall time no phase covers (samples, checkpoint)"),
             Cell(f"{p.seconds:.2f}", value=p.seconds, metric=f"time/{p.phase}_s", run=run, numeric=True),
             Cell(fmt.pct(p.share), value=p.share, numeric=True),
             Cell(f"{p.count:,.0f} {count_unit(p.phase)}" if count_unit(p.phase) else fmt.DASH,
                  value=p.count, numeric=True)]
            for p in cost.phases]
    caption = (f"{cost.label}: per-phase cost, mean over {cost.updates} update{'s' * (cost.updates != 1)} "
               f"({cost.seconds_per_update:.2f} s each; rollouts: {', '.join(cost.rollout_backends)})")
    return Table(["Phase", "Seconds / update", "Share of update %", "Count / update"], rows, kind="costs",
                 caption=caption)
