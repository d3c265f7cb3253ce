"""The ``seed-gym`` command line (typer + rich)."""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from seed_gym import progress as progress_hooks
from seed_gym.pools import DEFAULT_CALL_TIMEOUT

app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_show_locals=False,
                  help="seed-gym: text envs, one rollout harness, scoring and reports for agentic RL.")
data_app = typer.Typer(no_args_is_help=True, help="Generate or check the offline data of an env.")
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks that print ratios against a baseline from the same run.")
serve_app = typer.Typer(no_args_is_help=True, help="Run a server (bound to 127.0.0.1 by default).")
app.add_typer(data_app, name="data")
app.add_typer(bench_app, name="bench")
app.add_typer(serve_app, name="serve")

#: Modules that add commands: each has ``register(app, data_app, bench_app, serve_app)``. An env
#: or feature package keeps its commands next to its code; a missing optional part is skipped.
COMMAND_MODULES = (
    "seed_gym.envs.webshop.cli",
    "seed_gym.envs.searchqa.cli",
    "seed_gym.leaderboards.cli",
    "seed_gym.agents.cli",
    "seed_gym.training.cli",
)

console = Console()
err_console = Console(stderr=True)


def main() -> None:
    from seed_gym.core import SeedGymError

    try:
        app()
    except SeedGymError as error:
        from rich.markup import escape

        err_console.print(f"[bold red]error:[/] {escape(str(error))}")  # "seed-gym[hf]" is not markup
        raise SystemExit(2) from None


def _new_progress() -> Progress:
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=err_console, transient=False)


@contextmanager
def _library_progress(bar: Progress) -> Iterator[None]:
    """Show library progress reports (data generation, index builds) as bars on ``bar``."""
    tasks: dict[str, Any] = {}

    def draw(description: str, done: int, total: int) -> None:
        if description not in tasks:
            tasks[description] = bar.add_task(description, total=total)
        bar.update(tasks[description], completed=done, total=total)

    with progress_hooks.installed(draw):
        yield


