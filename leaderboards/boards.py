"""Boards: measured rows grouped so that every number on one board is comparable.

Rules:

* A **board** holds the runs of one env and split whose comparability key matches exactly: env
  version, data fingerprint, split fingerprint, the task panel (``tasks_fingerprint``) and the step
  budget. Rows whose key differs are never mixed: they go to a separate board of the same env and
  split, and both boards are flagged with the fields that differ.
* Rows on a board are ranked by success rate, then mean score (both descending), then label. Every
  row below the first is compared with the first (the board's best) by a paired test on the
  episodes they share (:func:`seed_gym.leaderboards.compare.compare_runs`: McNemar's exact test and
  Newcombe's paired score interval of the difference).
* Boards of one env and split that differ are told apart by what differs (``max steps 10``,
  ``4 tasks a722502f``), never by a bare variant number.
* An **env section** holds the boards of one env, ordered by split: ``seen``, ``unseen``, other
  evaluation splits (e.g. ``test``) alphabetically, ``train`` last. Its generalization table puts
  each board in a column so seen and unseen sit side by side per submission.
* Families (an env's task types, product categories, question sources) come from the records;
  renderers show them by the paper column names of the env's profile (``family_columns``). Success
  and invalid-action intervals are Wilson intervals (:func:`seed_gym.scoring.success_interval`,
  :func:`seed_gym.scoring.invalid_interval`).
* Rows of model agents carry their token, latency and format-validity figures
  (:mod:`seed_gym.leaderboards.usage`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from seed_gym.records import EpisodeRecord
from seed_gym.scoring import success_interval, summarize

from seed_gym.leaderboards import formatting as fmt
from seed_gym.leaderboards.compare import PairedComparison, compare_runs
from seed_gym.leaderboards.runs import LoadedRun, SubmissionError
from seed_gym.leaderboards.usage import ModelUsage, model_usage

KEY_FIELDS = ("env_version", "data_fingerprint", "split_fingerprint", "tasks_fingerprint", "max_steps")
SPLIT_ORDER = {"seen": 0, "unseen": 1}


@dataclass
class FamilyCell:
    """One family's success for one row, with its own task-resampled interval."""

    episodes: int
    success_rate: float
    ci95: list[float] | None


@dataclass
class Row:
    """One measured run on a board."""

    run: LoadedRun
    rank: int = 0
    families: dict[str, FamilyCell] = field(default_factory=dict)
    vs_best: PairedComparison | None = None  # None for the best row itself
    usage: ModelUsage | None = None          # None for agents that generate no tokens
    view: str | None = None                  # its episode page, relative to the report (if written)

    @property
    def label(self) -> str:
        return self.run.label

    @property
    def summary(self) -> dict[str, Any]:
        return self.run.summary


@dataclass
class Board:
    """Comparable rows of one env/split; ``conflicts`` names the key fields that differ from the
    other boards of the same env and split (empty when this is the only one)."""

    env: str
    split: str
    key: dict[str, Any]
    rows: list[Row]
    variant: int = 1
    variants: int = 1
    conflicts: list[str] = field(default_factory=list)

    @property
    def difference(self) -> str:
        """What sets this board apart from the other boards of its env and split ("" if alone)."""
        return ", ".join(describe_key_field(name, self.key, self.rows[0].summary.get("tasks"))
                         for name in self.conflicts)

    @property
    def title(self) -> str:
        return f"{self.env} / {self.split}" + (f" · {self.difference}" if self.difference else "")

    @property
    def anchor(self) -> str:
        return f"{self.env}-{self.split}-{self.variant}".replace(" ", "-")

    @property
    def families(self) -> list[str]:
        return sorted({family for row in self.rows for family in row.families})


@dataclass
class EnvSection:
    """The boards of one env, in split order."""

    env: str
    boards: list[Board]

    @property
    def labels(self) -> list[str]:
        """Row labels across all boards, in order of first appearance."""
        return list(dict.fromkeys(row.label for board in self.boards for row in board.rows))

    def cell(self, board: Board, label: str) -> Row | None:
        return next((row for row in board.rows if row.label == label), None)


