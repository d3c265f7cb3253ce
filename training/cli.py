"""``seed-gym train``, ``seed-gym reproduce`` and ``seed-gym bench train``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

from seed_gym.training.algorithms import names as algorithm_names

console = Console()

SHOWN = ("success_rate", "reward_mean", "loss", "pg_loss", "opd_loss", "gate_mean", "gate_active_ratio",
         "teacher_gap_mean", "kl_loss", "skill_parse_rate", "sampling_logprob_gap", "seconds")


def _describe(row: dict[str, Any]) -> str:
    from seed_gym.training.costs import console_summary

    if "split" in row:
        return f"eval {row['split']}: success {100 * row['success_rate']:.1f}% over {row['episodes']} episodes"
    values = "  ".join(f"{k}={row[k]:.4g}" for k in SHOWN if isinstance(row.get(k), (int, float)))
    phases = console_summary(row)
    return f"{values}\n    {phases}" if phases else values


def show_config(value: bool) -> None:
    """``--show-config``: print every TrainConfig field (type, default, meaning) and stop."""
    if not value:
        return
    from rich.table import Table

    from seed_gym.training.config import field_table

    table = Table(title="TrainConfig fields (set with --set key=JSON or in a --config file)")
    for column in ("field", "type", "default", "meaning"):
        table.add_column(column, overflow="fold")
    for row in field_table():
        table.add_row(*row)
    Console().print(table)  # a console of this moment, sized to the terminal it prints to
    raise typer.Exit()


def register(app: typer.Typer, data_app: typer.Typer, bench_app: typer.Typer, serve_app: typer.Typer) -> None:
    @app.command("train")
    def train_command(
        algo: str = typer.Option(..., help=f"One of: {', '.join(algorithm_names(with_sft=True))}."),
        env: str = typer.Option(..., help="Environment id."),
        model: Path = typer.Option(..., help="Local model folder to start from (from_pretrained)."),
        updates: Optional[int] = typer.Option(None, help="RL updates (paper: 150)."),
        out: Optional[Path] = typer.Option(None, help="Run folder (default runs/train/<algo>-<env>). Same --out resumes."),
        config: Optional[Path] = typer.Option(None, help="TOML or JSON file with TrainConfig fields."),
        set_: list[str] = typer.Option([], "--set", help="Override a config field: key=value (JSON values); every field: --show-config."),
        env_arg: list[str] = typer.Option([], help="Env constructor argument key=value (repeatable)."),
        seed: int = typer.Option(0, help="Run seed."),
        _show_config: bool = typer.Option(False, "--show-config", is_eager=True, expose_value=False,
                                          callback=show_config,
                                          help="List every training setting (type, default, meaning) and exit."),
    ) -> None:
        """Train with SFT or an RL algorithm on the shared rollout harness; resumes from the last checkpoint."""
        from seed_gym.commands import library_status, parse_env_args
        from seed_gym.training.config import build_config
        from seed_gym.training.trainer import train

        base: dict[str, Any] = {"algo": algo, "env": env, "model": str(model), "seed": seed,
                                "out": str(out or Path("runs") / "train" / f"{algo}-{env}"),
                                "env_args": parse_env_args(env_arg, env)}
        if updates is not None:
            base["updates"] = updates
        cfg = build_config(base, config, set_)
        console.print(f"[bold]{cfg.algo}[/] on {cfg.env} from {cfg.model} -> {cfg.out}")
        with console.status("training...") as status, library_status(status):
            def on_row(row: dict[str, Any]) -> None:
                status.update(f"update {row['update']}: {_describe(row).splitlines()[0]}")
                console.print(f"[dim]update {row['update']}[/] {_describe(row)}")
            train(cfg, on_row, on_status=status.update)
        console.print(f"metrics: {Path(cfg.out) / 'metrics.jsonl'}; checkpoints: {Path(cfg.out) / 'checkpoints'}")

    @app.command("reproduce")
    def reproduce_command(
        preset: str = typer.Option(..., help="A built-in preset (cpu-mini, qwen-gpu) or a preset TOML file."),
        out: Path = typer.Option(Path("runs/repro"), help="Folder of every stage's run folder and the report."),
        stage: Optional[str] = typer.Option(None, help="Run this stage alone (its inputs must be done)."),
        dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan (done / to do) and stop."),
        report_only: bool = typer.Option(False, "--report-only",
                                         help="Only rebuild the report from the RL stages finished so far."),
        jobs: int = typer.Option(1, min=1, help="Stages run at once, each in its own process with cores/jobs "
                                 "torch threads (logs in OUT/logs/)."),
        import_from: Optional[Path] = typer.Option(
            None, "--import", help="First copy in the finished RL stages another run exported (--export): "
            "they count as done, and only the rest of the plan runs."),
        export_to: Optional[Path] = typer.Option(
            None, "--export", help="Finally copy every finished RL stage's results and the report to this "
            "folder (no checkpoints, no rollouts: small enough to commit)."),
    ) -> None:
        """The SEED experiment in miniature: tiny model -> SFT -> hindsight-skill SFT -> every RL arm x seed
        -> report (OUT/report/report.html, .md, .json). Every stage resumes; finished stages are skipped."""
        from seed_gym.training.reproduce import PresetError, reproduce
        from seed_gym.training.reproduce_archive import ArchiveError

        try:
            reproduce(preset, out, stage=stage, dry_run=dry_run, report_only=report_only, jobs=jobs,
                      import_from=import_from, export_to=export_to,
                      echo=lambda line: console.print(line, markup=False, soft_wrap=True),
                      on_row=lambda row: console.print(f"[dim]update {row['update']}[/] {_describe(row).splitlines()[0]}"))
        except (PresetError, ArchiveError) as error:
            console.print(f"[red]{error}[/]")
            raise typer.Exit(2) from None
        if not dry_run and not report_only and stage in (None, "report"):
            console.print(f"report: {out / 'report' / 'report.html'} (and report.md, report.json)")

    @bench_app.command("train")
    def bench_train(
        model: Path = typer.Option(..., help="Local model folder (seed-gym model init --out DIR)."),
        prompts: int = typer.Option(8, help="Prompts per update."),
        group: int = typer.Option(8, help="Completions per prompt."),
        max_new_tokens: int = typer.Option(16, help="Tokens per completion."),
        steps: int = typer.Option(3, help="Measured updates per trainer (after one warm-up)."),
        env: str = typer.Option(..., help="Env whose real first-step prompts are trained on (see `seed-gym list`)."),
        split: str = typer.Option("test", help="Split of those tasks."),
        rollout: str = typer.Option("hf", help="Rollout engine of both trainers: hf or vllm."),
        compare_rollouts: bool = typer.Option(False, "--compare-rollouts",
                                              help="Instead of TRL: seed-gym with hf rollouts vs vllm rollouts."),
        engine_dtype: str = typer.Option("float32", help="Weights dtype of seed-gym's vLLM engine (--compare-rollouts)."),
        out: Optional[Path] = typer.Option(None, help="Also write the result as JSON here."),
    ) -> None:
        """One GRPO update: seed-gym's loop vs TRL's GRPOTrainer, same model and batch (or, with
        --compare-rollouts, seed-gym's update with hf vs vLLM rollouts), alternated in one run."""
        from seed_gym.training.bench import compare_rollouts as rollout_bench
        from seed_gym.training.bench import compare_with_trl

        if rollout not in ("hf", "vllm"):
            raise typer.BadParameter("use hf or vllm", param_hint="--rollout")
        sizes = {"prompts": prompts, "group": group, "max_new_tokens": max_new_tokens, "steps": steps,
                 "env": env, "split": split}
        if compare_rollouts:
            result = rollout_bench(model, engine_dtype=engine_dtype, **sizes)
        else:
            result = compare_with_trl(model, rollout=rollout, **sizes)
        for row in result["rows"].values():
            phases = "  ".join(f"{k} {v:.2f}s" for k, v in row.get("phase_seconds", {}).items())
            console.print(f"{row['runner']:>14}: {row['tokens_per_s']:.0f} tokens/s "
                          f"({row['seconds_per_update']:.2f} s/update)" + (f"  phases: {phases}" if phases else ""),
                          markup=False)
        if compare_rollouts:
            console.print(f"hf / vllm seconds per update = [bold]{result['ratio']:.2f}x[/] "
                          f"(medians: {result['ratio_median']:.2f}x)")
        else:
            console.print(f"seed-gym / TRL = [bold]{result['ratio']:.2f}x[/] (medians: {result['ratio_median']:.2f}x)")
        if out:
            out.write_text(json.dumps(result, indent=2))
