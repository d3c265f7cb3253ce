"""Loading and validating what a leaderboard is built from: run directories and submissions.

Rules (the layout is documented in ``leaderboards/SUBMITTING.md``):

* A **run directory** is what ``seed-gym eval`` writes: ``manifest.json`` (with ``identity``),
  ``episodes.jsonl`` and ``summary.json``. Its numbers are recomputed from ``episodes.jsonl`` with
  :func:`seed_gym.scoring.summarize`; a ``summary.json`` that disagrees with the records is an error.
* A **submission** is a folder with ``submission.json`` and one or more run directories below it
  (at most two levels down). Its metadata applies to all of its runs. A folder passed on the command
  line that is neither a run nor a submission is searched for runs the same way (``eval --out DIR``
  writes ``DIR/<agent>/``); such local runs get metadata derived from their manifest.
* A run must be complete: every planned episode finished.
* Optional ``metrics.jsonl`` (training curves) sits in the submission folder or a run folder.
* A **training run** folder (what ``seed-gym train --out DIR`` writes: ``config.json``,
  ``metrics.jsonl``, ``evals/update-N/<split>/``) contributes the run directories of its latest
  evaluation, named after the algorithm and model, and its eval rows as learning curves (lines of
  ``metrics.jsonl`` without a ``split`` are per-update training statistics and are not curve points).

Every problem found is reported at once in one :class:`SubmissionError`, naming the file.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seed_gym.core import SeedGymError
from seed_gym.records import EPISODES, MANIFEST, SUMMARY, EpisodeRecord, RunDir
from seed_gym.scoring import summarize

SUBMISSION_FILE = "submission.json"
METRICS_FILE = "metrics.jsonl"
REQUIRED_FIELDS: dict[str, type] = {"name": str, "model": str, "contact": str, "date": str}
OPTIONAL_FIELDS: dict[str, type] = {"agent": str, "notes": str, "url": str, "organization": str}
IDENTITY_KEYS = ("env", "env_version", "split", "split_fingerprint", "data_fingerprint", "agent",
                 "max_steps", "group", "seed", "tasks", "tasks_fingerprint")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
SUMMARY_TOLERANCE = 1e-9


class SubmissionError(SeedGymError, ValueError):
    """A run or submission cannot be used; the message lists every problem found."""


@dataclass(frozen=True)
class Submission:
    """Who made a set of runs. ``verified`` is false for everything built here: a maintainer marks
    rows verified only after rerunning them."""

    name: str
    model: str
    contact: str = ""
    date: str = ""
    agent: str | None = None
    notes: str = ""
    url: str = ""
    organization: str = ""
    source: str = "local"  # "submission" when read from a submission.json


@dataclass(frozen=True)
class CurvePoint:
    """One line of ``metrics.jsonl``: a validation measurement after ``update`` training updates."""

    update: int
    split: str
    values: Mapping[str, float]


@dataclass
class LoadedRun:
    """One validated run: identity, recomputed summary, records and who submitted it."""

    path: Path
    identity: dict[str, Any]
    provenance: dict[str, Any]
    summary: dict[str, Any]
    records: list[EpisodeRecord]
    submission: Submission
    curve: list[CurvePoint] = field(default_factory=list)
    training_dir: Path | None = None  # the ``seed-gym train`` run folder this evaluation belongs to

    @property
    def label(self) -> str:
        """The row name: the submission name, plus the agent spec when it adds information."""
        name, agent = self.submission.name, self.identity["agent"]
        return name if name == agent else f"{name} ({agent})"


# -- submission metadata -------------------------------------------------------------------
def parse_submission(data: Any, where: str) -> tuple[Submission | None, list[str]]:
    """Validate a ``submission.json`` object; returns the metadata or the list of problems."""
    if not isinstance(data, Mapping):
        return None, [f"{where}: must be a JSON object"]
    problems = []
    for key, kind in REQUIRED_FIELDS.items():
        if key not in data:
            problems.append(f"{where}: missing required field {key!r}")
        elif not isinstance(data[key], kind) or not str(data[key]).strip():
            problems.append(f"{where}: {key!r} must be a non-empty string")
    for key, kind in OPTIONAL_FIELDS.items():
        if key in data and not isinstance(data[key], kind):
            problems.append(f"{where}: {key!r} must be a string")
    unknown = sorted(set(data) - set(REQUIRED_FIELDS) - set(OPTIONAL_FIELDS))
    if unknown:
        known = ", ".join([*REQUIRED_FIELDS, *OPTIONAL_FIELDS])
        problems.append(f"{where}: unknown field(s) {', '.join(map(repr, unknown))} (known: {known})")
    if isinstance(data.get("date"), str) and data["date"] and not DATE_RE.match(data["date"]):
        problems.append(f"{where}: 'date' must be YYYY-MM-DD, got {data['date']!r}")
    if problems:
        return None, problems
    return Submission(**{k: data[k] for k in (*REQUIRED_FIELDS, *OPTIONAL_FIELDS) if k in data},
                      source="submission"), []


def local_submission(identity: Mapping[str, Any]) -> Submission:
    """Metadata for a run without ``submission.json``: named after its agent spec."""
    agent = str(identity.get("agent", "?"))
    kind, _, target = agent.partition("@")[0].partition(":")
    return Submission(name=agent, model=target or kind, agent=agent)


# -- learning curves -------------------------------------------------------------------------
def parse_metrics(lines: Iterable[str], where: str) -> tuple[list[CurvePoint], list[str]]:
    """Read ``metrics.jsonl``: each line needs an integer ``update`` >= 0, a ``split`` string and
    a ``success_rate`` in [0, 1]; other numeric keys are kept; blank lines are skipped."""
    points, problems = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        at = f"{where} line {number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(f"{at}: not JSON ({error.msg})")
            continue
        if not isinstance(item, dict):
            problems.append(f"{at}: must be a JSON object")
            continue
        line_problems = _curve_point_problems(item)
        if line_problems:
            problems += [f"{at}: {problem}" for problem in line_problems]
            continue
        values = {k: float(v) for k, v in item.items()
                  if k not in ("update", "split") and _is_number(v)}
        points.append(CurvePoint(update=item["update"], split=item["split"], values=values))
    return sorted(points, key=lambda p: (p.split, p.update)), problems


def _curve_point_problems(item: Mapping[str, Any]) -> list[str]:
    update, split = item.get("update"), item.get("split")
    problems = []
    if not isinstance(update, int) or isinstance(update, bool) or update < 0:
        problems.append("'update' must be an integer >= 0")
    if not isinstance(split, str) or not split:
        problems.append("'split' must be a non-empty string")
    if not _is_rate(item.get("success_rate")):
        problems.append("'success_rate' must be a number in [0, 1]")
    return problems


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_rate(value: Any) -> bool:
    return _is_number(value) and 0.0 <= value <= 1.0


# -- run directories -----------------------------------------------------------------------
def load_run(path: Path, submission: Submission | None = None) -> LoadedRun:
    """Read and check one run directory; raises :class:`SubmissionError` listing every problem."""
    run = RunDir(path)
    problems: list[str] = []
    try:
        manifest = run.read_manifest()
    except (SeedGymError, json.JSONDecodeError) as error:
        raise SubmissionError(f"{path / MANIFEST}: unreadable ({error})") from None
    identity = manifest.get("identity")
    if not isinstance(identity, dict):
        raise SubmissionError(f"{path / MANIFEST}: no 'identity' object")
    missing = [key for key in IDENTITY_KEYS if key not in identity]
    if missing:
        problems.append(f"{path / MANIFEST}: identity lacks {', '.join(missing)}")
    records = _planned_records(run, manifest, identity)
    planned = int(identity.get("tasks", 0)) * int(identity.get("group", 1))
    if not records:
        problems.append(f"{path / EPISODES}: no episodes")
    elif len(records) < planned:
        problems.append(f"{path}: incomplete run, {len(records)} of {planned} planned episodes "
                        "finished (run the same `seed-gym eval` again to resume it)")
    summary = summarize(records)
    problems += _check_summary(run, summary)
    if submission and submission.agent and submission.agent != identity.get("agent"):
        problems.append(f"{path}: submission.json says agent {submission.agent!r} but the run "
                        f"was made by {identity.get('agent')!r}")
    curve, curve_problems = _read_curve(path)
    problems += curve_problems
    if problems:
        raise SubmissionError("\n".join(problems))
    return LoadedRun(path=path, identity=identity, provenance=manifest.get("provenance", {}),
                     summary=summary, records=records, curve=curve,
                     submission=submission or local_submission(identity))


def _planned_records(run: RunDir, manifest: Mapping[str, Any],
                     identity: Mapping[str, Any]) -> list[EpisodeRecord]:
    """The finished episodes of the planned tasks, exactly the ones ``evaluate`` scores."""
    task_ids = manifest.get("task_ids")
    finished = list(run.finished().values())
    if not isinstance(task_ids, list):
        return finished
    planned, group = set(task_ids), int(identity.get("group", 1))
    return [r for r in finished if r.task.get("id") in planned and r.group_index < group]


def _check_summary(run: RunDir, recomputed: Mapping[str, Any]) -> list[str]:
    """``summary.json``, when present, must agree with the records on every headline metric."""
    if not run.summary_path.exists():
        return []
    try:
        stored = run.read_summary()
    except json.JSONDecodeError as error:
        return [f"{run.summary_path}: not JSON ({error.msg})"]
    problems = []
    for key in ("episodes", "success_rate", "mean_score", "mean_steps", "invalid_action_rate"):
        a, b = stored.get(key), recomputed.get(key)
        if a is None or b is None:
            continue
        if abs(float(a) - float(b)) > SUMMARY_TOLERANCE:
            problems.append(f"{run.summary_path}: {key} = {a} but episodes.jsonl gives {b}")
    return problems


def _read_curve(folder: Path) -> tuple[list[CurvePoint], list[str]]:
    path = folder / METRICS_FILE
    if not path.exists():
        return [], []
    return parse_metrics(path.read_text(encoding="utf-8").splitlines(), str(path))


# -- discovery -------------------------------------------------------------------------------
def find_run_dirs(folder: Path, depth: int = 2) -> list[Path]:
    """Run directories at ``folder`` or up to ``depth`` levels below it, sorted."""
    if (folder / MANIFEST).exists():
        return [folder]
    if depth == 0 or not folder.is_dir():
        return []
    return [run for child in sorted(folder.iterdir()) if child.is_dir()
            for run in find_run_dirs(child, depth - 1)]


def load_submission_folder(folder: Path) -> list[LoadedRun]:
    """All runs of one submission folder (with ``submission.json``); curves at the top level
    attach to every run of the submission."""
    where = folder / SUBMISSION_FILE
    try:
        submission, problems = parse_submission(json.loads(where.read_text(encoding="utf-8")), str(where))
    except json.JSONDecodeError as error:
        submission, problems = None, [f"{where}: not JSON ({error.msg} at line {error.lineno})"]
    run_dirs = find_run_dirs(folder)
    if not run_dirs:
        problems.append(f"{folder}: a submission needs at least one run directory "
                        f"(a folder with {MANIFEST}, {EPISODES} and {SUMMARY})")
    curve, curve_problems = _read_curve(folder)
    runs = _load_all(run_dirs, submission, problems + curve_problems)
    assert submission is not None  # _load_all raised otherwise
    for run in runs:
        run.curve = run.curve or curve
    return runs


def load_inputs(paths: Sequence[Path]) -> list[LoadedRun]:
    """Everything named on the command line: run dirs, submission folders, or folders of either.
    All problems of all inputs are collected before raising."""
    runs, problems = [], []
    for path in paths:
        path = Path(path)
        if not path.exists():
            problems.append(f"{path}: no such file or folder")
            continue
        try:
            runs += _load_one_input(path)
        except SubmissionError as error:
            problems.append(str(error))
    if problems:
        raise SubmissionError("\n".join(problems))
    by_path: dict[Path, LoadedRun] = {}
    for run in runs:
        by_path.setdefault(run.path.resolve(), run)  # a run named twice is shown once
    unique = list(by_path.values())
    if not unique:
        raise SubmissionError("no run directories found in: " + ", ".join(map(str, paths)))
    return unique


def is_training_run(path: Path) -> bool:
    return (path / "config.json").is_file() and (path / "evals").is_dir()


def metrics_rows(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a training run's ``metrics.jsonl`` (none without one); a line torn by a
    kill is skipped."""
    rows = []
    for line in (path / METRICS_FILE).read_text(encoding="utf-8").splitlines() if (path / METRICS_FILE).exists() else []:
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict):
            rows.append(item)
    return rows


