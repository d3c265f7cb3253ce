"""The ``seed-gym reproduce`` report as a page: the data of :mod:`seed_gym.training.reproduce_report`
laid out as leaderboard tables and charts, rendered to Markdown and to one offline HTML page.

Rules: both renderers show the same tables (:data:`SECTIONS`, built once per env as
:class:`~seed_gym.leaderboards.tables.Table` and written by the leaderboard's ``table_markdown`` and
``table_html``); the HTML page adds charts (:func:`~seed_gym.leaderboards.svg.line_chart`), where the
Markdown lists the curves' points. Per env and split there are two success charts, against updates
and against env steps, one line per arm (the mean over seeds) with the seeds' min/max band shaded;
each is a ``<figure data-curve="ENV/SPLIT/updates|env_steps">``. Training statistics that are rates
get one small chart each, per update. The paper's numbers are a separate ``reported`` table.
Rates are percentages with one decimal; a missing value is an en dash.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from seed_gym.leaderboards import formatting as fmt
from seed_gym.leaderboards.compare import PairedComparison, TaskDifference
from seed_gym.leaderboards.render_html import figure, html_page, table_html
from seed_gym.leaderboards.render_md import table_markdown
from seed_gym.leaderboards.svg import line_chart
from seed_gym.leaderboards.tables import Cell, Table, comparison_table
from seed_gym.training.costs import OTHER, PHASES

STAT_NAMES = {"success_rate": "train success", "gate_mean": "gate mean", "gate_active_ratio": "gate > 0.5",
              "teacher_gap_mean": "teacher gap", "skill_parse_rate": "skill parse rate",
              "skill_cut_rate": "analyzer replies cut at the token limit",
              "invalid_action_rate": "train invalid", "advantage_abs_mean": "|advantage|"}
X_AXES = {"updates": ("update", "update"), "env_steps": ("env_steps", "env steps")}


def _success(result: dict[str, Any], metric: str, arm: str) -> Cell:
    """A pooled success with its Wilson interval and episode count."""
    return Cell(fmt.pct(result["success"]), value=result["success"], metric=metric, run=arm, numeric=True,
                detail=f"{fmt.interval(result['ci95'], True)} {fmt.count(result['episodes'])}")


def _difference(result: dict[str, Any] | None) -> Cell:
    if result is None:
        return Cell(fmt.DASH, tooltip="no shared evaluation episodes", numeric=True)
    low, high = result["ci95"]
    return Cell(fmt.signed_pct(result["diff"]), value=result["diff"], numeric=True,
                detail=f"[{fmt.signed_pct(low)}, {fmt.signed_pct(high)}] n={result['pairs']}")


# -- tables --------------------------------------------------------------------------------------
def final_table(env: str, content: dict[str, Any]) -> Table | None:
    rows = [[Cell(arm), Cell(split), _success(final["start"], f"{split}:start", arm),
             _success(final["end"], f"{split}:end", arm), Cell(str(final["end_update"]), numeric=True)]
            for arm, summary in content["arms"].items() for split, final in summary["final"].items()]
    return Table(["arm", "split", "start % (95% CI)", "end % (95% CI)", "end update"], rows,
                 caption=f"{env}: final success, pooled over seeds (Wilson CI); the start is the arm's own: "
                         "its preset's `start`, the SFT or the skill-SFT checkpoint")


def threshold_table(env: str, content: dict[str, Any]) -> Table | None:
    splits = content.get("thresholds") or {}
    if not splits:
        return None
    headers = ["arm", *[f"{split}: reach {fmt.pct(t['threshold'])}%" for split, t in splits.items()]]
    rows = []
    for arm in content["arms"]:
        cells = [Cell(arm)]
        for threshold in splits.values():
            point = threshold["arms"].get(arm)
            cells.append(Cell("not reached", numeric=True) if point is None else
                         Cell(f"update {point['update']}", value=point["update"], numeric=True,
                              detail=f"({point['env_steps']:,.0f} env steps)"))
        rows.append(cells)
    return Table(headers, rows, caption=f"{env}: updates to reach the grpo arm's final success (mean over seeds; "
                                        "the first evaluated update whose mean reaches it; update 0 = the start already does)")


def comparisons_table(env: str, content: dict[str, Any]) -> Table | None:
    rows = [[Cell(row["comparison"]), Cell(row["split"]), _difference(row)] for row in content["comparisons"]]
    return Table(["comparison", "split", "difference % [95% CI] pairs"], rows,
                 caption=f"{env}: paired comparisons on the same evaluation episodes (Newcombe's paired CI over "
                         "(seed, episode) pairs, clustered by (seed, task))")


def _paired_comparison(data: dict[str, Any]) -> PairedComparison:
    return PairedComparison(**{**data, "differing": [TaskDifference(**d) for d in data["differing"]]})


def seed_vs_grpo_table(env: str, content: dict[str, Any]) -> Table | None:
    result = content.get("seed_vs_grpo")
    if not result or not result["columns"]:
        return None
    columns = {name: _paired_comparison(column) for name, column in result["columns"].items()}
    return comparison_table(columns, f"{env}: seed-gym compare A = {result['a']}, B = {result['b']} on "
                                     f"{result['split']}, final evaluations (same seed = same episodes)")


def ablation_table(env: str, content: dict[str, Any]) -> Table | None:
    if not content.get("ablation"):
        return None
    # the paper's figures are ALFWorld valid_seen: a column only where this report has that split
    paper = any(row["paper_alfworld"] is not None for row in content["ablation"])
    rows = [[Cell(row["arm"]), Cell(row["split"]), _success(row["start"], f"{row['split']}:start", row["arm"]),
             _success(row["end"], f"{row['split']}:end", row["arm"]),
             Cell(fmt.DASH, tooltip="the arm the ablations are paired with", numeric=True) if row["arm"] == "seed"
             else _difference(row["vs_seed"])]
            + ([Cell(fmt.reported(row["paper_alfworld"]), numeric=True)] if paper else [])
            for row in content["ablation"]]
    return Table(["arm", "split", "start %", "end %", "end − seed % [95% CI] pairs"]
                 + (["paper ALFWorld seen % (Qwen2.5-3B)"] if paper else []), rows,
                 caption=f"{env}: SEED ablations (the paper's Table 2): paired end differences against seed")


def training_table(env: str, content: dict[str, Any]) -> Table | None:
    rows = []
    for arm, summary in content["arms"].items():
        cells = [Cell(arm)]
        for key in STAT_NAMES:
            halves = summary["training"][key]
            cells.append(Cell(fmt.DASH if halves[0] is None else " → ".join(f"{v:.3g}" for v in halves), numeric=True))
        rows.append(cells)
    return Table(["arm", *STAT_NAMES.values()], rows,
                 caption=f"{env}: training statistics, mean over the first half → the second half of the updates")


def cost_table(env: str, content: dict[str, Any]) -> Table | None:
    arms = content["arms"]
    phases = [p for p in (*PHASES, OTHER)
              if any(entry["phase"] == p and entry["seconds"] for s in arms.values() for entry in s["phases_per_update"])]
    rows = []
    for arm, summary in arms.items():
        seconds = {entry["phase"]: entry for entry in summary["phases_per_update"]}
        rows.append([Cell(arm), *[Cell(f"{seconds[p]['seconds']:.2f}", value=seconds[p]["seconds"], metric=f"time/{p}_s",
                                       run=arm, numeric=True, detail=f"{fmt.pct(seconds[p]['share'])}%")
                                  if p in seconds else Cell(fmt.DASH, numeric=True) for p in phases],
                     Cell(f"{summary['wall_seconds_per_seed']:.0f}", value=summary["wall_seconds_per_seed"],
                          numeric=True)])
    return Table(["arm", *phases, "wall s / seed"], rows, kind="costs",
                 caption=f"{env}: per-phase seconds per update (share of the update), mean over seeds and updates")


def provenance_table(env: str, content: dict[str, Any]) -> Table | None:
    rows = [[Cell(arm), Cell(seed), Cell(made.get("start") or fmt.DASH), Cell((made.get("commit") or fmt.DASH)[:12]),
             Cell(made.get("evaluated") or fmt.DASH),
             Cell(fmt.DASH if made.get("seconds") is None else f"{made['seconds']:.0f}", numeric=True)]
            for arm, summary in content["arms"].items() for seed, made in summary.get("provenance", {}).items()]
    return Table(["arm", "seed", "start fingerprint", "code (git commit)", "last evaluated", "stage wall s"], rows,
                 caption=f"{env}: provenance of every run: arms from one start share its fingerprint") if rows else None


def reference_table(reference: list[dict[str, Any]]) -> Table:
    rows = [[Cell("reported"), Cell(row["arm"]), Cell(row["paper_arm"]), Cell(fmt.reported(row["alfworld"]), numeric=True),
             Cell(fmt.reported(row["webshop_success"]), numeric=True), Cell(row["source"])] for row in reference]
    return Table(["", "arm here", "paper arm", "ALFWorld %", "WebShop success %", "source"], rows, kind="reported",
                 caption="Reported · the SEED paper, Qwen2.5-3B, 150 updates (not measured here; another scale, "
                         "not comparable)", row_classes=["reported"] * len(rows))


STATISTICS = "Training statistics"  # the HTML adds the per-update charts after its table
#: The tables of every env, in order: (heading, builder); a builder returns None to show nothing.
SECTIONS: tuple[tuple[str, Callable[[str, dict[str, Any]], Table | None]], ...] = (
    ("Final success", final_table),
    ("Updates to reach a threshold", threshold_table),
    ("Paired comparisons", comparisons_table),
    ("SEED against GRPO (seed-gym compare)", seed_vs_grpo_table),
    ("Ablations", ablation_table),
    (STATISTICS, training_table),
    ("Per-phase cost", cost_table),
    ("Provenance", provenance_table),
)


def _intro(payload: dict[str, Any]) -> tuple[str, str]:
    preset = payload["preset"]
    title = f"seed-gym reproduce: preset {preset.get('name', '?')}"
    text = (f"{str(preset.get('description', '')).strip()} Seeds: {', '.join(map(str, preset.get('seeds', [])))}. "
            "Success in %; intervals are 95%; curves show the mean over seeds with the min/max band.")
    if payload.get("missing"):
        text += (f" Partial: {len(payload['missing'])} planned RL stages had not finished and are left out: "
                 + ", ".join(payload["missing"]) + ".")
    return title, text


def _sections(env: str, content: dict[str, Any]) -> list[tuple[str, Table]]:
    return [(heading, table) for heading, build in SECTIONS if (table := build(env, content)) is not None]


def _commands(content: dict[str, Any]) -> list[str]:
    result = content.get("seed_vs_grpo") or {}
    return result.get("commands", []) + ([f"error: {result['error']}"] if result.get("error") else [])


# -- Markdown ------------------------------------------------------------------------------------
def render_markdown(payload: dict[str, Any]) -> str:
    title, intro = _intro(payload)
    parts = [f"# {title}", intro]
    for env, content in payload["envs"].items():
        parts.append(f"## {env}")
        for heading, table in _sections(env, content):
            parts += [f"### {heading}", table_markdown(table)]
            if table.kind == "comparison":
                parts.append("\n".join(f"- `{line}`" for line in _commands(content)))
        parts.append("### Success against updates and env steps (mean over seeds [min, max])")
        parts.append("\n".join(
            f"- {arm} / {split}: " + ", ".join(f"u{p['update']} ({p['env_steps']:.0f} steps): {fmt.pct(p['mean'])} "
                                               f"[{fmt.pct(p['min'])}, {fmt.pct(p['max'])}]" for p in curve)
            for arm, summary in content["arms"].items() for split, curve in summary["curves"].items()))
    parts += ["## Reference: the SEED paper — not comparable", table_markdown(reference_table(payload["reference"]))]
    return "\n\n".join(parts) + "\n"


# -- HTML ----------------------------------------------------------------------------------------
def success_charts(env: str, content: dict[str, Any]) -> list[str]:
    """Per split: success against updates and against env steps, one line per arm, seeds' band shaded."""
    arms = content["arms"]
    splits = list(dict.fromkeys(split for summary in arms.values() for split in summary["curves"]))
    charts = []
    for split in splits:
        for axis, (key, label) in X_AXES.items():
            curves = {arm: summary["curves"][split] for arm, summary in arms.items() if summary["curves"].get(split)}
            series = {arm: [(p[key], p["mean"]) for p in curve] for arm, curve in curves.items()}
            bands = {arm: [(p[key], p["min"], p["max"]) for p in curve] for arm, curve in curves.items()}
            title = f"{env} / {split}: success % against {label} (mean over seeds, min/max shaded)"
            charts.append(figure(title, line_chart(series, title, x_label=label, bands=bands),
                                 curve=f"{env}/{split}/{axis}"))
    return charts


