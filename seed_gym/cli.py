"""The ``seed-gym`` command line (typer + rich).

The core commands (``list``, ``eval``, ``play``, ``doctor``) name no env. Everything else comes
from the modules of the ``seed_gym.commands`` entry-point group, built-in parts and plugins alike
(the contract is in :mod:`seed_gym.commands`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from enum import Enum
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, Optional

import typer
from typer.exceptions import TyperException
from rich.markup import escape
from rich.table import Table

from seed_gym.commands import (ENTRY_POINT_GROUP, console, err_console, library_progress, new_progress,
                               parse_env_args)
from seed_gym.pools import DEFAULT_CALL_TIMEOUT

__all__ = ["app", "build_app", "command_entry_points", "main", "register_command_modules", "results_table"]


def main(args: Optional[Sequence[str]] = None) -> None:
    """Run the CLI. Bad input (a usage error or a :class:`~seed_gym.core.SeedGymError`) is one line
    on stderr and exit code 2, never a traceback."""
    from seed_gym.core import SeedGymError

    try:
        code = app(args=args, standalone_mode=False)
    except TyperException as error:  # usage errors: a bad option value, a missing argument
        if not error.format_message().strip():  # a group run bare: its help is already on screen
            raise SystemExit(error.exit_code) from None
        ctx = getattr(error, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        _fail(error.format_message() + hint, error.exit_code)
    except typer.Abort:
        _fail("aborted", 1)
    except SeedGymError as error:
        _fail(str(error), 2)
    raise SystemExit(code if isinstance(code, int) else 0)


def _fail(message: str, code: int) -> None:
    # one line however long: soft_wrap stops rich from folding it at the terminal width
    err_console.print(f"[bold red]error:[/] {escape(message)}", soft_wrap=True)  # "seed-gym[hf]" is not markup
    raise SystemExit(code) from None


class EnvBackend(str, Enum):
    """Where env instances live during an eval (:func:`seed_gym.pools.make_pool`)."""

    process = "process"
    inline = "inline"
    ray = "ray"


def _checked_split(env: str, split: str, env_kwargs: dict[str, Any]) -> tuple[Any, list[str]]:
    """``env`` built with ``env_kwargs`` and the task ids of its ``split``, or a usage error naming
    the splits there are (or the constructor argument the env refuses)."""
    from seed_gym.registry import make

    try:
        instance = make(env, **env_kwargs)
    except (TypeError, ValueError) as error:
        if not env_kwargs:
            raise
        raise typer.BadParameter(str(error), param_hint="'--env-arg'") from None
    with new_progress() as bar, library_progress(bar):
        task_set = instance.task_set()
    known = sorted(set(task_set.names()) | set(task_set.aliases))
    if split not in known:
        raise typer.BadParameter(f"{env} has no split {split!r}; known: {', '.join(known)}", param_hint="'--split'")
    return instance, task_set.split(split).task_ids


def _env_or_sole(env: Optional[str], hint: str) -> str:
    """``env`` when given; else the one registered env, if there is exactly one."""
    if env:
        return env
    from seed_gym.registry import list_envs

    ids = [spec.env_id for spec in list_envs()]
    if len(ids) == 1:
        return ids[0]
    raise typer.BadParameter(f"name the env; registered: {', '.join(ids) or '(none)'} (see `seed-gym list`)",
                             param_hint=hint)


# -- list ------------------------------------------------------------------------------------
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


# -- eval ------------------------------------------------------------------------------------
def eval_command(
    agent: list[str] = typer.Option(..., "--agent", "-a", help="Agent spec kind[:target][@k=v,...]; repeat to compare."),
    env: Optional[str] = typer.Option(None, help="Environment id (see `seed-gym list`); may be left out only when one env is registered."),
    split: str = typer.Option("unseen", help="Split: train, seen, unseen (or an env-specific one)."),
    n: Optional[int] = typer.Option(None, "-n", min=1, help="Evaluate the first N tasks of the split (default: all)."),
    group: int = typer.Option(1, min=1, help="Episodes per task (group size G), all from an identical start."),
    workers: int = typer.Option(max(1, os.cpu_count() or 1), min=1, help="Env worker processes."),
    live_episodes: Optional[int] = typer.Option(None, min=1, help="Episodes in play at once, spread over the workers (default: 4 per worker)."),
    backend: EnvBackend = typer.Option(EnvBackend.process, help="Env backend: process (worker processes), inline, or ray (Ray actors; extra 'ray')."),
    ray_address: Optional[str] = typer.Option(None, help="Ray cluster to join (host:port or auto) with --backend ray; default: a local Ray instance on 127.0.0.1."),
    waves: int = typer.Option(1, min=1, help="Split the live episodes into this many waves: the envs of one step while the agent acts on another (1: lock-step). Records are the same."),
    call_timeout: float = typer.Option(DEFAULT_CALL_TIMEOUT, help="Seconds an env reset or step may take before its worker is killed and the episode retried (process and ray backends)."),
    recycle_after: Optional[int] = typer.Option(None, min=1, help="Replace each env worker after this many episodes (a safety valve for engines that leak; process and ray backends)."),
    max_steps: Optional[int] = typer.Option(None, min=1, help="Step budget per episode (env default when omitted)."),
    seed: int = typer.Option(0, help="Run seed: env seeds, agent sampling, generated data."),
    env_arg: list[str] = typer.Option([], help="Env constructor argument key=value (repeatable), e.g. data=/path."),
    out: Optional[Path] = typer.Option(None, help="Run folder; one sub-folder per agent. Same --out resumes."),
    overwrite: bool = typer.Option(False, help="Discard an existing run in --out instead of resuming it."),
) -> None:
    """Evaluate one or more agents on the same tasks; prints a comparison table."""
    from seed_gym.agent import AgentSpec, make_agent
    from seed_gym.evaluate import EvalConfig, evaluate

    specs = [AgentSpec.parse(a) for a in agent]
    for spec in specs:  # unknown kinds, options and option values fail here, before any run starts
        make_agent(spec, seed=seed).close()  # cheap: model agents load their backend on first use
    if ray_address and backend is not EnvBackend.ray:
        raise typer.BadParameter("only the ray backend joins a cluster; add --backend ray", param_hint="'--ray-address'")
    env = _env_or_sole(env, "'--env'")
    env_kwargs = parse_env_args(env_arg, env)
    _checked_split(env, split, env_kwargs)[0].close()
    base = out or Path("runs") / f"{env}-{split}"
    where = "" if out else " (no --out given; the same command resumes it)"
    err_console.print(f"writing {base}/<agent>/{where}: " + ", ".join(spec.slug for spec in specs),
                      markup=False, soft_wrap=True)
    summaries = []
    with new_progress() as bar, library_progress(bar), _backend_session(backend, ray_address):
        for spec in specs:
            config = EvalConfig(env=env, split=split, agent=str(spec), out=base / spec.slug, n=n,
                                group=group, seed=seed, max_steps=max_steps, backend=backend.value,
                                workers=workers, live_episodes=live_episodes, env_kwargs=env_kwargs,
                                call_timeout=call_timeout, recycle_after=recycle_after,
                                ray_address=ray_address, waves=waves)
            task = bar.add_task(f"{spec} on {env}/{split}", total=None)
            summaries.append(evaluate(config, overwrite=overwrite, on_progress=lambda p, task=task: bar.update(
                task, completed=p.done, total=p.total, rate=p.rates())))
    console.print(results_table(summaries))
    for summary in summaries:
        nodes = (summary.get("pool_this_session") or {}).get("nodes")
        where = f" (envs on {len(nodes)} Ray node{'s' if len(nodes) > 1 else ''})" if nodes else ""
        console.print(f"[dim]{summary['agent']}: {summary['run_dir']}{where}[/]")
    failed = [s for s in summaries if s["episodes"] and s["errors"] == s["episodes"]]
    if failed:  # nothing was played: a failed run, not a score of 0
        err_console.print(f"[bold red]error:[/] every episode of {escape(', '.join(s['agent'] for s in failed))} "
                          f"failed; the records in {escape(str(failed[0]['run_dir']))}/episodes.jsonl say why",
                          soft_wrap=True)
        raise typer.Exit(1)


def _backend_session(backend: EnvBackend, ray_address: Optional[str]) -> AbstractContextManager[Any]:
    """One Ray session for every agent of an eval (the ray backend), so Ray starts once."""
    if backend is not EnvBackend.ray:
        return nullcontext()
    from seed_gym.raypool import ray_session

    return ray_session(ray_address)


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
def play_command(
    env: Optional[str] = typer.Argument(None, help="Environment id (see `seed-gym list`); may be left out only when one env is registered."),
    split: str = typer.Option("unseen", help="Split to draw the task from."),
    index: int = typer.Option(0, help="Task index within the split."),
    task: Optional[str] = typer.Option(None, help="Task id (overrides --index)."),
    seed: int = typer.Option(0),
    env_arg: list[str] = typer.Option([], help="Env constructor argument key=value (repeatable)."),
) -> None:
    """Play one episode yourself in the terminal. Type a command or its number; `quit` stops."""
    from seed_gym.agents.scripted import HumanAgent

    env = _env_or_sole(env, "'ENV'")
    env_kwargs = parse_env_args(env_arg, env)
    instance, ids = _checked_split(env, split, env_kwargs)
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
def doctor_command() -> None:
    """Check the installation: packages, and each registered env's engine and where its data is found."""
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