def training_curve(path: Path) -> list[CurvePoint]:
    """The evaluation rows of a training run's ``metrics.jsonl`` (those with a ``split``)."""
    points = [CurvePoint(item["update"], item["split"],
                         {k: float(v) for k, v in item.items() if k not in ("update", "split") and _is_number(v)})
              for item in metrics_rows(path) if "split" in item and not _curve_point_problems(item)]
    return sorted(points, key=lambda p: (p.split, p.update))


def load_training_folder(path: Path) -> list[LoadedRun]:
    """The latest evaluation of a ``seed-gym train`` run, with its learning curves."""
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))["config"]
    except (json.JSONDecodeError, KeyError) as error:
        raise SubmissionError(f"{path / 'config.json'}: not a seed-gym training config ({error})") from None
    evals = sorted(p for p in (path / "evals").iterdir() if p.is_dir())
    if not evals:
        raise SubmissionError(f"{path}: this training run has no evaluation yet (see its eval_every)")
    latest = evals[-1]
    name = f"{config['algo']} {Path(config['model']).name} ({latest.name})"
    submission = Submission(name=name, model=str(config["model"]), notes=f"seed-gym train --algo {config['algo']}")
    runs = _load_all(find_run_dirs(latest), submission, [])
    curve = training_curve(path)
    for run in runs:
        run.curve, run.training_dir = curve, path
    return runs


def _load_one_input(path: Path) -> list[LoadedRun]:
    if is_training_run(path):
        return load_training_folder(path)
    if (path / SUBMISSION_FILE).exists():
        return load_submission_folder(path)
    submissions = [child for child in sorted(path.iterdir()) if (child / SUBMISSION_FILE).exists()] \
        if path.is_dir() and not (path / MANIFEST).exists() else []
    if submissions:
        return [run for child in submissions for run in load_submission_folder(child)]
    run_dirs = find_run_dirs(path)
    if not run_dirs:
        raise SubmissionError(f"{path}: not a run directory or submission (no {MANIFEST} or "
                              f"{SUBMISSION_FILE} found up to two levels down)")
    return _load_all(run_dirs, None, [])


def _load_all(run_dirs: Sequence[Path], submission: Submission | None, problems: list[str]) -> list[LoadedRun]:
    """Load every run, then raise once with ``problems`` plus every run's problems, if any."""
    runs = []
    for run_dir in run_dirs:
        try:
            runs.append(load_run(run_dir, submission))
        except SubmissionError as error:
            problems.append(str(error))
    if problems:
        raise SubmissionError("\n".join(problems))
    return runs
