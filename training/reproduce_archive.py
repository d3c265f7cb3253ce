"""A ``seed-gym reproduce`` run's results apart from its weights: export them to keep, import them to go on.

A cpu-mini run is longer than the life of the machine that starts it, and its checkpoints are too big to
keep. What the report reads is small: each finished RL stage's ``stage.json``, ``config.json``,
``metrics.jsonl`` and evaluation folders. ``--export DIR`` copies those; ``--import DIR`` puts them back
into a new ``--out``, where the plan counts the stages as finished and runs only the others (the start
stages again, for the seeds still to run).

Rules:

* **Export** copies, per finished RL stage, :data:`RESULT_FILES` into ``DIR/rl/<env>/<arm>/seed-<n>/``,
  and :data:`REPORT_FILES` of the report when one was built (a partial one too: it names the stages
  it leaves out), with each evaluation's ``episodes.jsonl`` gzipped (import unpacks it). Checkpoints
  and training rollouts stay behind. A stage that finished before seed-gym recorded its run folder and
  start gets them in the exported ``stage.json``, read from the run folder it is exported from.
* **Import** copies a stage of ``DIR`` into ``OUT`` when the plan has it and it has not finished in
  ``OUT``. Its recorded settings must equal the plan's, with every path under the run folder read
  relative to it (:func:`portable`): a stage of another preset, or of changed settings, is refused by name
  and nothing is copied.
* **One start per stage name.** Every RL stage records the fingerprint of the start it trained from
  (:func:`seed_gym.agents.checkpoints.model_fingerprint` of the start checkpoint). Before a stage
  trains from a checkpoint (an RL stage; skill SFT, which reads the SFT start, so that a mismatch stops
  the run before skill SFT spends its time), the checkpoint must have the fingerprint that the finished
  RL stages from it recorded: a start retrained after an import must be the same weights, or the run
  stops and says so rather than pool seeds of two different starts in one report. Retraining is
  deterministic for the same settings and thread count on one machine; on another machine it need not
  be (its CPU's kernels may round differently: ``provenance.cpu`` in every run's manifest names the CPU).
"""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seed_gym.core import SeedGymError
from seed_gym.records import EPISODES

#: What an RL stage's results are: everything the report reads, nothing that holds weights or rollouts.
RESULT_FILES = ("stage.json", "config.json", "metrics.jsonl", "evals")
#: The report's own files: the HTML page is rebuilt from them (``--report-only``), not kept.
REPORT_FILES = ("report.md", "report.json")
#: The fields of ``stage.json`` that name an RL stage's start.
START_FIELD = "start"


class ArchiveError(SeedGymError, ValueError):
    pass


def portable(value: Any, out: Path) -> Any:
    """``value`` (a stage's settings) with every path under ``out`` written as ``OUT/...``: the settings
    of the same stage planned in another run folder compare equal."""
    if isinstance(value, dict):
        return {key: portable(item, out) for key, item in value.items()}
    if isinstance(value, list):
        return [portable(item, out) for item in value]
    if isinstance(value, str):
        root = str(out).rstrip("/")
        if value == root or value.startswith(root + "/"):
            return "OUT" + value[len(root):]
    return value