# -- bench serve-load --------------------------------------------------------------------------
def serve_load_command(
    server: str = typer.Option(..., help="The server: a load target's name (one of the seed_gym.load_targets entry points; a wrong name lists them)."),
    clients: int = typer.Option(32, min=1, help="Concurrent clients, one keep-alive connection each."),
    requests: int = typer.Option(20, min=1, help="Short requests each client sends (a fixed count)."),
    duration: float = typer.Option(300.0, min=0.001, help="Seconds after which clients stop early (a cap)."),
    baseline_requests: int = typer.Option(20, min=1, help="Requests of the one-client baseline."),
    server_arg: list[str] = typer.Option([], help="Target option key=value (repeatable), e.g. model=DIR for policy."),
    out: Optional[Path] = typer.Option(None, help="Also write the report as JSON here."),
) -> None:
    """A bounded loopback load test of one server: throughput, p50/p99, errors, and whether short
    requests are starved by a long one in flight; ratios against a one-client baseline of the same run."""
    import json

    from seed_gym.loadtest import LoadTestError, load_target, run_load, summary_lines

    try:
        target = load_target(server, parse_env_args(server_arg))
    except LoadTestError as error:
        raise typer.BadParameter(str(error), param_hint="'--server'") from None
    report = run_load(target, clients=clients, requests=requests, duration_s=duration,
                      baseline_requests=baseline_requests, log=lambda line: err_console.print(escape(line)))
    for line in summary_lines(report):
        console.print(escape(line))
    if out:
        out.write_text(json.dumps(report, indent=2))


