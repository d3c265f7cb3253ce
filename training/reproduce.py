"""``seed-gym reproduce``: the SEED paper's experiment in miniature, as a plan of ordinary run folders.

A preset (TOML: a built-in name from ``training/presets/``, or a path) names the envs, the seeds, the
arms and the settings of every stage. The plan, per env (``OUT`` is ``--out``):

====================================  ==============================================================
``model``                             the tiny model (``seed-gym model init``), unless the preset names one
``sft/<env>``                         behaviour cloning to a weak, non-zero start (``--algo sft``)
``skill-sft/<env>``                   hindsight-skill SFT from that start (``sft_data = "skills"``)
``offline-skills/<env>``              the static library of ``seed-static``: the rule analyzer's skills
                                      on skill-sft's base-policy episodes (:func:`.skills.offline_skill_bank`)
``rl/<env>/<arm>/seed-<n>``           one RL run per arm and seed, all with the same rollout budget
                                      (the ``[rl]`` table); each evaluates its start as update 0, and
                                      arms from the same start and seed share that evaluation
``report``                            HTML + Markdown + JSON (:mod:`.reproduce_report`)
====================================  ==============================================================

Rules:

* Every training stage is an ordinary ``seed-gym train`` run folder: killing and re-running the same
  command resumes it (the trainer's own resume). A stage that finished has a ``stage.json`` marker
  and is skipped; its ``seconds`` add up every invocation that worked on it (:class:`StageClock`).
* ``--stage NAME`` runs that stage alone (the stages it reads must have finished); ``--dry-run``
  prints the plan and what is done (and what ``--import`` and ``--export`` would copy), writing nothing.
* ``--report-only`` rebuilds the report from the RL stages that have finished, without running any
  stage, even when the report was built before (after a renderer changed, say). With RL stages still
  unfinished it says which, and the report stage is not marked done.
* The update-0 evaluation of an RL stage is a function of its start, seed and evaluation settings,
  not of its algorithm. When an earlier arm with the same start, seed and settings (everything but
  :data:`ARM_ONLY`) has finished that evaluation, its folders are copied in before the run starts
  and the trainer's resume reads them back (its identity check refuses a copy that is a different
  evaluation), so 8 arms evaluate each start once per seed, and their paired comparisons against the
  start share one baseline. An arm imported from another run folder (``--import``) is not copied
  from: its evaluation names the agent by that folder's paths.
* ``--export DIR`` / ``--import DIR`` carry the finished RL stages' results, without weights, from one
  run folder to another, where only the rest of the plan runs (:mod:`.reproduce_archive`). A plan runs
  only the unfinished stages that an unfinished RL stage reads (``[skip]`` names the others).
* ``--jobs N`` runs up to N stages at once, each in its own process with ``cores // N`` torch
  threads and its output in ``OUT/logs/<stage>.log``. A stage starts when the stages it reads have
  finished and no running stage shares its start evaluation (so each start is still evaluated once);
  after a stage fails, no new one starts, the running ones finish, and the error names the log.
  Every stage is the same run, with the same settings and seeds, as with one job (only torch's
  thread count differs, which can change float rounding). When the scheduler stops (Ctrl-C, an
  error), it stops its running stages; a rerun resumes them.
* Settings merge in this order: ``[common]`` < the stage kind's table (``[sft]``, ``[skill_sft]``,
  ``[rl]``) < ``[env_settings.<env>.<table>]`` (``common``, ``sft``, ...) < the arm's own table. An arm's ``start`` is
  ``"sft"`` or ``"skill-sft"``; ``skill_bank = "offline"`` means the env's offline library.
"""

from __future__ import annotations

import json
import shutil
import time
import tomllib
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from seed_gym import progress
from seed_gym.core import SeedGymError
from seed_gym.training.reproduce_archive import (START_FIELD, check_start, export_results, import_results,
                                                 made_elsewhere)

STARTS = ("sft", "skill-sft")
MARKER = "stage.json"
#: RL settings that do not touch the start's evaluation: arms differing only here share it.
ARM_ONLY = frozenset({"out", "algo", "analyzer", "analyzer_url", "analyzer_model", "skill_bank"})


class PresetError(SeedGymError, ValueError):
    pass