def _parse_env_args(pairs: list[str]) -> dict[str, Any]:
    """``key=value`` pairs; values are read as JSON when they parse (numbers, bools, lists)."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise typer.BadParameter(f"--env-arg expects key=value, got {pair!r}")
        try:
            kwargs[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key.strip()] = value
    return kwargs


# -- list ------------------------------------------------------------------------------------
@app.command("list")
def list_command() -> None:
    """List the registered environments (built-in and plugins) and agent kinds."""
    from seed_gym.agent import AGENT_KINDS
    from seed_gym.registry import list_envs

    table = Table(title="environments")
    for column in ("env", "gymnasium id", "description"):
        table.add_column(column)
    for spec in list_envs():
        table.add_row(spec.env_id, spec.gym_id or "", spec.description)
    console.print(table)
    console.print("agent kinds: " + ", ".join(sorted(AGENT_KINDS)))


# -- data ------------------------------------------------------------------------------------
@data_app.command("alfworld")
def data_alfworld(
    out: Optional[Path] = typer.Option(None, help="Folder to write (holds json_2.1.1/); default: the cache the env reads."),
    seed: int = typer.Option(0, help="Generator seed."),
    split: list[str] = typer.Option(["train", "seen", "unseen"], help="Splits to generate (repeatable)."),
    size: Optional[int] = typer.Option(None, help="Games per split (default: train 2420, seen 140, unseen 134)."),
    workers: Optional[int] = typer.Option(None, help="Parallel worker processes (default: all cores)."),
    check_engine: Optional[Path] = typer.Option(None, help="Generate nothing: play every game of --split under this json_2.1.1 tree on the stock and the fast engine and report every difference (exit 1 if any)."),
    check_steps: int = typer.Option(15, help="With --check-engine: seeded random admissible steps per random sequence."),
) -> None:
    """Generate ALFWorld games in the official json_2.1.1 layout, each verified solvable."""
    from seed_gym.envs.alfworld.data import GeneratedGames, collect_split, SPLIT_DIRS

    if check_engine is not None:
        from seed_gym.envs.alfworld.check import check_engine as run_check

        with _new_progress() as bar:
            task = bar.add_task("stock vs fast engine", total=None)
            report = run_check(check_engine, splits=list(split), workers=workers or 1, random_steps=check_steps,
                               on_game=lambda r: bar.advance(task))
        for line in report["details"]:
            console.print(f"[red]{line}[/]")
        console.print(f"{report['games']} games, {report['compared_states']} states compared, "
                      f"{report['differences']} differences (splits {', '.join(report['splits'])})")
        if report["differences"] or not report["games"]:
            raise typer.Exit(1)
        return

    sizes = {name: size for name in split} if size else None
    source = GeneratedGames(out, seed=seed, sizes=sizes, workers=workers)
    with _new_progress() as bar, _library_progress(bar):
        for name in split:
            source.ensure(name)
    table = Table(title=f"ALFWorld generated games (seed {seed})")
    for column in ("split", "folder", "games", "fingerprint"):
        table.add_column(column)
    task_set = source.task_set()
    for name in split:
        table.add_row(name, SPLIT_DIRS[name], str(len(collect_split(source.root, SPLIT_DIRS[name]))),
                      task_set.split(name).fingerprint)
    console.print(table)
    console.print(f"written under {source.root}")


# -- eval ------------------------------------------------------------------------------------
@app.command("eval")
def eval_command(
    agent: list[str] = typer.Option(..., "--agent", "-a", help="Agent spec kind[:target][@k=v,...]; repeat to compare."),
    env: str = typer.Option("alfworld", help="Environment id (see `seed-gym list`)."),
    split: str = typer.Option("unseen", help="Split: train, seen, unseen (or an env-specific one)."),
    n: Optional[int] = typer.Option(None, "-n", help="Evaluate the first N tasks of the split (default: all)."),
    group: int = typer.Option(1, help="Episodes per task (group size G), all from an identical start."),
    workers: int = typer.Option(max(1, os.cpu_count() or 1), help="Env worker processes."),
    live_episodes: Optional[int] = typer.Option(None, help="Episodes in play at once, spread over the workers (default: 4 per worker)."),
    backend: str = typer.Option("process", help="Env backend: process or inline."),
    call_timeout: float = typer.Option(DEFAULT_CALL_TIMEOUT, help="Seconds an env reset or step may take before its worker is killed and the episode retried (process backend)."),
    recycle_after: Optional[int] = typer.Option(None, help="Replace each env worker after this many episodes (a safety valve for engines that leak; process backend)."),
    max_steps: Optional[int] = typer.Option(None, help="Step budget per episode (env default when omitted)."),
    seed: int = typer.Option(0, help="Run seed: env seeds, agent sampling, generated data."),
    env_arg: list[str] = typer.Option([], help="Env constructor argument key=value (repeatable), e.g. data=/path."),
    out: Optional[Path] = typer.Option(None, help="Run folder; one sub-folder per agent. Same --out resumes."),
    overwrite: bool = typer.Option(False, help="Discard an existing run in --out instead of resuming it."),
) -> None:
    """Evaluate one or more agents on the same tasks; prints a comparison table."""
    from seed_gym.agent import AgentSpec
    from seed_gym.evaluate import EvalConfig, evaluate

    env_kwargs = _parse_env_args(env_arg)
    specs = [AgentSpec.parse(a) for a in agent]
    base = out or Path("runs") / f"{env}-{split}"
    summaries = []
    with _new_progress() as bar, _library_progress(bar):
        for spec in specs:
            config = EvalConfig(env=env, split=split, agent=str(spec), out=base / spec.slug, n=n,
                                group=group, seed=seed, max_steps=max_steps, backend=backend,
                                workers=workers, live_episodes=live_episodes, env_kwargs=env_kwargs,
                                call_timeout=call_timeout, recycle_after=recycle_after)
            task = bar.add_task(f"{spec} on {env}/{split}", total=None)
            summaries.append(evaluate(config, overwrite=overwrite,
                                      on_progress=lambda d, t, task=task: bar.update(task, completed=d, total=t)))
    console.print(results_table(summaries))
    for summary in summaries:
        console.print(f"[dim]{summary['agent']}: {summary['run_dir']}[/]")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def results_table(summaries: list[dict[str, Any]]) -> Table:
    """Metrics as rows, one column per agent; per-family success below the overall block."""
    first = summaries[0]
    table = Table(title=f"{first['env']} / {first['split']}  (split {first['split_fingerprint']})")
    table.add_column("metric")
    for summary in summaries:
        table.add_column(summary["agent"], justify="right")

    def ci(summary: dict[str, Any], metric: str) -> str:
        low_high = summary.get("ci95", {}).get(metric)
        return f" [{_pct(low_high[0])}, {_pct(low_high[1])}]" if low_high else ""

    table.add_row("episodes", *[str(s["episodes"]) for s in summaries])
    table.add_row("success % (95% CI)", *[_pct(s["success_rate"]) + ci(s, "success_rate") for s in summaries])
    table.add_row("score %", *[_pct(s["mean_score"]) for s in summaries])
    table.add_row("steps", *["-" if s["mean_steps"] is None else f"{s['mean_steps']:.1f}" for s in summaries])
    table.add_row("invalid action %", *[_pct(s["invalid_action_rate"]) for s in summaries])
    if any(s["errors"] for s in summaries):
        table.add_row("errors", *[str(s["errors"]) for s in summaries])
    families = sorted({f for s in summaries for f in s["per_family"]})
    if families:
        table.add_section()
        for family in families:
            cells = []
            for s in summaries:
                row = s["per_family"].get(family)
                cells.append(f"{_pct(row['success_rate'])} (n={row['episodes']})" if row else "-")
            table.add_row(f"success % {family}", *cells)
        table.add_row("macro success %", *[_pct(s["macro_success_rate"]) for s in summaries])
    return table


# -- play ------------------------------------------------------------------------------------
@app.command("play")
def play(
    env: str = typer.Argument("alfworld", help="Environment id."),
    split: str = typer.Option("unseen", help="Split to draw the task from."),
    index: int = typer.Option(0, help="Task index within the split."),
    task: Optional[str] = typer.Option(None, help="Task id (overrides --index)."),
    seed: int = typer.Option(0),
    env_arg: list[str] = typer.Option([], help="Env constructor argument key=value (repeatable)."),
) -> None:
    """Play one episode yourself in the terminal. Type a command or its number; `quit` stops."""
    from seed_gym.agents.scripted import HumanAgent
    from seed_gym.registry import make

    instance = make(env, **_parse_env_args(env_arg))
    with _new_progress() as bar, _library_progress(bar):
        ids = instance.task_set().split(split).task_ids
    if not task and not 0 <= index < len(ids):
        raise typer.BadParameter(f"--index must be in [0, {len(ids)})")
    observation, info = instance.reset(seed=seed, options={"task_id": task or ids[index]})
    human = HumanAgent()
    total = 0.0
    while True:
        action = human.act(["play"], [observation], [info])[0]
        if action.strip().lower() in {"quit", "exit"}:
            break
        observation, reward, terminated, truncated, info = instance.step(action)
        total += reward
        if terminated or truncated:
            console.print(observation, markup=False)
            break
    verdict = "[green]won[/]" if info["won"] else "[red]not won[/]"
    console.print(f"{verdict} after {instance.elapsed_steps} steps, score {info['score']:.2f}")


# -- doctor ----------------------------------------------------------------------------------
@app.command("doctor")
def doctor() -> None:
    """Check the installation: packages, the ALFWorld engine, and where data is found."""
    from seed_gym.doctor import run_checks

    table = Table(title="seed-gym doctor")
    for column in ("check", "status", "detail"):
        table.add_column(column)
    failed = False
    for check in run_checks():
        failed |= check.status == "fail"
        colour = {"ok": "green", "fail": "red"}.get(check.status, "yellow")
        table.add_row(check.name, f"[{colour}]{check.status}[/]", check.detail)
    console.print(table)
    if failed:
        raise typer.Exit(1)


# -- bench -----------------------------------------------------------------------------------
@bench_app.command("alfworld")
def bench_alfworld(
    games: int = typer.Option(8, help="Games (from the split) in the benchmark."),
    steps: int = typer.Option(20, help="Steps per game (random admissible actions)."),
    split: str = typer.Option("unseen"),
    env_arg: list[str] = typer.Option([], help="Env constructor argument key=value (repeatable)."),
    out: Optional[Path] = typer.Option(None, help="Also write the results as JSON here."),
) -> None:
    """Stock and fast engine (1 and 2 workers) vs alfworld's AlfredTWEnv, same games, same run."""
    from seed_gym.envs.alfworld.bench import run_benchmark

    with _new_progress() as bar, _library_progress(bar):
        result = run_benchmark(games=games, steps=steps, split=split, env_kwargs=_parse_env_args(env_arg))
    table = Table(title=f"ALFWorld ({result['games']} games x 2 passes x {result['steps']} steps, same run)")
    for column in ("runner", "reset p50 s", "reset p50 s (seen)", "step p50 ms", "env-steps/s", "vs AlfredTWEnv"):
        table.add_column(column, justify="right" if column != "runner" else "left")
    for row in result["rows"]:
        table.add_row(row["runner"], f"{row['reset_p50_s']:.3f}", f"{row['reset_seen_p50_s']:.3f}",
                      f"{1000 * row['step_p50_s']:.1f}", f"{row['steps_per_s']:.1f}", f"{row['ratio']:.2f}x")
    console.print(table)
    if out:
        out.write_text(json.dumps(result, indent=2))