def statistic_charts(env: str, content: dict[str, Any]) -> list[str]:
    """One small chart per rate statistic of training, per update, the arms that log it."""
    charts = []
    for key, name in STAT_NAMES.items():
        curves = {arm: s["training_curves"][key] for arm, s in content["arms"].items() if s["training_curves"].get(key)}
        if not curves:
            continue
        title = f"{env}: {name} % per update"
        charts.append(figure(title, line_chart(
            {arm: [(p["update"], p["mean"]) for p in curve] for arm, curve in curves.items()}, title, width=440,
            height=200, bands={arm: [(p["update"], p["min"], p["max"]) for p in curve] for arm, curve in curves.items()}),
            statistic=f"{env}/{key}"))
    return charts


def render_html(payload: dict[str, Any]) -> str:
    title, intro = _intro(payload)
    nav = "".join(f'<a href="#env-{escape(env)}">{escape(env)}</a>' for env in payload["envs"])
    body = [f'<p class="legend">{escape(intro)}</p><nav>{nav}</nav>']
    for env, content in payload["envs"].items():
        body.append(f'<section class="env" id="env-{escape(env)}"><h2>{escape(env)}</h2>'
                    f'<h3>Success against updates and env steps</h3><div class="charts">{"".join(success_charts(env, content))}</div>')
        for heading, table in _sections(env, content):
            body.append(f"<h3>{escape(heading)}</h3>{table_html(table)}")
            if table.kind == "comparison":
                body.append("<ul>" + "".join(f'<li class="key">{escape(line)}</li>' for line in _commands(content))
                            + "</ul>")
            if heading == STATISTICS:
                body.append(f'<div class="charts">{"".join(statistic_charts(env, content))}</div>')
        body.append("</section>")
    body.append("<h2>Reference: the SEED paper</h2>" + table_html(reference_table(payload["reference"])))
    return html_page(title, "".join(body))