# -- bench pools -----------------------------------------------------------------------------
def bench_pools_command(
    env: list[str] = typer.Option(..., help="Env to measure (repeat for several)."),
    split: str = typer.Option("unseen", help="Split whose tasks are played."),
    env_arg: list[str] = typer.Option([], help="ENV:key=value, a constructor argument of one env (repeatable)."),
    max_steps: int = typer.Option(10, min=1, help="Step cap of the episodes (sections 1-3)."),
    episodes: int = typer.Option(128, min=1, help="Episodes timed per pool in section 1."),
    envs_per_worker: int = typer.Option(4, min=1, help="Envs per worker (and of the inline pool)."),
    workers: list[int] = typer.Option([1, 2, 4], min=1, help="Worker counts of the process and ray pools."),
    overhead_episodes: int = typer.Option(200, min=1, help="Episodes of the engine-overhead section."),
    repeats: int = typer.Option(20, min=1, help="Alternating repeats of the engine-overhead section (fewer, at least 3, once it has run 2 minutes on an env)."),
    model: Optional[Path] = typer.Option(None, help="Local model folder (seed-gym model init) for lock-step vs waves; left out: that section is skipped."),
    model_episodes: int = typer.Option(16, min=1, help="Episodes of the lock-step vs waves section."),
    memory_episodes: int = typer.Option(1000, min=0, help="Episodes per worker in the memory section (0: skip it)."),
    memory_max_steps: int = typer.Option(5, min=1, help="Step cap of the memory section's episodes."),
    ray_address: Optional[str] = typer.Option(None, help="Ray cluster for the ray pools (default: a local instance)."),
    out: Optional[Path] = typer.Option(None, help="Also write the result as JSON here."),
) -> None:
    """Env-steps/s of the inline, process and ray pools; the rollout engine's overhead; lock-step vs
    waves with a model agent; memory per worker. Ratios against baselines from this run."""
    import json

    from seed_gym.poolbench import run_pool_benchmark

    env_args: dict[str, dict[str, Any]] = {}
    for pair in env_arg:
        target, sep, rest = pair.partition(":")
        if not sep or target not in env:
            raise typer.BadParameter(f"expects ENV:key=value with ENV one of --env, got {pair!r}", param_hint="'--env-arg'")
        env_args.setdefault(target, {}).update(parse_env_args([rest], target))
    result = run_pool_benchmark(env, split=split, max_steps=max_steps, episodes=episodes, envs_per_worker=envs_per_worker,
                                worker_counts=workers, overhead_episodes=overhead_episodes, repeats=repeats,
                                model=str(model) if model else None, model_episodes=model_episodes,
                                memory_episodes=memory_episodes, memory_max_steps=memory_max_steps,
                                ray_address=ray_address, env_args=env_args, on_section=_print_pool_section)
    console.print(f"[dim]{result['cpus']} CPUs; on a busy machine times are upper bounds, ratios compare runs side by side[/]")
    if out:
        out.write_text(json.dumps(result, indent=2))


