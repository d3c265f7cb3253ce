"""The static HTML page: one self-contained file, inline CSS and SVG, no scripts, no network.

Layout: title and legend; per env a section with the seen-vs-unseen table, then per board the parts
of :data:`BOARD_PARTS` (its key, a flag naming what differs when other boards of the same split
exist, the ranked table with the paired test against the best row, a success chart, the per-family
table, the model agents' usage, run metadata); then the env's :data:`ENV_PARTS` (learning curves, the training runs'
per-phase costs, the reported rows in their own, visibly different tables, folded by default). A part is a function of a
board (or an env report) returning HTML, "" to show nothing, so new parts plug in by being added to
those tuples. Measured number cells carry ``data-run``, ``data-metric`` and ``data-value`` (the raw
fraction) so the page can be checked against ``summary.json``. Everything fits a 1,280 px window:
long labels are shortened with the full text on hover, and chart titles are HTML captions that wrap.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

from seed_gym.leaderboards import formatting as fmt
from seed_gym.leaderboards.boards import Board
from seed_gym.leaderboards.report import EnvReport, Report
from seed_gym.leaderboards.svg import Bar, bar_chart, line_chart
from seed_gym.leaderboards.tables import Cell, Table, board_table, family_table, generalization_table, \
    metadata_table, reported_tables, usage_table
from seed_gym.leaderboards.training_costs import cost_table

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
nav a{margin-right:12px}figure{margin:4px 0 12px}figcaption{font-weight:600;font-size:13px;color:#374151;max-width:560px}
figure svg.chart{margin:2px 0 0}details.reported-papers>summary{cursor:pointer;font-weight:600;font-size:1.1em;margin:24px 0 8px}
.charts{display:flex;flex-wrap:wrap;gap:0 16px}span.detail{display:block;font-size:11px;color:#6b7280}td a{color:#1d4ed8;text-decoration:none}td a:hover{text-decoration:underline}
"""


def _cell(cell: Cell, header: bool = False) -> str:
    tag = "th" if header else "td"
    attrs = ' class="num"' if cell.numeric and not header else ""
    if cell.metric and cell.run is not None:
        attrs += (f' data-run="{escape(cell.run)}" data-metric="{escape(cell.metric)}"'
                  f' data-value="{cell.value!r}"')
    if cell.tooltip:
        attrs += f' title="{escape(cell.tooltip)}"'
    text = escape(cell.text)
    if cell.href:
        text = f'<a href="{escape(cell.href)}">{text}</a>'
    if cell.detail:  # its own line in the cell: the text node keeps "text detail" for readers of the source
        text += f' <span class="detail">{escape(cell.detail)}</span>'
    return f"<{tag}{attrs}>{text}</{tag}>"


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
            f'{escape(board.split)}: their runs differ in <b>{escape(", ".join(board.conflicts))}</b> (this one: '
            f"{escape(board.difference)}), so they are not ranked together.</p>")


def figure(caption: str, svg: str, **data: str) -> str:
    """A chart with its caption; ``data`` become ``data-*`` attributes (what the chart shows, for readers
    and tests)."""
    attrs = "".join(f' data-{key}="{escape(value)}"' for key, value in data.items())
    return f"<figure{attrs}><figcaption>{escape(caption)}</figcaption>{svg}</figure>"


def html_page(title: str, body: str) -> str:
    """A whole self-contained page: the shared stylesheet inline, ``body`` inside ``<main>``."""
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>{escape(title)}</title>"
            f"<style>{CSS}</style></head><body><main><h1>{escape(title)}</h1>{body}</main></body></html>\n")


def _title_html(board: Board) -> str:
    return f"<h3>{escape(board.title)}</h3>"


def _ranked_html(board: Board) -> str:
    return table_html(board_table(board))


def _chart_html(board: Board) -> str:
    bars = [Bar(row.label, row.summary["success_rate"] or 0.0, *(row.summary["ci95"].get("success_rate") or (None, None)))
            for row in board.rows]
    title = f"{board.title}: success % with 95% CI"
    return figure(title, bar_chart(bars, title))


def _family_html(board: Board) -> str:
    return table_html(family_table(board))


def _usage_html(board: Board) -> str:
    table = usage_table(board)
    return table_html(table) if table else ""


def _metadata_html(board: Board) -> str:
    return f"<details><summary>Run metadata</summary>{table_html(metadata_table(board))}</details>"


#: What each board shows, in order; each part maps a board to HTML ("" for nothing).
BOARD_PARTS: tuple[Callable[[Board], str], ...] = (
    _title_html, _key_html, _flag_html, _ranked_html, _chart_html, _family_html, _usage_html, _metadata_html)


def _board_html(board: Board) -> str:
    return (f'<section class="board" id="{escape(board.anchor)}">' + "".join(part(board) for part in BOARD_PARTS)
            + "</section>")


def _curves_html(env: EnvReport) -> str:
    if not env.curves:
        return ""
    charts = "".join(figure(f"{curve.label}: validation success % by update",
                            line_chart(curve.series(), f"{curve.label}: validation success % by update"))
                    for curve in env.curves)
    return f"<h3>Learning curves</h3>{charts}"


def _costs_html(env: EnvReport) -> str:
    if not env.costs:
        return ""
    return "<h3>Training cost per phase</h3>" + "".join(table_html(cost_table(cost)) for cost in env.costs)


def _reported_html(env: EnvReport) -> str:
    if not env.reported:
        return ""
    return ('<details class="reported-papers"><summary>Reported in papers <span class="badge">reported</span> '
            f'<span class="muted">({len(env.reported)} rows, folded)</span></summary>'
            '<p class="muted">Copied from the sources named in each row; not measured by this harness, '
            "on other checkpoints and settings. Percentages as printed.</p>"
            + "".join(table_html(t) for t in reported_tables(env.reported)) + "</details>")


#: What each env section shows after its boards; each part maps an env report to HTML.
ENV_PARTS: tuple[Callable[[EnvReport], str], ...] = (_curves_html, _costs_html, _reported_html)


def _env_html(env: EnvReport) -> str:
    return (f'<section class="env" id="env-{escape(env.env)}"><h2>{escape(env.env)}</h2>'
            + table_html(generalization_table(env.section))
            + "".join(_board_html(board) for board in env.section.boards)
            + "".join(part(env) for part in ENV_PARTS) + "</section>")


def render_html(report: Report) -> str:
    nav = "".join(f'<a href="#env-{escape(e.env)}">{escape(e.env)}</a>' for e in report.envs)
    legend = ("<p class=\"legend\"><b>Measured</b> rows are runs in this report, scored from their "
              "episode records; success and invalid-action intervals are 95% Wilson intervals (over effective "
              "episodes or steps when a task has several), other intervals 95% bootstrap CIs over tasks; n is a "
              "cell's episode count; each row is tested against the board's best row on their paired episodes "
              "(Newcombe's paired interval of the difference, McNemar exact p). "
              "A row's name links to its episodes. Rows share a board only "
              "when env version, data, split and task fingerprints and the step budget all match. "
              "<span class=\"badge\">reported</span> rows are numbers copied from papers, shown "
              "in separate tables.</p>")
    return html_page(report.title, f"<p class=\"muted\">{len(report.runs)} runs · built {escape(report.generated)}</p>"
                     f"<nav>{nav}</nav>{legend}" + "".join(_env_html(e) for e in report.envs))
