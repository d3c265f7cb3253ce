"""``seed-gym data alfworld``, ``seed-gym bench alfworld`` and ``seed-gym bench alfworld-memory``.

Registered through the ``seed_gym.commands`` entry-point group (see :mod:`seed_gym.commands`);
the engine, the generator and the benchmarks load inside the commands.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer, data_app: typer.Typer, bench_app: typer.Typer, serve_app: typer.Typer) -> None:
    from seed_gym.commands import console, library_progress, new_progress, parse_env_args

    @data_app.command("alfworld")
    def data_alfworld(
        out: Optional[Path] = typer.Option(None, help="Folder to write (holds json_2.1.1/); default: the cache the env reads."),
        seed: int = typer.Option(0, help="Generator seed."),
        split: list[str] = typer.Option(["train", "seen", "unseen"], help="Splits to generate (repeatable)."),
        size: Optional[int] = typer.Option(None, help="Games per split (default: train 2420, seen 140, unseen 134)."),
        workers: Optional[int] = typer.Option(None, help="Parallel worker processes (default: all cores)."),
        check_engine: Optional[Path] = typer.Option(None, help="Generate nothing: play every game of --split under this json_2.1.1 tree on the stock and the fast engine and report every difference (exit 1 if any)."),
        check_steps: int = typer.Option(15, help="With --check-engine: seeded random admissible steps per random sequence."),
        check_log: Optional[Path] = typer.Option(None, help="With --check-engine: append each game's result to this JSON-lines file and skip games it already holds (a stopped check resumes)."),
        planner_timeout: float = typer.Option(60.0, min=0.1, help="With --check-engine: seconds each engine's PDDL planner may search before its plan counts as not found (searches from some random states run for hours)."),
    ) -> None:
        """Generate ALFWorld games in the official json_2.1.1 layout, each verified solvable."""
        from rich.table import Table

        from seed_gym.envs.alfworld.data import GeneratedGames, collect_split, SPLIT_DIRS

        if check_engine is not None:
            from seed_gym.envs.alfworld.check import check_engine as run_check

            with new_progress() as bar:
                task = bar.add_task("stock vs fast engine", total=None)
                report = run_check(check_engine, splits=list(split), workers=workers or 1, random_steps=check_steps,
                                   log=check_log, planner_timeout=planner_timeout, on_game=lambda r: bar.advance(task))
            for line in report["details"]:
                console.print(f"[red]{line}[/]")
            console.print(f"{report['games']} games, {report['compared_states']} states compared, "
                          f"{report['differences']} differences (splits {', '.join(report['splits'])}"
                          + (f"; {report['from_log']} games from {check_log}" if check_log else "") + ")")
            if report["planner_timeouts"]:
                console.print(f"{report['planner_timeouts']} games' planner plans not compared: neither engine's "
                              f"planner found a plan within {planner_timeout:g} s")
            if report["differences"] or not report["games"]:
                raise typer.Exit(1)
            return

        sizes = {name: size for name in split} if size else None
        source = GeneratedGames(out, seed=seed, sizes=sizes, workers=workers)
        with new_progress() as bar, library_progress(bar):
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

    @bench_app.command("alfworld")
    def bench_alfworld(
        games: int = typer.Option(8, help="Games (from the split) in the benchmark."),
        steps: int = typer.Option(20, help="Steps per game (random admissible actions)."),
        split: str = typer.Option("unseen"),
        env_arg: list[str] = typer.Option([], help="Env constructor argument key=value (repeatable)."),
        out: Optional[Path] = typer.Option(None, help="Also write the results as JSON here."),
    ) -> None:
        """Stock and fast engine (1 and 2 workers) vs alfworld's AlfredTWEnv, same games, same run."""
        from rich.table import Table

        from seed_gym.envs.alfworld.bench import run_benchmark

        with new_progress() as bar, library_progress(bar):
            result = run_benchmark(games=games, steps=steps, split=split, env_kwargs=parse_env_args(env_arg))
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
        from rich.table import Table

        from seed_gym.envs.alfworld.memory import run_memory_benchmark

        with new_progress() as bar, library_progress(bar):
            result = run_memory_benchmark(episodes=episodes, recycle_after=recycle_after, steps=steps, split=split,
                                          env_kwargs=parse_env_args(env_arg))
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
        console.print(f"left in the workers' temp folder: {result['temp_files_left']} files, "
                      f"{result['temp_bytes_left']} bytes; translation store grew by "
                      f"{result['translation_store_files_added']} files, "
                      f"{result['translation_store_bytes_added'] / 2**20:.1f} MiB (bounded by the games played)")
        if out:
            out.write_text(json.dumps(result, indent=2))