def _marker(folder: Path) -> dict[str, Any]:
    try:
        return json.loads((folder / "stage.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ArchiveError(f"{folder / 'stage.json'}: unreadable ({error})") from None


def export_results(stages: Sequence[Any], out: Path, dest: Path, *, dry_run: bool = False) -> list[str]:
    """Copy the results of every finished RL stage, and the report when one was built (a partial one
    too), from ``out`` to ``dest``; returns the stage names copied. An earlier export in ``dest`` is
    replaced stage by stage. With ``dry_run`` it names them and writes nothing."""
    chosen = [stage for stage in stages if (stage.kind == "rl" and stage.done())
              or (stage.kind == "report" and (stage.out / "report.json").is_file())]
    if dry_run:
        return [stage.name for stage in chosen]
    for stage in chosen:
        target = dest / stage.out.relative_to(out)
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for name in RESULT_FILES if stage.kind == "rl" else REPORT_FILES:
            source = stage.out / name
            if source.is_dir():
                shutil.copytree(source, target / name)
            elif source.is_file():
                shutil.copy2(source, target / name)
        if stage.kind == "rl":
            _pack_episodes(target)
            (target / "stage.json").write_text(json.dumps(_complete_marker(stage, out), indent=1) + "\n")
    return [stage.name for stage in chosen]


def _complete_marker(stage: Any, out: Path) -> dict[str, Any]:
    """An RL stage's ``stage.json`` with its run folder and start record, filled in from ``out`` for a
    stage that finished before its version of seed-gym recorded them (its start checkpoint is still there)."""
    marker = _marker(stage.out)
    marker.setdefault("out_root", str(out))
    if START_FIELD not in marker and Path(stage.config["model"]).is_dir():
        marker[START_FIELD] = start_record(stage)
    return marker


def import_results(stages: Sequence[Any], out: Path, source: Path, *, dry_run: bool = False) -> list[str]:
    """Copy every RL stage of ``source`` (an :func:`export_results` folder) that the plan has and ``out``
    has not finished; returns their names. Raises :class:`ArchiveError`, copying nothing, when a stage's
    recorded settings differ from the plan's or ``source`` holds no stage of the plan. With ``dry_run`` it
    checks the same and names what it would copy, but writes nothing."""
    if not source.is_dir():
        raise ArchiveError(f"{source} is not a folder of exported reproduce results")
    found, problems, exported = [], [], 0
    for stage in stages:
        folder = source / stage.out.relative_to(out)
        if stage.kind != "rl" or not (folder / "stage.json").is_file():
            continue
        exported += 1
        marker = _marker(folder)
        recorded = portable(marker.get("config", {}), Path(marker.get("out_root", out)))
        planned = portable(stage.config, out)
        if recorded != planned:
            differing = sorted(k for k in set(recorded) | set(planned) if recorded.get(k) != planned.get(k))
            problems.append(f"{stage.name}: settings differ from the plan's ({', '.join(differing)})")
        elif not stage.done():
            found.append((stage, folder))
    if problems:
        raise ArchiveError(f"{source}: not this plan's results: " + "; ".join(problems))
    if not exported:
        raise ArchiveError(f"{source} holds no RL stage of this plan")
    if dry_run:
        return [stage.name for stage, _ in found]
    for stage, folder in found:
        if stage.out.exists():
            shutil.rmtree(stage.out)  # an unfinished attempt of the same stage: the finished one wins
        shutil.copytree(folder, stage.out)
        _unpack_episodes(stage.out)
    return [stage.name for stage, _ in found]


def _pack_episodes(folder: Path) -> None:
    """Gzip every evaluation's episodes file in place (about 15x smaller; no timestamp, so exporting the
    same stage again writes the same bytes)."""
    for path in folder.rglob(EPISODES):
        path.with_name(EPISODES + ".gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
        path.unlink()


def _unpack_episodes(folder: Path) -> None:
    for path in folder.rglob(EPISODES + ".gz"):
        path.with_name(EPISODES).write_bytes(gzip.decompress(path.read_bytes()))
        path.unlink()


def made_elsewhere(stage: Any, out: Path) -> bool:
    """Whether ``stage`` finished in another run folder than ``out`` (it was imported): its evaluations
    name the agent by that folder's paths, so a stage of ``out`` does not reuse them as its own."""
    return stage.done() and Path(_marker(stage.out).get("out_root", out)) != out


def start_record(stage: Any) -> dict[str, str]:
    """What ``stage.json`` records of an RL stage's start: its path and fingerprint."""
    from seed_gym.agents.checkpoints import model_fingerprint

    return {"model": str(stage.config["model"]), "fingerprint": model_fingerprint(stage.config["model"])}


def check_start(stage: Any, stages: Sequence[Any], out: Path) -> dict[str, str]:
    """The start record of training ``stage`` (RL, or skill SFT, which reads the SFT start), after
    checking it against every finished RL stage that trained from the same start (module rules);
    raises :class:`ArchiveError` on a different fingerprint."""
    mine = start_record(stage)
    own_start = portable(mine["model"], out)
    for other in stages:
        if other is stage or other.kind != "rl" or not other.done():
            continue
        marker = _marker(other.out)
        theirs = marker.get(START_FIELD)
        if not theirs or portable(theirs["model"], Path(marker.get("out_root", out))) != own_start:
            continue
        if theirs["fingerprint"] != mine["fingerprint"]:
            raise ArchiveError(
                f"{stage.name} would train from {own_start} with fingerprint {mine['fingerprint']}, but "
                f"{other.name} (finished, perhaps imported) trained from a start with fingerprint "
                f"{theirs['fingerprint']}: the seeds would not share one start. Retrain the start on the kind "
                "of machine and thread count that made it, or run the plan in a fresh --out")
    return mine
