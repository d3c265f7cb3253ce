"""``seed-gym leaderboard build``, ``seed-gym compare`` and ``seed-gym view`` (a ``seed_gym.commands`` module).

Heavy work is imported inside the commands so ``seed-gym --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer


def register(app: typer.Typer, data_app: typer.Typer, bench_app: typer.Typer, serve_app: typer.Typer) -> None:
    leaderboard_app = typer.Typer(no_args_is_help=True, help="Leaderboard reports from run directories.")
    leaderboard_app.command("build")(build_command)
    app.add_typer(leaderboard_app, name="leaderboard")
    app.command("compare")(compare_command)
    app.command("view")(view_command)


def view_command(
    run: Path = typer.Argument(..., help="A run directory, or a folder holding run directories (eval --out, a training run)."),
    out: Optional[Path] = typer.Option(None, help="The HTML file to write (default RUN/view.html)."),
    title: Optional[str] = typer.Option(None, help="Page title."),
) -> None:
    """Write one offline HTML page to browse a run's episodes step by step, with filters."""
    from seed_gym.commands import console
    from seed_gym.leaderboards.episodes_view import write_view

    page = write_view(run, out, title)
    console.print(f"{page} (open it in a browser; one file, no network)", soft_wrap=True)


def build_command(
    runs: list[Path] = typer.Argument(..., help="Run dirs, submission folders, or folders holding them."),
    out: Path = typer.Option(Path("leaderboard"), help="Folder for index.html, README.md, leaderboard.json."),
    title: str = typer.Option("seed-gym leaderboard", help="Page title."),
    reference: bool = typer.Option(True, help="Include the numbers reported in papers (labelled 'reported')."),
    views: bool = typer.Option(True, help="Also write each run's episode page (runs/*.html), linked from its rows."),
) -> None:
    """Build the static leaderboard (HTML + Markdown) from runs; broken submissions are listed."""
    from seed_gym.commands import console
    from seed_gym.leaderboards.report import build_report, write_report

    report = build_report(runs, title=title, with_reference=reference, with_views=views)
    files = write_report(report, out)
    boards = [board for env in report.envs for board in env.section.boards]
    for board in boards:
        flag = f"  [yellow]differs in {', '.join(board.conflicts)}[/]" if board.conflicts else ""
        console.print(f"{board.title}: {len(board.rows)} rows{flag}")
    console.print(f"{len(report.runs)} runs, {len(boards)} boards -> " + ", ".join(str(f) for f in files),
                  soft_wrap=True)


def compare_command(
    run_a: Path = typer.Argument(..., help="Run directory A (the baseline)."),
    run_b: Path = typer.Argument(..., help="Run directory B (compared against A)."),
    allow_mismatch: bool = typer.Option(False, help="Compare even when fingerprints or versions differ."),
    show: int = typer.Option(20, help="List at most this many differing tasks."),
) -> None:
    """Paired comparison of B vs A on their shared tasks: difference, 95% CI, McNemar exact test."""
    from seed_gym.commands import console
    from seed_gym.leaderboards.compare import compare_runs
    from seed_gym.leaderboards.runs import load_run

    result = compare_runs(load_run(run_a), load_run(run_b), allow_mismatch=allow_mismatch)
    console.print(comparison_table(result))
    if result.mismatches:
        console.print(f"[yellow]warning: the runs differ in {', '.join(result.mismatches)}[/]")
    if result.only_a or result.only_b:
        console.print(f"[dim]not paired: {result.only_a} tasks only in A, {result.only_b} only in B[/]")
    console.print(f"{len(result.differing)} tasks differ" + (":" if result.differing else ""))
    for diff in result.differing[:show]:
        console.print(f"  A {100 * diff.won_a:5.1f}%  B {100 * diff.won_b:5.1f}%  [{diff.family}] {diff.task_id}",
                      markup=False, soft_wrap=True)
    if len(result.differing) > show:
        console.print(f"  ... and {len(result.differing) - show} more")


def comparison_table(result: Any) -> Any:
    from rich.table import Table

    from seed_gym.leaderboards.tables import comparison_measures

    table = Table(title=f"paired: B = {result.label_b}  vs  A = {result.label_a}")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for measure, value in comparison_measures(result):
        table.add_row(measure, value)
    return table
