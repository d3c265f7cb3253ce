"""Reference rows: numbers reported in papers, never measured here.

Each env declares its own rows: its profile's ``reported`` target names a sequence of
:class:`ReferenceRow` (:mod:`seed_gym.profile`), so this module knows no particular env.

Rules:

* Every row is labelled ``reported`` and carries its source (paper + table) and the status tag of
  ``shared/docs/seed-method.md`` section 12: [P] paper number seen in >= 2 write-ups, [U] unverified,
  [A] stated by the authors (abstract/README/card), [T] third-party reproduction.
* Values are percentages as printed in the source (0-100), not fractions; measured rows use
  fractions. Renderers put reported rows in their own tables, never in a measured board.
* ``split`` is the split the paper evaluated on, named as the env names it; ``setting`` notes what
  differs from our defaults (e.g. a larger step budget).
* The rows of all envs are collected from the registered profiles in env-id order, each distinct
  ``reported`` target once (two env ids of one benchmark share one profile).
* Env names match ignoring case and every character that is not a letter or digit, so ``My-Env``,
  ``my_env`` and ``myenv`` name one env.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from seed_gym import registry
from seed_gym.profile import resolve

#: Papers that report on several envs -> how rows cite them (a table name may follow).
SOURCES: Mapping[str, str] = {
    "SEED": "arXiv 2607.14777", "SDAR": "arXiv 2605.15155", "GiGPO": "arXiv 2505.10978",
    "SkillRL": "arXiv 2602.08234", "OPID": "arXiv 2606.26790",
}


@dataclass(frozen=True)
class ReferenceRow:
    """One reported result: ``metrics`` maps ``success_rate`` / ``mean_score`` to a percentage;
    ``families`` maps our family names to a success percentage (``None`` where unknown)."""

    env: str
    split: str
    method: str
    backbone: str
    metrics: Mapping[str, float]
    source: str
    tag: str
    families: Mapping[str, float | None] = field(default_factory=dict)
    setting: str = ""

    @property
    def label(self) -> str:
        return f"{self.method} · {self.backbone}"


def table_rows(env: str, split: str, source: str, lines: Iterable[Sequence[Any]], *,
               metrics: Sequence[str] = ("success_rate",), setting: str = "") -> list[ReferenceRow]:
    """One row per ``(method, backbone, tag, *values)`` line of one table: ``values`` are the
    percentages of ``metrics``, in that order."""
    rows = []
    for method, backbone, tag, *values in lines:
        if len(values) != len(metrics):
            raise ValueError(f"{source}: {method} has {len(values)} values for metrics {list(metrics)}")
        rows.append(ReferenceRow(env, split, method, backbone, dict(zip(metrics, values)), source, tag,
                                 setting=setting))
    return rows


def family_values(columns: Mapping[str, str], values: Sequence[float | None]) -> dict[str, float | None]:
    """A paper's family cells, given in the order of ``columns`` (an env's ``family_columns``),
    keyed by our family names."""
    if len(values) != len(columns):
        raise ValueError(f"{len(values)} family values for columns {list(columns)}")
    return dict(zip(columns.values(), values))


def all_reference_rows() -> tuple[ReferenceRow, ...]:
    """The rows every registered env declares (``EnvProfile.reported``), in env-id order, each
    distinct target once. Not cached: the targets' modules are, and plugins may register late."""
    targets = dict.fromkeys(s.profile.reported for s in registry.list_envs() if s.profile.reported)
    return tuple(row for target in targets for row in resolve(target))


def reference_rows(env: str, rows: Sequence[ReferenceRow] | None = None) -> list[ReferenceRow]:
    """The reported rows for one env (of ``rows``, default all registered ones), grouped by split
    (``seen`` first), then in declared order."""
    from seed_gym.leaderboards.boards import split_sort_key

    wanted = _normalized(env)
    chosen = [row for row in (all_reference_rows() if rows is None else rows) if _normalized(row.env) == wanted]
    return sorted(chosen, key=lambda row: split_sort_key(row.split))


def family_columns() -> dict[str, str]:
    """Family name -> its paper column name, from every registered profile's ``family_columns``
    (the first env declaring a family wins)."""
    columns: dict[str, str] = {}
    for env_spec in registry.list_envs():
        for column, family in env_spec.profile.family_columns.items():
            columns.setdefault(family, column)
    return columns


def _normalized(env: str) -> str:
    """Case and separators do not tell env names apart (``My-Env`` is ``myenv``)."""
    return "".join(ch for ch in env.lower() if ch.isalnum())