def _print_pool_section(env: str, section: str, result: Any) -> None:
    if section == "steps_per_s":
        table = Table(title=f"{env}: env-steps/s (rollout engine, zero-cost agent)")
        for column in ("pool", "workers", "envs", "episodes", "steps", "errors", "seconds", "steps/s", "vs inline"):
            table.add_column(column, justify="left" if column == "pool" else "right")
        for row in result:
            table.add_row(row["backend"], str(row["workers"]), str(row["envs"]), str(row["episodes"]), str(row["steps"]),
                          str(row["errors"]), f"{row['seconds']:.2f}", f"{row['steps_per_s']:.0f}", f"{row['vs_inline']:.2f}x")
        console.print(table)
    elif section == "engine_overhead":
        console.print(f"{env}: rollout engine vs a bare loop, {result['steps']} steps: {result['engine_seconds']:.3f} s / "
                      f"{result['bare_seconds']:.3f} s = [bold]{100 * result['overhead']:+.1f}%[/] overhead "
                      f"(median of {result['repeats']} back-to-back pairs {100 * result['overhead_median_of_pairs']:+.1f}%; "
                      f"same steps: {result['same_steps']})")
    elif section == "transport_floor":
        console.print(f"round trip of an empty batch: process pipe {result['process_pipe_ms']:.2f} ms, "
                      f"Ray actor {result['ray_actor_ms']:.2f} ms (median of {result['calls']})")
    elif section == "lock_step_vs_waves":
        lock, waves = result["lock_step"], result["overlapped"]
        console.print(f"{env}: lock-step {lock['seconds_per_round']:.3f} s/round vs {waves['waves']} waves "
                      f"{waves['seconds_per_round']:.3f} s/round: [bold]{result['speedup']:.2f}x[/] "
                      f"({result['episodes']} episodes, {result['slots']} envs on {result['workers']} workers; "
                      f"identical records: {result['same_records']})")
    elif section == "memory":
        table = Table(title=f"{env}: one worker's memory (MiB, RSS / PSS) over its episodes")
        table.add_column("pool")
        for checkpoint in result[0]["memory"]:
            table.add_column(f"after {checkpoint}", justify="right")
        table.add_column("seconds", justify="right")
        for row in result:
            cells = [f"{m['rss_mib']} / {m['pss_mib']}" for m in row["memory"].values()]
            table.add_row(row["pool"], *cells, f"{row['seconds']:.0f}")
        console.print(table)


# -- command modules -------------------------------------------------------------------------
def command_entry_points() -> list[EntryPoint]:
    """The ``seed_gym.commands`` entry points, sorted by name."""
    return sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)


def register_command_modules(plugins: Iterable[EntryPoint], app: typer.Typer, data_app: typer.Typer,
                             bench_app: typer.Typer, serve_app: typer.Typer) -> list[str]:
    """Load each entry point's module and call its ``register(app, data_app, bench_app, serve_app)``.
    One that fails is reported on stderr and skipped; returns the names of those that failed."""
    failed = []
    for ep in plugins:
        try:
            ep.load().register(app, data_app, bench_app, serve_app)
        except Exception as error:  # one broken plugin must not take the CLI down
            failed.append(ep.name)
            err_console.print(f"[yellow]warning:[/] seed-gym command plugin {escape(repr(ep.name))} "
                              f"({escape(ep.value)}) was skipped: {escape(f'{type(error).__name__}: {error}')}")
    return failed


def build_app(plugins: Optional[Iterable[EntryPoint]] = None) -> typer.Typer:
    """The root app: the core commands, then each command module's (default: :func:`command_entry_points`)."""
    app = typer.Typer(no_args_is_help=True, add_completion=False, pretty_exceptions_show_locals=False,
                      help="seed-gym: text envs, one rollout harness, scoring and reports for agentic RL.")
    data_app = typer.Typer(no_args_is_help=True, help="Generate or check the offline data of an env.")
    bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks that print ratios against a baseline from the same run.")
    serve_app = typer.Typer(no_args_is_help=True, help="Run a server (bound to 127.0.0.1 by default).")
    app.add_typer(data_app, name="data")
    app.add_typer(bench_app, name="bench")
    app.add_typer(serve_app, name="serve")
    app.command("list")(list_command)
    app.command("eval")(eval_command)
    app.command("play")(play_command)
    app.command("doctor")(doctor_command)
    bench_app.command("serve-load")(serve_load_command)
    bench_app.command("pools")(bench_pools_command)
    register_command_modules(command_entry_points() if plugins is None else plugins,
                             app, data_app, bench_app, serve_app)
    return app


app = build_app()

if __name__ == "__main__":
    main()
