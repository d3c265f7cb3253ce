"""The static HTML page: one self-contained file, inline CSS and SVG, no scripts, no network.

Layout: title and legend; per env a section with the seen-vs-unseen table, then per board its key
(fingerprints), a mismatch flag when other boards of the same split exist, the ranked table with a
success chart, the per-family table, run metadata; then learning curves; then the reported rows in
their own, visibly different table. Measured number cells carry ``data-run``, ``data-metric`` and
``data-value`` (the raw fraction) so the page can be checked against ``summary.json``.
"""

from __future__ import annotations

from html import escape

from seed_gym.leaderboards import formatting as fmt
from seed_gym.leaderboards.boards import Board
from seed_gym.leaderboards.report import EnvReport, Report
from seed_gym.leaderboards.svg import Bar, bar_chart, line_chart
from seed_gym.leaderboards.tables import Cell, Table, board_table, family_table, generalization_table, \
    metadata_table, reported_tables

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2937;margin:0;background:#f8fafc}
main{max-width:1180px;margin:0 auto;padding:24px}
h1{margin:0 0 4px}h2{margin-top:40px;border-bottom:2px solid #e5e7eb;padding-bottom:4px}
h3{margin-top:28px}.muted{color:#6b7280}.legend{background:#fff;border:1px solid #e5e7eb;padding:10px 14px;border-radius:6px}
table{border-collapse:collapse;background:#fff;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #e5e7eb;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f1f5f9}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
caption{text-align:left;font-weight:600;padding:4px 0;color:#374151}
.key{font-family:ui-monospace,monospace;font-size:12px;color:#374151}
.flag{background:#fef3c7;border:1px solid #f59e0b;padding:6px 10px;border-radius:4px;margin:8px 0}
table.reported{border:2px dashed #a855f7}table.reported td{white-space:nowrap}table.reported th{background:#f3e8ff}
tr.reported td:first-child{color:#7e22ce;font-weight:700;text-transform:uppercase;font-size:11px}
.badge{display:inline-block;background:#7e22ce;color:#fff;border-radius:3px;padding:0 6px;font-size:11px}
.scroll{overflow-x:auto}svg.chart{background:#fff;border:1px solid #e5e7eb;margin:4px 0 12px}
svg .grid{stroke:#e5e7eb}svg .whisker{stroke:#111827;stroke-width:1.4}svg text{font-size:11px;fill:#374151}
svg .chart-title{font-weight:600;font-size:12px}nav a{margin-right:12px}
"""


def _cell(cell: Cell, header: bool = False) -> str:
    tag = "th" if header else "td"
    attrs = ' class="num"' if cell.numeric and not header else ""
    if cell.metric and cell.run is not None:
        attrs += (f' data-run="{escape(cell.run)}" data-metric="{escape(cell.metric)}"'
                  f' data-value="{cell.value!r}"')
    if cell.tooltip:
        attrs += f' title="{escape(cell.tooltip)}"'
    return f"<{tag}{attrs}>{escape(cell.text)}</{tag}>"


def table_html(table: Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    body = []
    for index, row in enumerate(table.rows):
        css = table.row_classes[index] if index < len(table.row_classes) else ""
        body.append(f'<tr class="{css}">' + "".join(_cell(c) for c in row) + "</tr>")
    return (f'<div class="scroll"><table class="{table.kind}" data-kind="{table.kind}">'
            f"<caption>{escape(table.caption)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>")


def _key_html(board: Board) -> str:
    key = board.key
    parts = [f"env version {key.get('env_version')}", f"data {fmt.short_fp(key.get('data_fingerprint'))}",
             f"split {fmt.short_fp(key.get('split_fingerprint'))}",
             f"tasks {fmt.short_fp(key.get('tasks_fingerprint'))} ({board.rows[0].summary['tasks']} tasks)",
             f"max steps {key.get('max_steps')}"]
    return f'<p class="key" title="{escape(repr(key))}">{escape(" · ".join(parts))}</p>'


def _flag_html(board: Board) -> str:
    if not board.conflicts:
        return ""
    return (f'<p class="flag" data-flag="mismatch">⚠ {board.variants} boards exist for {escape(board.env)} / '
            f'{escape(board.split)}: their runs differ in <b>{escape(", ".join(board.conflicts))}</b>, so '
            "they are not ranked together.</p>")


def _board_html(board: Board) -> str:
    bars = [Bar(row.label, row.summary["success_rate"] or 0.0, *(row.summary["ci95"].get("success_rate") or (None, None)))
            for row in board.rows]
    return (f'<section class="board" id="{escape(board.anchor)}"><h3>{escape(board.title)}</h3>'
            + _key_html(board) + _flag_html(board) + table_html(board_table(board))
            + bar_chart(bars, f"{board.title}: success % with 95% CI")
            + table_html(family_table(board))
            + f"<details><summary>Run metadata</summary>{table_html(metadata_table(board))}</details>"
            + "</section>")


def _curves_html(env: EnvReport) -> str:
    if not env.curves:
        return ""
    charts = "".join(line_chart(curve.series(), f"{curve.label}: validation success % by update")
                     for curve in env.curves)
    return f"<h3>Learning curves</h3>{charts}"


def _reported_html(env: EnvReport) -> str:
    if not env.reported:
        return ""
    return ('<h3>Reported in papers <span class="badge">reported</span></h3>'
            '<p class="muted">Copied from the sources named in each row; not measured by this harness, '
            "on other checkpoints and settings. Percentages as printed.</p>"
            + "".join(table_html(t) for t in reported_tables(env.reported)))


def _env_html(env: EnvReport) -> str:
    return (f'<section class="env" id="env-{escape(env.env)}"><h2>{escape(env.env)}</h2>'
            + table_html(generalization_table(env.section))
            + "".join(_board_html(board) for board in env.section.boards)
            + _curves_html(env) + _reported_html(env) + "</section>")


def render_html(report: Report) -> str:
    nav = "".join(f'<a href="#env-{escape(e.env)}">{escape(e.env)}</a>' for e in report.envs)
    legend = ("<p class=\"legend\"><b>Measured</b> rows are runs in this report, scored from their "
              "episode records; intervals are 95% bootstrap CIs over tasks. Rows share a board only "
              "when env version, data, split and task fingerprints and the step budget all match. "
              "<span class=\"badge\">reported</span> rows are numbers copied from papers, shown "
              "in separate tables.</p>")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>{escape(report.title)}</title>"
            f"<style>{CSS}</style></head><body><main><h1>{escape(report.title)}</h1>"
            f"<p class=\"muted\">{len(report.runs)} runs · built {escape(report.generated)}</p>"
            f"<nav>{nav}</nav>{legend}" + "".join(_env_html(e) for e in report.envs)
            + "</main></body></html>\n")