def describe_key_field(name: str, key: dict[str, Any], tasks: int | None = None) -> str:
    """One comparability key field as a reader names it: ``max steps 10``, ``4 tasks a722502f``."""
    value = key.get(name)
    if name == "max_steps":
        return f"max steps {value}"
    if name == "tasks_fingerprint":
        return f"{tasks} tasks {fmt.short_fp(value)}" if tasks is not None else f"tasks {fmt.short_fp(value)}"
    if name == "env_version":
        return f"env {value}"
    return f"{name.removesuffix('_fingerprint')} {fmt.short_fp(value)}"


def comparability_key(identity: dict[str, Any]) -> dict[str, Any]:
    """The identity fields that must be equal for two runs of one env/split to share a board."""
    return {name: identity.get(name) for name in KEY_FIELDS}


def split_sort_key(split: str) -> tuple[int, str]:
    """``seen``, ``unseen``, other evaluation splits alphabetically, ``train`` last."""
    if split in SPLIT_ORDER:
        return SPLIT_ORDER[split], split
    return (3 if split == "train" else 2), split


def family_cells(records: Sequence[EpisodeRecord]) -> dict[str, FamilyCell]:
    """Per-family success with a cluster-bootstrap interval over that family's tasks."""
    by_family: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in records:
        by_family[record.task.get("family", "")].append(record)
    cells = {}
    for family, group in sorted(by_family.items()):
        rate = summarize(group, with_ci=False)["success_rate"]
        cells[family] = FamilyCell(len(group), rate, success_interval(group))
    return cells


def build_boards(runs: Sequence[LoadedRun]) -> list[EnvSection]:
    """Group runs into boards and boards into env sections (records -> boards)."""
    grouped: dict[tuple[str, str], dict[str, list[LoadedRun]]] = defaultdict(lambda: defaultdict(list))
    keys: dict[str, dict[str, Any]] = {}
    for run in runs:
        key = comparability_key(run.identity)
        key_id = repr(sorted(key.items(), key=lambda kv: kv[0]))
        keys[key_id] = key
        grouped[(run.identity["env"], run.identity["split"])][key_id].append(run)
    sections: dict[str, list[Board]] = defaultdict(list)
    for (env, split), variants in grouped.items():
        ordered = sorted(variants.items(), key=lambda item: -len(item[1]))
        for index, (key_id, members) in enumerate(ordered, 1):
            board = Board(env=env, split=split, key=keys[key_id], rows=_ranked_rows(members),
                          variant=index, variants=len(ordered))
            board.conflicts = _conflicts(board.key, [keys[k] for k, _ in ordered if k != key_id])
            sections[env].append(board)
    return [EnvSection(env, sorted(boards, key=lambda b: (split_sort_key(b.split), b.variant)))
            for env, boards in sorted(sections.items())]


def _ranked_rows(runs: Sequence[LoadedRun]) -> list[Row]:
    def order(run: LoadedRun) -> tuple[float, float, str]:
        return -(run.summary["success_rate"] or 0.0), -(run.summary["mean_score"] or 0.0), run.label

    rows = [Row(run, rank, family_cells(run.records), usage=model_usage(run.records))
             for rank, run in enumerate(sorted(runs, key=order), 1)]
    for row in rows[1:]:
        try:
            row.vs_best = compare_runs(rows[0].run, row.run)
        except SubmissionError:  # no shared episodes (other group sizes): nothing to pair
            row.vs_best = None
    _disambiguate(rows)
    return rows


def _disambiguate(rows: list[Row]) -> None:
    """Two rows with one label on one board (same agent, e.g. different seeds) get the seed and
    folder name appended, so neither hides the other."""
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        counts[row.label] += 1
    for row in rows:
        if counts[row.label] > 1:
            name = f"{row.run.submission.name} [seed {row.run.identity.get('seed')}, {row.run.path.name}]"
            row.run.submission = replace(row.run.submission, name=name)


def _conflicts(key: dict[str, Any], others: Sequence[dict[str, Any]]) -> list[str]:
    return sorted({name for other in others for name in KEY_FIELDS if other.get(name) != key.get(name)})
