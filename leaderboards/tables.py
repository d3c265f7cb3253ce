"""Tables: boards and reported rows laid out as headers + cells, for every renderer.

Rules: a measured cell keeps the raw number it shows (``value``, a fraction for rates) and the
metric and run it belongs to, so a reader (or a test) can check the page against ``summary.json``;
reported tables are separate tables whose every row is marked ``reported``; fingerprints and long
labels are shown short with the full value as a tooltip; a row's label links to its episode page
(``seed-gym view``) when the report wrote one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from seed_gym.leaderboards import formatting as fmt
from seed_gym.leaderboards.boards import Board, EnvSection, Row
from seed_gym.leaderboards.compare import PairedComparison
from seed_gym.leaderboards.reference import ReferenceRow


@dataclass(frozen=True)
class Cell:
    text: str
    value: float | None = None
    metric: str | None = None
    run: str | None = None
    tooltip: str | None = None
    numeric: bool = False
    href: str | None = None
    detail: str = ""  # shown after the text, smaller (an interval, a count): ``text detail`` in plain text


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Cell]]
    kind: str = "measured"  # or "reported"
    caption: str = ""
    row_classes: list[str] = field(default_factory=list)


def _metric_cell(row: Row, metric: str, is_rate: bool) -> Cell:
    value = row.summary.get(metric)
    ci = row.summary.get("ci95", {}).get(metric)
    return Cell(fmt.metric_value(value, is_rate), value=value, metric=metric, run=str(row.run.path), numeric=True,
                detail=fmt.interval(ci, is_rate) if ci else "")


def _short(text: str, limit: int = 40) -> Cell:
    return Cell(fmt.short_label(text, limit), tooltip=text if fmt.short_label(text, limit) != text else None)


def label_cell(row: Row) -> Cell:
    """The row's name, shortened (full name on hover), linking to its episode page if there is one."""
    return Cell(fmt.short_label(row.label), tooltip=row.label, href=row.view)


def _paired_cell(row: Row) -> Cell:
    result = row.vs_best
    if row.rank == 1:
        return Cell("best", tooltip="the row the others are compared with")
    if result is None:
        return Cell(fmt.DASH, tooltip="no shared episodes to pair")
    low, high = result.success_diff_ci
    return Cell(fmt.signed_pct(result.success_diff),
                detail=f"[{fmt.signed_pct(low)}, {fmt.signed_pct(high)}] p {fmt.p_value(result.p_value)}",
                value=result.p_value, metric="paired_p", run=str(row.run.path),
                numeric=True, tooltip=f"success of this row minus #1 over {result.pairs} paired episodes "
                f"({result.tasks} tasks), 95% Newcombe paired score interval; McNemar exact p "
                f"({result.b_only_won} won only here, {result.a_only_won} only by #1)")


def board_table(board: Board) -> Table:
    """Ranked rows: who, every metric with its 95% interval, and a paired test against the best row."""
    headers = ["#", "Submission", "Model", "Episodes", *[f"{h} (95% CI)" for _, h, _ in fmt.METRIC_COLUMNS],
               "Success vs #1 (paired)"]
    rows = [[Cell(str(row.rank), numeric=True), label_cell(row), _short(row.run.submission.model, 28),
             Cell(str(row.summary["episodes"]), value=row.summary["episodes"], metric="episodes",
                  run=str(row.run.path), numeric=True),
             *[_metric_cell(row, key, is_rate) for key, _, is_rate in fmt.METRIC_COLUMNS], _paired_cell(row)]
            for row in board.rows]
    return Table(headers, rows, caption=f"{board.title}: measured")


def usage_table(board: Board) -> Table | None:
    """Tokens, latency and format validity per step, for the rows of model agents (None if none)."""
    rows = [row for row in board.rows if row.usage is not None]
    if not rows:
        return None
    headers = ["Submission", "Steps", "Generated tokens / step", "Prompt tokens / step", "Latency / step (s)",
               "Valid format %"]
    body = []
    for row in rows:
        usage = row.usage
        assert usage is not None
        run = str(row.run.path)
        body.append([label_cell(row), Cell(str(usage.steps), numeric=True),
                     Cell(fmt.number(usage.completion_tokens), value=usage.completion_tokens,
                          metric="completion_tokens_per_step", run=run, numeric=True),
                     Cell(fmt.number(usage.prompt_tokens), value=usage.prompt_tokens, metric="prompt_tokens_per_step",
                          run=run, numeric=True),
                     Cell(fmt.DASH if usage.latency_s is None else f"{usage.latency_s:.3f}", value=usage.latency_s,
                          metric="latency_s_per_step", run=run, numeric=True),
                     Cell(fmt.pct(usage.format_valid_rate), value=usage.format_valid_rate, metric="format_valid_rate",
                          run=run, numeric=True)])
    return Table(headers, body, caption=f"{board.title}: model agents' tokens, latency and format validity")


def metadata_table(board: Board) -> Table:
    """What each row is: agent spec, model, seed, group size, provenance, submitter. (The env version
    and fingerprints are the board's key, the same for every row: the board's key line shows them.)"""
    headers = ["Submission", "Agent spec", "Model", "Seed", "Group", "Commit", "Submitted by", "Date"]
    rows = []
    for row in board.rows:
        identity, sub = row.run.identity, row.run.submission
        commit = row.run.provenance.get("git_commit") or fmt.DASH
        rows.append([label_cell(row), _short(identity["agent"], 48), _short(sub.model, 28), Cell(str(identity.get("seed"))),
                     Cell(str(identity.get("group"))), Cell(commit[:10], tooltip=commit),
                     Cell(sub.contact or "local run (no submission.json)"),
                     Cell(sub.date or row.run.provenance.get("created", fmt.DASH)[:10])])
    return Table(headers, rows, caption=f"{board.title}: run metadata")


