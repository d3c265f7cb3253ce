"""The report: inputs -> validated runs -> boards -> (HTML, Markdown, JSON) files.

``build_report(paths)`` loads and validates every input (raising one error that lists all broken
submissions), groups the runs into boards and attaches the reported rows, learning curves and training
runs' per-phase costs (:mod:`seed_gym.leaderboards.training_costs`) of each env. ``write_report(report, out)`` writes ``index.html``, ``README.md`` and ``leaderboard.json``
(the measured numbers, for scripts) into ``out``, and with ``views`` one episode page per run
(``runs/NNN-<agent>.html``, :mod:`seed_gym.leaderboards.episodes_view`) that the rows link to.
Renderers only read the :class:`Report`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from seed_gym.leaderboards.boards import EnvSection, build_boards
from seed_gym.leaderboards.reference import ReferenceRow, reference_rows
from seed_gym.leaderboards.runs import CurvePoint, LoadedRun, load_inputs
from seed_gym.leaderboards.training_costs import TrainingCost, env_training_costs


@dataclass(frozen=True)
class Curve:
    """The training curve of one submission in one env."""

    label: str
    points: Sequence[CurvePoint]

    def series(self, metric: str = "success_rate") -> dict[str, list[tuple[float, float]]]:
        """Split -> (update, value) points of ``metric``."""
        lines: dict[str, list[tuple[float, float]]] = {}
        for point in self.points:
            if metric in point.values:
                lines.setdefault(point.split, []).append((float(point.update), point.values[metric]))
        return lines


@dataclass
class EnvReport:
    section: EnvSection
    reported: list[ReferenceRow] = field(default_factory=list)
    curves: list[Curve] = field(default_factory=list)
    costs: list[TrainingCost] = field(default_factory=list)

    @property
    def env(self) -> str:
        return self.section.env


@dataclass
class Report:
    title: str
    envs: list[EnvReport]
    runs: list[LoadedRun]
    generated: str
    views: dict[Path, str] = field(default_factory=dict)  # run path -> its episode page, relative


def build_report(paths: Sequence[Path], *, title: str = "seed-gym leaderboard",
                 with_reference: bool = True, with_views: bool = True) -> Report:
    runs = load_inputs(paths)
    envs = [EnvReport(section, reference_rows(section.env) if with_reference else [],
                      _curves(section.env, runs), env_training_costs(section.env, runs))
            for section in build_boards(runs)]
    views = {run.path: view_name(index, run) for index, run in enumerate(runs, 1)} if with_views else {}
    for env in envs:
        for board in env.section.boards:
            for row in board.rows:
                row.view = views.get(row.run.path)
    return Report(title=title, envs=envs, runs=runs, views=views,
                  generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


def view_name(index: int, run: LoadedRun) -> str:
    """Where a run's episode page goes, relative to the report folder."""
    slug = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in str(run.identity.get("agent", "run")))[:60]
    return f"runs/{index:03d}-{slug}.html"


def _curves(env: str, runs: Sequence[LoadedRun]) -> list[Curve]:
    """One curve per submission name (the runs of a submission share its metrics.jsonl)."""
    curves: dict[str, Curve] = {}
    for run in runs:
        if run.identity["env"] == env and run.curve:
            curves.setdefault(run.submission.name, Curve(run.submission.name, run.curve))
    return list(curves.values())


def report_data(report: Report) -> dict[str, Any]:
    """The measured numbers as plain JSON: boards, their keys and rows (recomputed summaries)."""
    boards = []
    for env in report.envs:
        for board in env.section.boards:
            boards.append({
                "env": board.env, "split": board.split, "variant": board.variant,
                "key": board.key, "conflicts": board.conflicts, "difference": board.difference,
                "rows": [{"rank": row.rank, "label": row.label, "run_dir": str(row.run.path),
                          "agent": row.run.identity["agent"], "model": row.run.submission.model, "view": row.view,
                          **{k: row.summary[k] for k in ("episodes", "tasks", "success_rate", "mean_score",
                                                         "mean_steps", "invalid_action_rate",
                                                         "macro_success_rate", "ci95", "per_family")},
                          "vs_best": None if row.vs_best is None else {
                              "success_diff": row.vs_best.success_diff, "success_diff_ci": row.vs_best.success_diff_ci,
                              "p_value": row.vs_best.p_value, "pairs": row.vs_best.pairs},
                          "model_usage": None if row.usage is None else asdict(row.usage)}
                         for row in board.rows],
            })
    costs = [{"env": env.env, "label": cost.label, "run": str(cost.run), "updates": cost.updates,
              "rollout_backends": list(cost.rollout_backends), "phases": [asdict(p) for p in cost.phases]}
             for env in report.envs for cost in env.costs]
    return {"title": report.title, "generated": report.generated, "boards": boards, "training_costs": costs}


def write_report(report: Report, out: Path) -> list[Path]:
    """Write the three report files into ``out``; returns their paths."""
    from seed_gym.leaderboards.render_html import render_html
    from seed_gym.leaderboards.render_md import render_markdown

    out.mkdir(parents=True, exist_ok=True)
    files = {"index.html": render_html(report), "README.md": render_markdown(report),
             "leaderboard.json": json.dumps(report_data(report), indent=2, default=str)}
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    _write_views(report, out)
    return [out / name for name in files]


def _write_views(report: Report, out: Path) -> None:
    from seed_gym.leaderboards.episodes_view import ViewedRun, render_view, teacher_context

    for run in report.runs:
        name = report.views.get(run.path)
        if name:
            page = out / name
            page.parent.mkdir(parents=True, exist_ok=True)
            viewed = ViewedRun(run.path, run.identity, run.records, teacher_context(run.path))
            page.write_text(render_view([viewed], f"{run.label} · {run.identity.get('env')}/"
                                                  f"{run.identity.get('split')}"), encoding="utf-8")
