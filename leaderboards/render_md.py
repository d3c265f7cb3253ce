"""The Markdown report (``README.md``): the same tables as the HTML page, without charts.

Rules: one ``##`` heading per env, ``###`` per board; a mismatch flag is a blockquote; reported rows
sit under their own heading, each row starting with ``reported``; training runs' per-phase costs follow
the learning curves; pipes in cells are escaped.
"""

from __future__ import annotations

from seed_gym.leaderboards import formatting as fmt
from seed_gym.leaderboards.boards import Board
from seed_gym.leaderboards.report import EnvReport, Report
from seed_gym.leaderboards.tables import Cell, Table, board_table, family_table, generalization_table, \
    metadata_table, reported_tables, usage_table
from seed_gym.leaderboards.training_costs import cost_table


def _text(cell: Cell) -> str:
    text = f"[{cell.text}]({cell.href})" if cell.href else cell.text
    return f"{text} {cell.detail}" if cell.detail else text


def table_markdown(table: Table) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    rows = [line(table.headers), line(["---"] * len(table.headers))]
    rows += [line([_text(cell) for cell in row]) for row in table.rows]
    return f"*{table.caption}*\n\n" + "\n".join(rows) + "\n"


def _board_markdown(board: Board) -> list[str]:
    key = board.key
    parts = [f"### {board.title}",
             f"`env {key.get('env_version')}` · `data {fmt.short_fp(key.get('data_fingerprint'))}` · "
             f"`split {fmt.short_fp(key.get('split_fingerprint'))}` · "
             f"`tasks {fmt.short_fp(key.get('tasks_fingerprint'))}` · `max steps {key.get('max_steps')}`"]
    if board.conflicts:
        parts.append(f"> ⚠ {board.variants} boards exist for {board.env} / {board.split}: their runs "
                     f"differ in **{', '.join(board.conflicts)}** (this one: {board.difference}), so they are "
                     "not ranked together.")
    usage = usage_table(board)
    parts += [table_markdown(board_table(board)), table_markdown(family_table(board)),
              *([table_markdown(usage)] if usage else []), table_markdown(metadata_table(board))]
    return parts


def _env_markdown(env: EnvReport) -> list[str]:
    parts = [f"## {env.env}", table_markdown(generalization_table(env.section))]
    for board in env.section.boards:
        parts += _board_markdown(board)
    if env.curves:
        parts.append("### Learning curves\n")
        for curve in env.curves:
            for split, points in curve.series().items():
                trail = ", ".join(f"{x:g}: {fmt.pct(y)}" for x, y in points)
                parts.append(f"- **{curve.label}** / {split} (update: success %): {trail}")
    if env.costs:
        parts += ["### Training cost per phase", *[table_markdown(cost_table(cost)) for cost in env.costs]]
    if env.reported:
        parts += ["### Reported in papers (not measured here)",
                  "Copied from the sources named in each row; percentages as printed.",
                  *[table_markdown(t) for t in reported_tables(env.reported)]]
    return parts


def render_markdown(report: Report) -> str:
    parts = [f"# {report.title}",
             f"{len(report.runs)} runs · built {report.generated}. Measured rows are scored from their "
             "episode records (success and invalid %: 95% Wilson intervals; means: 95% bootstrap CIs over tasks; "
             "each row paired against the board's best row: Newcombe's paired interval, McNemar exact p); rows "
             "share a board only when their "
             "fingerprints and step budget match. Rows marked *reported* are numbers from papers.",
             "Open `index.html` for the same tables with charts."]
    for env in report.envs:
        parts += _env_markdown(env)
    return "\n\n".join(parts) + "\n"