def family_table(board: Board) -> Table:
    """Success per family (with its own interval and episode count) and the macro average."""
    families = board.families
    headers = ["Submission", *map(fmt.short_family, families), "Macro"]
    rows = []
    for row in board.rows:
        cells = [label_cell(row)]
        for family in families:
            cell = row.families.get(family)
            if cell is None:
                cells.append(Cell(fmt.DASH, numeric=True))
                continue
            cells.append(Cell(fmt.pct(cell.success_rate), detail=f"{fmt.interval(cell.ci95, True)} {fmt.count(cell.episodes)}",
                              value=cell.success_rate, metric=f"family:{family}", run=str(row.run.path),
                              tooltip=f"{family}: {cell.episodes} episodes", numeric=True))
        macro = row.summary.get("macro_success_rate")
        cells.append(Cell(fmt.pct(macro), value=macro, metric="macro_success_rate",
                          run=str(row.run.path), numeric=True))
        rows.append(cells)
    return Table(headers, rows, caption=f"{board.title}: success % per family")


def generalization_table(section: EnvSection) -> Table:
    """Seen vs unseen (and other splits) side by side: one column per board, one row per label."""
    headers = ["Submission", *[f"{b.split}" + (f" ({b.difference})" if b.difference else "")
                               + f" · {fmt.short_fp(b.key.get('split_fingerprint'))}" for b in section.boards]]
    rows = []
    for label in section.labels:
        cells = [Cell(fmt.short_label(label), tooltip=label)]
        for board in section.boards:
            row = section.cell(board, label)
            cells.append(_metric_cell(row, "success_rate", True) if row else Cell(fmt.DASH, numeric=True))
        rows.append(cells)
    return Table(headers, rows, caption=f"{section.env}: success % (95% CI) by split")


def reported_tables(rows: Sequence[ReferenceRow]) -> list[Table]:
    """Reported numbers per split: an aggregate table, then a per-family table for the rows that
    report families. Every row is labelled ``reported`` with its source and status tag."""
    tables = []
    for split in dict.fromkeys(row.split for row in rows):
        in_split = [row for row in rows if row.split == split]
        aggregate = [row for row in in_split if not row.families]
        by_family = [row for row in in_split if row.families]
        if aggregate:
            tables.append(_reported_aggregate(aggregate, split))
        if by_family:
            tables.append(_reported_families(by_family, split))
    return tables


def _reported_aggregate(rows: Sequence[ReferenceRow], split: str) -> Table:
    has_score = any("mean_score" in row.metrics for row in rows)
    headers = ["", "Method", "Backbone", "Success %", *(["Score %"] if has_score else []),
               "Source", "Tag", "Setting"]
    body = []
    for row in rows:
        cells = [Cell("reported"), Cell(row.method), Cell(row.backbone),
                 Cell(fmt.reported(row.metrics.get("success_rate")), numeric=True)]
        if has_score:
            cells.append(Cell(fmt.reported(row.metrics.get("mean_score")), numeric=True))
        body.append(cells + _source_cells(row))
    return Table(headers, body, kind="reported", caption=f"Reported · {split} (not measured here)",
                 row_classes=["reported"] * len(body))


def _reported_families(rows: Sequence[ReferenceRow], split: str) -> Table:
    families = list(dict.fromkeys(f for row in rows for f in row.families))
    headers = ["", "Method", "Backbone", *map(fmt.short_family, families), "Avg", "Source", "Tag", "Setting"]
    body = [[Cell("reported"), Cell(row.method), Cell(row.backbone),
             *[Cell(fmt.reported(row.families.get(f)), numeric=True) for f in families],
             Cell(fmt.reported(row.metrics.get("success_rate")), numeric=True), *_source_cells(row)]
            for row in rows]
    return Table(headers, body, kind="reported",
                 caption=f"Reported · {split}: success % per family (not measured here)",
                 row_classes=["reported"] * len(body))


def _source_cells(row: ReferenceRow) -> list[Cell]:
    return [Cell(row.source), Cell(row.tag), Cell(row.setting or fmt.DASH)]


def comparison_measures(result: PairedComparison) -> list[tuple[str, str]]:
    """(measure, value) lines of a paired comparison, as ``seed-gym compare`` prints them."""
    def diff(value: float, ci: Sequence[float]) -> str:
        return f"{fmt.signed_pct(value)} [{fmt.signed_pct(ci[0])}, {fmt.signed_pct(ci[1])}]"

    return [("shared tasks / episode pairs", f"{result.tasks} / {result.pairs}"),
            ("success % A", fmt.pct(result.success_a)), ("success % B", fmt.pct(result.success_b)),
            ("success diff B-A (95% CI)", diff(result.success_diff, result.success_diff_ci)),
            ("score diff B-A (95% CI)", diff(result.score_diff, result.score_diff_ci)),
            ("discordant: only A won / only B won", f"{result.a_only_won} / {result.b_only_won}"),
            ("McNemar exact p", fmt.p_value(result.p_value))]


def comparison_table(results: Mapping[str, PairedComparison], caption: str) -> Table:
    """``seed-gym compare``'s measures side by side: one column per named comparison."""
    columns = list(results.values())
    measures = [comparison_measures(result) for result in columns]
    rows = [[Cell(name)] + [Cell(lines[index][1], numeric=True) for lines in measures]
            for index, (name, _) in enumerate(measures[0] if measures else [])]
    return Table(["measure", *results], rows, kind="comparison", caption=caption)