@bench_app.command("alfworld-memory")
def bench_alfworld_memory(
    episodes: int = typer.Option(1000, help="Episodes one worker plays (cycling through the split's games)."),
    recycle_after: int = typer.Option(250, help="The recycled run replaces its worker after this many episodes."),
    steps: int = typer.Option(5, help="Random admissible steps per episode."),
    split: str = typer.Option("unseen"),
    env_arg: list[str] = typer.Option([], help="Env constructor argument key=value (repeatable), e.g. engine=stock."),
    out: Optional[Path] = typer.Option(None, help="Also write the results as JSON here."),
) -> None:
    """Resident memory of one ALFWorld worker over many episodes, without and with recycling."""
    from seed_gym.envs.alfworld.memory import run_memory_benchmark

    with _new_progress() as bar, _library_progress(bar):
        result = run_memory_benchmark(episodes=episodes, recycle_after=recycle_after, steps=steps, split=split,
                                      env_kwargs=_parse_env_args(env_arg))
    table = Table(title=f"ALFWorld worker RSS, MiB ({result['engine']}, {result['games']} {split} games cycled, "
                        f"{steps} steps each)")
    table.add_column("worker", justify="left")
    for point in result["checkpoints"]:
        table.add_column(f"after {point}", justify="right")
    for column in ("recycled", "errors", "seconds"):
        table.add_column(column, justify="right")
    for row in result["rows"]:
        label = "recycle after " + str(row["recycle_after"]) if row["recycle_after"] else "never recycled"
        table.add_row(label, *(str(row["rss_mib"].get(str(p), "-")) for p in result["checkpoints"]),
                      str(row["recycled"]), str(row["errors"]), str(row["seconds"]))
    console.print(table)
    console.print(f"files added to the temp folder: {result['temp_files_added']}")
    if out:
        out.write_text(json.dumps(result, indent=2))


def _register_command_modules() -> None:
    import importlib

    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as error:
            if error.name and name.startswith(error.name):
                continue  # that part is not in this tree (yet)
            raise
        module.register(app, data_app, bench_app, serve_app)


_register_command_modules()

if __name__ == "__main__":
    main()
