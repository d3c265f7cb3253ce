"""Tables: boards and reported rows laid out as headers + cells, for every renderer.

Rules: a measured cell keeps the raw number it shows (``value``, a fraction for rates) and the
metric and run it belongs to, so a reader (or a test) can check the page against ``summary.json``;
reported tables are separate tables whose every row is marked ``reported``; fingerprints are shown
short with the full value as a tooltip.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from seed_gym.leaderboards import formatting as fmt
from seed_gym.leaderboards.boards import Board, EnvSection, Row
from seed_gym.leaderboards.reference import ReferenceRow


@dataclass(frozen=True)
class Cell:
    text: str
    value: float | None = None
    metric: str | None = None
    run: str | None = None
    tooltip: str | None = None
    numeric: bool = False


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
    text = fmt.metric_value(value, is_rate)
    if ci:
        text += " " + fmt.interval(ci, is_rate)
    return Cell(text, value=value, metric=metric, run=str(row.run.path), numeric=True)


def _fp(value: object) -> Cell:
    return Cell(fmt.short_fp(value), tooltip=str(value))


def board_table(board: Board) -> Table:
    """Ranked rows: who, then every metric with its 95% interval."""
    headers = ["#", "Submission", "Model", "Episodes", *[f"{h} (95% CI)" for _, h, _ in fmt.METRIC_COLUMNS]]
    rows = [[Cell(str(row.rank), numeric=True), Cell(row.label), Cell(row.run.submission.model),
             Cell(str(row.summary["episodes"]), value=row.summary["episodes"], metric="episodes",
                  run=str(row.run.path), numeric=True),
             *[_metric_cell(row, key, is_rate) for key, _, is_rate in fmt.METRIC_COLUMNS]]
            for row in board.rows]
    return Table(headers, rows, caption=f"{board.title}: measured")


def metadata_table(board: Board) -> Table:
    """What each row is: agent spec, model, env version, fingerprints, provenance, submitter."""
    headers = ["Submission", "Agent spec", "Model", "Env version", "Data fp", "Split fp", "Tasks fp",
               "Seed", "Group", "Commit", "Submitted by", "Date"]
    rows = []
    for row in board.rows:
        identity, sub = row.run.identity, row.run.submission
        commit = row.run.provenance.get("git_commit") or fmt.DASH
        rows.append([Cell(row.label), Cell(identity["agent"]), Cell(sub.model), Cell(str(identity.get("env_version"))),
                     _fp(identity.get("data_fingerprint")), _fp(identity.get("split_fingerprint")),
                     _fp(identity.get("tasks_fingerprint")), Cell(str(identity.get("seed"))),
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
        cells = [Cell(row.label)]
        for family in families:
            cell = row.families.get(family)
            if cell is None:
                cells.append(Cell(fmt.DASH, numeric=True))
                continue
            text = f"{fmt.pct(cell.success_rate)} {fmt.interval(cell.ci95, True)}"
            cells.append(Cell(text, value=cell.success_rate, metric=f"family:{family}", run=str(row.run.path),
                              tooltip=f"{family}: {cell.episodes} episodes", numeric=True))
        macro = row.summary.get("macro_success_rate")
        cells.append(Cell(fmt.pct(macro), value=macro, metric="macro_success_rate",
                          run=str(row.run.path), numeric=True))
        rows.append(cells)
    return Table(headers, rows, caption=f"{board.title}: success % per family")


def generalization_table(section: EnvSection) -> Table:
    """Seen vs unseen (and other splits) side by side: one column per board, one row per label."""
    headers = ["Submission", *[f"{b.split}" + (f" v{b.variant}" if b.variants > 1 else "")
                               + f" · {fmt.short_fp(b.key.get('split_fingerprint'))}" for b in section.boards]]
    rows = []
    for label in section.labels:
        cells = [Cell(label)]
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