@dataclass(frozen=True)
class Stage:
    """One step of the plan: ``kind`` is model, sft, skill-sft, offline-skills, rl or report."""

    name: str
    kind: str
    out: Path
    env: str = ""
    config: dict[str, Any] = field(default_factory=dict)   # TrainConfig fields (training stages)
    needs: tuple[str, ...] = ()
    arm: str = ""
    seed: int = 0

    def done(self) -> bool:
        return (self.out / MARKER).is_file()


def builtin_presets() -> list[str]:
    folder = resources.files("seed_gym.training") / "presets"
    return sorted(p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml"))


def load_preset(name_or_path: str | Path) -> dict[str, Any]:
    """A preset by built-in name or by path; checked for the tables the plan needs.

    ``extends = "<preset>"`` starts from another preset (by name, or a path relative to this file):
    this file's keys win, its tables are merged key by key into the base's, and its ``arms``
    table, when given, replaces the base's arms (a variant names exactly the arms it runs)."""
    preset = _read_preset(name_or_path, seen=())
    for key in ("envs", "seeds", "arms"):
        if not preset.get(key):
            raise PresetError(f"preset {name_or_path} needs a non-empty {key!r}")
    for arm, settings in preset["arms"].items():
        if settings.get("start", "sft") not in STARTS:
            raise PresetError(f"arm {arm!r}: start must be one of {', '.join(STARTS)}")
        if "algo" not in settings:
            raise PresetError(f"arm {arm!r} names no algo")
    return preset


def _read_preset(name_or_path: str | Path, seen: tuple[str, ...]) -> dict[str, Any]:
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise PresetError(f"preset file {path} does not exist")
        text = path.read_text(encoding="utf-8")
    else:
        resource = resources.files("seed_gym.training") / "presets" / f"{name_or_path}.toml"
        if not resource.is_file():
            raise PresetError(f"unknown preset {name_or_path!r}; built in: {', '.join(builtin_presets())}")
        text = resource.read_text(encoding="utf-8")
    try:
        preset = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PresetError(f"preset {name_or_path} does not parse: {error}") from None
    base_name = preset.pop("extends", None)
    if base_name is None:
        return preset
    if str(name_or_path) in seen:
        raise PresetError(f"preset {name_or_path} extends itself ({' -> '.join([*seen, str(name_or_path)])})")
    if isinstance(base_name, str) and base_name.endswith(".toml") and path.is_file():
        base_name = str(path.parent / base_name)
    return _merged(_read_preset(base_name, (*seen, str(name_or_path))), preset)


def _merged(base: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in own.items():
        if key != "arms" and isinstance(value, dict) and isinstance(base.get(key), dict):
            merged[key] = _merged(base[key], value)
        else:
            merged[key] = value
    return merged


def _settings(preset: dict[str, Any], env: str, table: str) -> dict[str, Any]:
    env_tables = preset.get("env_settings", {}).get(env, {})
    return {**preset.get("common", {}), **preset.get(table, {}), **env_tables.get("common", {}),
            **env_tables.get(table, {})}


def final_checkpoint(out: Path, config: dict[str, Any]) -> Path:
    """The last checkpoint a finished training stage wrote."""
    last = config.get("sft_epochs", 3) if config.get("algo") == "sft" else config.get("updates", 150)
    return out / "checkpoints" / f"update-{int(last):06d}"


def plan(preset: dict[str, Any], out: str | Path) -> list[Stage]:
    """Every stage of the preset, in the order they run."""
    out = Path(out)
    stages: list[Stage] = []
    model_settings = preset.get("model", {})
    if model_settings.get("path"):
        model_dir, model_needs = Path(model_settings["path"]), ()
    else:
        model_dir, model_needs = out / "model" / "weights", ("model",)
        stages.append(Stage("model", "model", out / "model",
                            config={"size": model_settings.get("size", "tiny"), "seed": model_settings.get("seed", 0)}))
    for env in preset["envs"]:
        sft_out = out / "sft" / env
        sft = {**_settings(preset, env, "sft"), "algo": "sft", "env": env, "model": str(model_dir), "out": str(sft_out)}
        stages.append(Stage(f"sft/{env}", "sft", sft_out, env, sft, model_needs))
        sft_start = final_checkpoint(sft_out, sft)
        skill_out = out / "skill-sft" / env
        skill = {**_settings(preset, env, "skill_sft"), "algo": "sft", "sft_data": "skills", "env": env,
                 "model": str(sft_start), "out": str(skill_out)}
        if skill.pop("replay_sft_data", False):  # the SFT stage's expert episodes, mixed into skill SFT
            skill["sft_replay_runs"] = [str(sft_out / "data" / "expert")]
        stages.append(Stage(f"skill-sft/{env}", "skill-sft", skill_out, env, skill, (f"sft/{env}",)))
        starts = {"sft": sft_start, "skill-sft": final_checkpoint(skill_out, skill)}
        bank_out = out / "offline-skills" / env
        stages.append(Stage(f"offline-skills/{env}", "offline-skills", bank_out, env,
                            {"episodes": str(skill_out / "data" / "base-policy")}, (f"skill-sft/{env}",)))
        # seed-major: a run cut short still compares every arm on the seeds it finished
        for seed in preset["seeds"]:
            for arm, arm_settings in preset["arms"].items():
                start = arm_settings.get("start", "sft")
                own = {k: v for k, v in arm_settings.items() if k != "start"}
                needs = [f"sft/{env}" if start == "sft" else f"skill-sft/{env}"]
                if own.get("skill_bank") == "offline":
                    own["skill_bank"] = str(bank_out / "bank")
                    needs.append(f"offline-skills/{env}")
                run_out = out / "rl" / env / arm / f"seed-{seed}"
                config = {**_settings(preset, env, "rl"), **own, "env": env, "seed": seed,
                          "model": str(starts[start]), "out": str(run_out), "eval_initial": True}
                stages.append(Stage(f"rl/{env}/{arm}/seed-{seed}", "rl", run_out, env, config, tuple(needs), arm, seed))
    stages.append(Stage("report", "report", out / "report", needs=tuple(s.name for s in stages if s.kind == "rl")))
    return stages


def describe(stages: list[Stage], importing: Collection[str] = ()) -> list[str]:
    """One line per stage: done, to be imported (the stages named in ``importing``) or to do, what it
    runs, what it needs."""
    lines = []
    for stage in stages:
        what = stage.config.get("algo", stage.kind)
        start = Path(stage.config.get("model", ""))  # OUT/<stage>/<env>/checkpoints/update-N
        extra = f" from {start.parents[2].name}/{start.parents[1].name}" if stage.kind in ("rl", "skill-sft") else ""
        status = "done" if stage.done() else "import" if stage.name in importing else "todo"
        lines.append(f"[{status}] {stage.name}: {what}{extra} -> {stage.out}")
    return lines


class StageClock:
    """A stage's wall seconds over every invocation that worked on it, kept in ``STAGE/stage-time.json``:
    a resumed stage counts its earlier invocations too. An invocation counts until its last logged
    metrics row, so a killed one loses at most the part of an update it was in."""

    FILE = "stage-time.json"

    def __init__(self, folder: Path) -> None:
        self.path = folder / self.FILE
        try:
            self.earlier = [float(s) for s in json.loads(self.path.read_text(encoding="utf-8"))["invocations"]]
        except (OSError, ValueError, KeyError, TypeError):
            self.earlier = []
        self.started = time.time()

    def _write(self, seconds: float) -> list[float]:
        invocations = [*self.earlier, round(seconds, 1)]
        self.path.write_text(json.dumps({"invocations": invocations}) + "\n", encoding="utf-8")
        return invocations

    def ticking(self, on_row: Callable[[dict[str, Any]], None] | None) -> Callable[[dict[str, Any]], None]:
        """``on_row``, recording this invocation's seconds at every row first."""
        def tick(row: dict[str, Any]) -> None:
            self._write(time.time() - self.started)
            if on_row:
                on_row(row)
        return tick

    def finish(self) -> dict[str, Any]:
        """The marker's fields: ``seconds`` over all invocations, and how many there were."""
        invocations = self._write(time.time() - self.started)
        return {"seconds": round(sum(invocations), 1), "invocations": len(invocations)}


def run_stage(stage: Stage, stages: list[Stage], preset: dict[str, Any],
              on_row: Callable[[dict[str, Any]], None] | None = None) -> None:
    """Run one stage (its inputs must be done), then mark it done."""
    by_name = {s.name: s for s in stages}
    missing = [name for name in stage.needs if not by_name[name].done()]
    if missing:
        raise PresetError(f"stage {stage.name} needs {', '.join(missing)} to finish first")
    stage.out.mkdir(parents=True, exist_ok=True)
    clock = StageClock(stage.out)
    root = plan_root(stages)
    recorded: dict[str, Any] = {"out_root": str(root)}
    if stage.kind == "model":
        from seed_gym.agents.tiny import build_tiny_model

        build_tiny_model(stage.out / "weights", seed=int(stage.config["seed"]), size=str(stage.config["size"]))
    elif stage.kind in ("sft", "skill-sft", "rl"):
        from seed_gym.training.config import build_config
        from seed_gym.training.trainer import train

        if stage.kind == "skill-sft":  # it reads the SFT start: check a retrained one before training on it
            check_start(stage, stages, root)
        if stage.kind == "rl":
            recorded[START_FIELD] = check_start(stage, stages, root)
            share_start_evaluation(stage, stages)
        train(build_config(stage.config), on_row=clock.ticking(on_row))
    elif stage.kind == "offline-skills":
        build_offline_library(stage)
    elif stage.kind == "report":
        from seed_gym.training.reproduce_report import write_report

        write_report([s for s in stages if s.kind == "rl"], preset, stage.out)
    (stage.out / MARKER).write_text(json.dumps({"stage": stage.name, "finished": True, **clock.finish(),
                                                "config": stage.config, **recorded}, indent=1, default=str) + "\n")


def plan_root(stages: list[Stage]) -> Path:
    """The run folder (``--out``) of a plan: where its report goes."""
    return next(s for s in stages if s.kind == "report").out.parent


def needed_stages(stages: list[Stage]) -> list[Stage]:
    """The unfinished stages a full run still has to run, in plan order: every unfinished RL stage and
    the report, and the unfinished stages they read (an RL stage imported from another run folder needs
    no start; the seeds still to run do)."""
    by_name = {s.name: s for s in stages}
    needed: set[str] = set()
    todo = [s for s in stages if s.kind in ("rl", "report") and not s.done()]
    while todo:
        stage = todo.pop()
        if stage.name not in needed:
            needed.add(stage.name)
            todo.extend(by_name[n] for n in stage.needs if not by_name[n].done())
    return [s for s in stages if s.name in needed]


def start_evaluation(out: Path) -> Path:
    """Where an RL run keeps its evaluation of the start (TrainRun.eval_dir of update 0)."""
    return out / "evals" / "update-000000"


def evaluation_key(stage: Stage) -> dict[str, Any] | None:
    """What an RL stage's update-0 evaluation depends on (its settings but :data:`ARM_ONLY`); None for
    a stage that evaluates no start."""
    if stage.kind != "rl" or not stage.config.get("eval_initial"):
        return None
    return {k: v for k, v in stage.config.items() if k not in ARM_ONLY}


def share_start_evaluation(stage: Stage, stages: list[Stage]) -> Path | None:
    """Copy the finished update-0 evaluation of an earlier arm with the same start, seed and settings
    into ``stage`` (see the module rules); returns the folder it came from, or None."""
    mine = start_evaluation(stage.out)
    key = evaluation_key(stage)
    if mine.exists() or key is None:
        return None
    root = plan_root(stages)
    for other in stages:
        theirs = start_evaluation(other.out)
        if other is stage or not theirs.is_dir() or evaluation_key(other) != key or made_elsewhere(other, root):
            continue
        summaries = [folder / "summary.json" for folder in theirs.iterdir() if folder.is_dir()]
        if summaries and all(s.is_file() and json.loads(s.read_text()).get("complete") for s in summaries):
            shutil.copytree(theirs, mine)
            return theirs
    return None


def build_offline_library(stage: Stage) -> None:
    """The offline skill library of one env: the rule analyzer (with the env's answer key) over the
    base-policy episodes that hindsight-skill SFT collected, per task family."""
    from seed_gym.records import RunDir
    from seed_gym.registry import make
    from seed_gym.training.analyzer import ground_truth_from_env, make_analyzer
    from seed_gym.training.skills import offline_skill_bank

    records = list(RunDir(stage.config["episodes"]).finished().values())
    env = make(stage.env)
    try:
        analyzer = make_analyzer("rule", env_id=stage.env, ground_truth=ground_truth_from_env(env))
        bank = offline_skill_bank(stage.env, records, analyzer.analyze(records))
    finally:
        env.close()
    bank.save(stage.out / "bank")


def rebuild_report(stages: list[Stage], preset: dict[str, Any], echo: Callable[[str], None] = print) -> Path:
    """The report of the RL stages finished so far, rebuilt whether or not it was built before."""
    from seed_gym.training.reproduce_report import write_report

    rl = [s for s in stages if s.kind == "rl"]
    finished = [s for s in rl if s.done()]
    if not finished:
        raise PresetError("no RL stage has finished yet: nothing to report")
    report = next(s for s in stages if s.kind == "report")
    report.out.mkdir(parents=True, exist_ok=True)
    (report.out / MARKER).unlink(missing_ok=True)
    path = write_report(finished, preset, report.out, missing=[s.name for s in rl if not s.done()])
    if len(finished) < len(rl):
        echo(f"[partial] the report leaves out {len(rl) - len(finished)} unfinished RL stages: "
             + ", ".join(s.name for s in rl if not s.done()))
    else:
        (report.out / MARKER).write_text(json.dumps({"stage": report.name, "finished": True, "config": {}},
                                                    indent=1) + "\n")
    echo(f"[report] {path}")
    return path


def reproduce(preset_name: str | Path, out: str | Path, *, stage: str | None = None, dry_run: bool = False,
              report_only: bool = False, jobs: int = 1, echo: Callable[[str], None] = print,
              on_row: Callable[[dict[str, Any]], None] | None = None, import_from: str | Path | None = None,
              export_to: str | Path | None = None) -> list[Stage]:
    """Run the preset's plan (or one ``stage`` of it, or with ``report_only`` only rebuild the report);
    finished stages are skipped, and so are unfinished ones that no unfinished RL stage reads; ``jobs``
    > 1 runs independent stages at once (module rules). ``import_from`` first copies in the RL stages
    another run exported, ``export_to`` finally exports this run's results (:mod:`.reproduce_archive`).
    Returns the plan."""
    if jobs < 1:
        raise PresetError(f"jobs must be >= 1, got {jobs}")
    preset = load_preset(preset_name)
    stages = plan(preset, out)
    if stage is not None and stage not in {s.name for s in stages}:
        raise PresetError(f"no stage {stage!r}; stages: {', '.join(s.name for s in stages)}")
    if report_only and (stage is not None or dry_run):
        raise PresetError("--report-only runs no stage: it goes without --stage and --dry-run")
    imported: list[str] = []
    if import_from is not None:  # a dry run only checks the import and names what it would copy
        imported = import_results(stages, Path(out), Path(import_from), dry_run=dry_run)
        echo(f"[import] {len(imported)} finished RL stage(s) {'would come ' if dry_run else ''}from {import_from}"
             + "".join(f"\n  {n}" for n in imported))
    if report_only:
        rebuild_report(stages, preset, echo)
    elif dry_run:
        for line in describe(stages, importing=imported):
            echo(line)
    else:
        run_plan(preset_name, out, stages, preset, stage=stage, jobs=jobs, echo=echo, on_row=on_row)
    if export_to is not None:
        exported = export_results(stages, Path(out), Path(export_to), dry_run=dry_run)
        echo(f"[export] {len(exported)} finished stage(s) {'would go ' if dry_run else ''}to {export_to} "
             "(results only: no checkpoints, no rollouts)")
    return stages


def run_plan(preset_name: str | Path, out: str | Path, stages: list[Stage], preset: dict[str, Any], *,
             stage: str | None, jobs: int, echo: Callable[[str], None],
             on_row: Callable[[dict[str, Any]], None] | None) -> None:
    """Run ``stage`` alone, or every stage still needed (:func:`needed_stages`), with ``jobs`` at once."""
    parallel = jobs > 1 and stage is None
    if parallel:
        run_parallel(preset_name, out, stages, jobs, echo)
    needed = {s.name for s in needed_stages(stages)}
    for item in stages:
        if (stage is not None and item.name != stage) or (parallel and item.kind != "report"):
            continue  # (with jobs, the rest ran in their own processes)
        if item.done() or (stage is None and item.name not in needed):
            echo(f"[done] {item.name}" if item.done() else f"[skip] {item.name}: no unfinished stage reads it")
            continue
        echo(f"[run] {item.name}")
        with progress.installed(progress.milestones(echo)):  # a first data build shows in the stage's log
            run_stage(item, stages, preset, on_row)


# -- several stages at once (--jobs) --------------------------------------------------------------
def ready_stages(pending: list[Stage], running: list[Stage], stages: list[Stage]) -> list[Stage]:
    """The pending stages that may start now, in plan order: every stage they read has finished, and
    none shares its start evaluation with a running stage (which would evaluate the start twice)."""
    by_name = {s.name: s for s in stages}
    busy = [evaluation_key(s) for s in running]
    return [s for s in pending
            if all(by_name[need].done() for need in s.needs)
            and (evaluation_key(s) is None or evaluation_key(s) not in busy)]


def stage_threads(cores: int, jobs: int, running: int, ready: int) -> int:
    """Torch threads for the stages starting now: cores/jobs, but every core for a lone ready stage with
    nothing running, since nothing else can start before it ends (the SFT start, for one)."""
    return cores if running == 0 and ready == 1 else max(1, cores // jobs)


def stage_log(out: str | Path, stage: Stage) -> Path:
    return Path(out) / "logs" / (stage.name.replace("/", "__") + ".log")


def run_parallel(preset_name: str | Path, out: str | Path, stages: list[Stage], jobs: int,
                 echo: Callable[[str], None] = print) -> None:
    """Every stage but the report, up to ``jobs`` at once, each in a spawned process (module rules)."""
    import os
    from multiprocessing.connection import wait

    from seed_gym.registry import spec
    from seed_gym.spawning import main_free_spawn_context

    context = main_free_spawn_context()
    cores = len(os.sched_getaffinity(0))
    preset_ref = str(Path(preset_name).resolve()) if Path(preset_name).exists() else str(preset_name)
    pending = [s for s in needed_stages(stages) if s.kind != "report"]
    for s in stages:
        if s.kind != "report" and s.done():
            echo(f"[done] {s.name}")
        elif s.kind != "report" and s not in pending:
            echo(f"[skip] {s.name}: no unfinished stage reads it")
    running: dict[Any, tuple[Stage, Any, float]] = {}  # sentinel -> (stage, process, start time)
    failed: list[str] = []
    try:
        while pending or running:
            if not failed:
                busy = [item for item, _, _ in running.values()]
                ready = ready_stages(pending, busy, stages)
                threads = stage_threads(cores, jobs, len(running), len(ready))
                for item in ready[: jobs - len(running)]:
                    log = stage_log(out, item)
                    log.parent.mkdir(parents=True, exist_ok=True)
                    env_spec = spec(item.env) if item.env else None  # runtime-registered envs travel with it
                    process = context.Process(target=_stage_process, name=f"seed-gym {item.name}",
                                              args=(preset_ref, str(out), item.name, str(log), threads, env_spec))
                    process.start()
                    running[process.sentinel] = (item, process, time.time())
                    pending.remove(item)
                    echo(f"[run] {item.name} ({threads} threads; log {log})")
            if not running:
                if failed or not pending:
                    break
                raise PresetError("no stage can start: " + ", ".join(s.name for s in pending))
            for sentinel in wait(list(running)):
                item, process, started = running.pop(sentinel)
                process.join()
                if item.done():
                    echo(f"[done] {item.name} in {time.time() - started:.0f} s")
                else:
                    failed.append(f"{item.name} (exit code {process.exitcode}; log {stage_log(out, item)})")
                    echo(f"[failed] {failed[-1]}")
    finally:
        for _, process, _ in running.values():  # stopped early: the stages resume on the next run
            process.terminate()
            process.join()
    if failed:
        raise PresetError(f"{len(failed)} stage(s) failed: " + "; ".join(failed))


def _stage_process(preset_ref: str, out: str, name: str, log: str, threads: int, env_spec: Any) -> None:
    """One stage in a child process: its output (a traceback too) to ``log``, ``threads`` torch threads."""
    import os
    import sys

    stream = open(log, "a", buffering=1, encoding="utf-8")  # left open: the exiting process closes it
    os.dup2(stream.fileno(), 1)
    os.dup2(stream.fileno(), 2)
    sys.stdout = sys.stderr = stream
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(threads)
    import torch

    torch.set_num_threads(threads)
    if env_spec is not None:
        from seed_gym.registry import register

        register(env_spec.env_id, env_spec.entry_point, description=env_spec.description,
                 profile=env_spec.profile, **env_spec.default_kwargs)
    reproduce(preset_ref, out, stage=name, echo=print,
              on_row=lambda row: print(f"update {row['update']}: {json.dumps(row, default=str)[:400]}"))
