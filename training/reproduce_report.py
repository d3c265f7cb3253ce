"""The report of a ``seed-gym reproduce`` run: HTML, Markdown and JSON from the RL stages' run folders.

What it holds, per env (every number is read from the runs' ``metrics.jsonl`` and evaluation
episodes; nothing is typed in except the paper's rows, which are labelled as such):

* **Curves**: success on every eval split against updates and against env steps (cumulative
  ``env/steps`` of the update rows), per arm: the mean over seeds and the min/max band.
* **Final**: success at the start (update 0: the arm's SFT start) and at the last evaluation, per
  split, pooled over seeds, with a 95% Wilson interval over the pooled episodes.
* **Paired comparisons** on the same evaluation episodes (same seed, same task list): each arm's end
  against its start, and each arm against ``grpo``; the mean difference over (seed, episode) pairs and
  its 95% interval as ``seed-gym compare`` gives it (:func:`seed_gym.leaderboards.compare.paired_success_interval`:
  Newcombe's paired score interval over the effective pairs of (seed, task) clusters).
* **Updates to reach a threshold**: per split, the threshold is the ``grpo`` arm's final success (the
  mean over seeds at its last evaluation): the baseline's end level. Per arm, the first evaluated update
  (and its env steps) whose mean-over-seeds success reaches it; None ("not reached") when none does;
  update 0 when the arm's start already does.
* **SEED against GRPO**: ``seed-gym compare`` (:func:`seed_gym.leaderboards.compare.compare_run_pairs`) of
  the two arms' final evaluations on ``unseen``, per seed (A = grpo, B = seed, same seed) and pooled over
  the seeds.
* **Ablations** (the paper's Table 2): ``seed`` and each of :data:`ABLATIONS` at their start and end, with
  the paired difference ablation − seed at the end (as the comparisons above).
* **Training statistics**: mean ``gate_mean``, ``gate_active_ratio``, ``teacher_gap_mean``, the
  analyzer's ``skill_parse_rate`` and ``skill_cut_rate`` (replies stopped at ``analyzer_max_new_tokens``), the rollouts' success and invalid-action rate and the mean
  ``|advantage|`` (0 when every group's episodes scored alike: no policy-gradient signal) over the first
  and the second half of training, and per update (mean,
  min, max over seeds) for those that are rates; per-phase seconds per update
  (:func:`seed_gym.training.costs.phase_table` over every seed's update rows) and wall seconds per seed.
* **Reference**: the SEED paper's Qwen2.5-3B numbers (seed-method.md §12.2, §12.5), labelled as the
  paper's, on another scale: they are not comparable with the runs above.

:func:`write_report` writes ``report.json`` (the data), ``report.md`` and ``report.html`` (one offline page;
both rendered by :mod:`seed_gym.leaderboards.experiment_report`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from seed_gym.leaderboards.compare import paired_success_interval
from seed_gym.leaderboards.runs import metrics_rows
from seed_gym.scoring import wilson_interval
from seed_gym.training.costs import phase_table

#: The SEED paper (arXiv 2607.14777), Qwen2.5-3B, 150 updates: (our arm, the paper's name, ALFWorld, WebShop success).
PAPER_ROWS = (
    ("grpo", "grpo", 75.0, 63.3), ("grpo-opsd", "grpo-opsd", 81.2, 66.4), ("sdar", "sdar", 84.4, 68.0),
    ("seed", "seed", 91.8, 78.9), ("seed-no-skill-sft", "seed w/o hindsight-skill SFT", 86.0, None),
    ("seed-frozen-analyzer", "seed w/o self-evolution (frozen analyzer)", 87.0, None),
    ("seed-static-skills", "seed with static offline skills", 84.4, None),
)
#: SEED's Table 2 ablations, by arm name in the presets.
ABLATIONS = ("seed-no-skill-sft", "seed-frozen-analyzer", "seed-static-skills")
#: The paper's Table 2 is ALFWorld's valid_seen (seed-method.md 12.5; its unseen table has no ablations).
PAPER_ABLATION_SPLIT = ("alfworld", "seen")
#: The arm whose final success is the threshold, and the split SEED is compared with it on.
BASELINE, COMPARED_SPLIT = "grpo", "unseen"
#: Training statistics that are rates, drawn per update.
RATE_STATS = ("success_rate", "invalid_action_rate", "gate_mean", "gate_active_ratio", "skill_parse_rate",
              "skill_cut_rate")
def read_run(folder: Path) -> dict[str, Any]:
    """A run's update rows and evaluation rows (the last row of each update/split wins). An evaluation's
    ``run_dir`` is its folder inside ``folder`` when it is there: a run folder read after it was moved,
    or imported from an export (:mod:`.reproduce_archive`), reads its own evaluations."""
    from seed_gym.training.runs import TrainRun

    rows = metrics_rows(folder)  # a line torn by a kill is skipped
    updates = {row["update"]: row for row in rows if "split" not in row}
    evals: dict[str, dict[int, dict[str, Any]]] = {}
    layout = TrainRun(folder)
    for row in rows:
        if "split" in row:
            local = layout.eval_dir(row["update"], row["split"])
            if local.is_dir():
                row = {**row, "run_dir": str(local)}
            evals.setdefault(row["split"], {})[row["update"]] = row
    return {"updates": [updates[k] for k in sorted(updates)], "evals": evals, "provenance": provenance(folder, evals)}


def provenance(folder: Path, evals: dict[str, dict[int, dict[str, Any]]]) -> dict[str, Any]:
    """Where a stage's numbers come from: its start's fingerprint and wall seconds (``stage.json``), and the
    code (git commit) and time of its last evaluation (that run folder's manifest). A report that pools
    stages run on several machines (``--import``) shows that they share one start."""
    def read(path: Path) -> dict[str, Any]:
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}

    marker = read(folder / "stage.json")
    last = max(((u, row) for rows in evals.values() for u, row in rows.items()), default=(None, None),
               key=lambda item: item[0])[1]
    made = read(Path(last["run_dir"]) / "manifest.json").get("provenance", {}) if last else {}
    return {"start": (marker.get("start") or {}).get("fingerprint"), "seconds": marker.get("seconds"),
            "commit": made.get("git_commit"), "evaluated": made.get("created")}


def outcomes(run_dir: str) -> dict[str, float]:
    """episode id -> won (1.0 / 0.0) of one evaluation run folder."""
    path = Path(run_dir) / "episodes.jsonl"
    if not path.is_file():
        return {}
    return {r["episode_id"]: float(bool(r.get("won"))) for r in map(json.loads, path.read_text().splitlines()) if r}


def _band(values: list[float]) -> dict[str, float]:
    return {"mean": sum(values) / len(values), "min": min(values), "max": max(values)}


def _half_means(rows: list[dict[str, Any]], key: str) -> list[float | None]:
    """Mean of ``key`` over the rows of the first half of the updates, then of the second half (the rows
    of every seed: halves are by update number, not by row order, which runs seed after seed)."""
    values = [(row["update"], row[key]) for row in rows if isinstance(row.get(key), (int, float))]
    if not values:
        return [None, None]
    updates = sorted({update for update, _ in values})
    last_of_first = updates[max(1, len(updates) // 2) - 1]
    first = [v for u, v in values if u <= last_of_first]
    second = [v for u, v in values if u > last_of_first] or first
    return [sum(first) / len(first), sum(second) / len(second)]


def summarise(runs: list[tuple[str, str, int, Path]]) -> dict[str, Any]:
    """``runs`` = (env, arm, seed, folder) of every finished RL stage -> the report's data."""
    data: dict[str, Any] = {}
    loaded = [(env, arm, seed, read_run(folder)) for env, arm, seed, folder in runs]
    for env in dict.fromkeys(env for env, *_ in loaded):
        runs_of = {arm: [(seed, run) for e, a, seed, run in loaded if e == env and a == arm]
                   for arm in dict.fromkeys(a for e, a, *_ in loaded if e == env)}
        arms = {arm: summarise_arm(seeds) for arm, seeds in runs_of.items()}
        data[env] = {"arms": arms, "comparisons": compare(arms, runs_of), "thresholds": thresholds(arms),
                     "ablation": ablation(env, arms, runs_of), "seed_vs_grpo": seed_vs_grpo(runs_of)}
    return data


def summarise_arm(seeds: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    curves, final = {}, {}
    splits = sorted({split for _, run in seeds for split in run["evals"]})
    for split in splits:
        updates = sorted(set.intersection(*(set(run["evals"].get(split, {})) for _, run in seeds)))
        steps = []
        for update in updates:  # env steps spent before the evaluation of ``update``, mean over seeds
            steps.append(sum(sum(row.get("env/steps", 0) for row in run["updates"] if row["update"] <= update)
                             for _, run in seeds) / len(seeds))
        curves[split] = [{"update": u, "env_steps": s, **_band([run["evals"][split][u]["success_rate"] for _, run in seeds])}
                         for u, s in zip(updates, steps)]
        if updates:
            final[split] = {"start": pooled([run["evals"][split][updates[0]] for _, run in seeds]),
                            "end": pooled([run["evals"][split][updates[-1]] for _, run in seeds]),
                            "end_update": updates[-1]}
    updates = [row for _, run in seeds for row in run["updates"]]
    training = {key: _half_means(updates, key) for key in
                ("gate_mean", "gate_active_ratio", "teacher_gap_mean", "skill_parse_rate", "skill_cut_rate",
                 "success_rate", "invalid_action_rate", "advantage_abs_mean")}
    phases = sorted({k for row in updates for k in row if k.startswith("time/")})
    cost = {k: sum(row.get(k, 0.0) for row in updates) / len(seeds) for k in phases}
    per_update = [{"phase": phase, "seconds": seconds, "share": share, "count": count}
                  for phase, seconds, share, count in phase_table(updates)]
    wall = [sum(row.get("seconds", 0.0) + row.get("time/eval_s", 0.0) for row in run["updates"]) for _, run in seeds]
    return {"seeds": [seed for seed, _ in seeds], "provenance": {str(seed): run["provenance"] for seed, run in seeds},
            "curves": curves, "final": final, "training": training,
            "training_curves": training_curves(seeds), "cost_per_seed": cost, "phases_per_update": per_update,
            "wall_seconds_per_seed": sum(wall) / len(wall)}


def training_curves(seeds: list[tuple[int, dict[str, Any]]]) -> dict[str, list[dict[str, float]]]:
    """Each of :data:`RATE_STATS` that the update rows carry -> per update: mean, min, max over the seeds."""
    curves = {}
    for key in RATE_STATS:
        by_update: dict[int, list[float]] = {}
        for _, run in seeds:
            for row in run["updates"]:
                if isinstance(row.get(key), (int, float)):
                    by_update.setdefault(row["update"], []).append(float(row[key]))
        if by_update:
            curves[key] = [{"update": update, **_band(values)} for update, values in sorted(by_update.items())]
    return curves


def reached(curve: list[dict[str, Any]], level: float) -> dict[str, float] | None:
    """The first point of a curve whose mean reaches ``level`` (its update and env steps), else None."""
    for point in curve:
        if point["mean"] >= level - 1e-9:  # rates of the same episode count compare exactly; allow rounding
            return {"update": point["update"], "env_steps": point["env_steps"]}
    return None


def thresholds(arms: dict[str, Any]) -> dict[str, Any]:
    """Per split: the baseline's final mean success and, per arm, where it first reaches it (module rules)."""
    if BASELINE not in arms:
        return {}
    result = {}
    for split, curve in arms[BASELINE]["curves"].items():
        if curve:
            level = curve[-1]["mean"]
            result[split] = {"threshold": level, "arms": {arm: reached(summary["curves"].get(split, []), level)
                                                          for arm, summary in arms.items()}}
    return result


def ablation(env: str, arms: dict[str, Any], runs: dict[str, list[tuple[int, dict[str, Any]]]]) -> list[dict[str, Any]]:
    """``seed`` and its ablations per split: start, end, the paired end difference ablation − seed, and
    the paper's Table 2 figure beside the one split it was measured on (:data:`PAPER_ABLATION_SPLIT`)."""
    if "seed" not in arms:
        return []
    paper = {arm: alfworld for arm, _, alfworld, _ in PAPER_ROWS}
    rows = []
    for split in arms["seed"]["final"]:
        for arm in ("seed", *ABLATIONS):
            final = arms.get(arm, {}).get("final", {}).get(split)
            if final is None:
                continue
            versus = None if arm == "seed" else _paired(runs[arm], runs["seed"], split, "end", "end")
            rows.append({"arm": arm, "split": split, "start": final["start"], "end": final["end"],
                         "vs_seed": versus,
                         "paper_alfworld": paper.get(arm) if (env, split) == PAPER_ABLATION_SPLIT else None})
    return rows


def _end_run_dir(run: dict[str, Any], split: str) -> Path:
    evals = run["evals"][split]
    return Path(evals[max(evals)]["run_dir"])


def seed_vs_grpo(runs: dict[str, list[tuple[int, dict[str, Any]]]], split: str = COMPARED_SPLIT) -> dict[str, Any] | None:
    """``seed-gym compare`` of the baseline's (A) and ``seed``'s (B) final evaluations on ``split``, per seed
    and pooled; None without both arms there. A run that cannot be compared is reported, not raised."""
    from seed_gym.leaderboards.compare import compare_run_pairs
    from seed_gym.leaderboards.runs import SubmissionError, load_run

    if BASELINE not in runs or "seed" not in runs:
        return None
    baseline = dict(runs[BASELINE])
    folders = [(seed, _end_run_dir(baseline[seed], split), _end_run_dir(run, split)) for seed, run in runs["seed"]
               if seed in baseline and split in run["evals"] and split in baseline[seed]["evals"]]
    if not folders:
        return None
    result: dict[str, Any] = {"split": split, "a": BASELINE, "b": "seed",
                              "commands": [f"seed-gym compare {a} {b}" for _, a, b in folders], "columns": {}}
    try:
        loaded = [(seed, load_run(a), load_run(b)) for seed, a, b in folders]
        for seed, a, b in loaded:
            result["columns"][f"seed {seed}"] = asdict(compare_run_pairs([(a, b)]))
        if len(loaded) > 1:
            result["columns"][f"pooled ({len(loaded)} seeds)"] = asdict(compare_run_pairs([(a, b) for _, a, b in loaded]))
    except SubmissionError as error:
        result["error"] = str(error)
    return result


def pooled(rows: list[dict[str, Any]]) -> dict[str, Any]:
    wins = sum(round(row["success_rate"] * row["episodes"]) for row in rows)
    n = sum(row["episodes"] for row in rows)
    low, high = wilson_interval(wins, n)
    return {"success": wins / max(1, n), "episodes": n, "ci95": [low, high]}


def _paired(first: list[tuple[int, dict[str, Any]]], second: list[tuple[int, dict[str, Any]]], split: str,
            first_update: str, second_update: str) -> dict[str, Any] | None:
    """Paired difference first − second over (seed, episode) pairs of one split's evaluations."""
    clusters: dict[tuple[int, str], list[tuple[float, float]]] = {}  # (seed, task id) -> its (second, first) pairs
    other = dict(second)
    for seed, run in first:
        if seed not in other or split not in run["evals"] or split not in other[seed]["evals"]:
            continue
        a_evals, b_evals = run["evals"][split], other[seed]["evals"][split]
        a_row = a_evals[max(a_evals)] if first_update == "end" else a_evals[min(a_evals)]
        b_row = b_evals[max(b_evals)] if second_update == "end" else b_evals[min(b_evals)]
        a, b = outcomes(a_row["run_dir"]), outcomes(b_row["run_dir"])
        for episode in sorted(set(a) & set(b)):
            clusters.setdefault((seed, episode.rsplit("#", 1)[0]), []).append((b[episode], a[episode]))
    if not clusters:
        return None
    differences = [first - second for cluster in clusters.values() for second, first in cluster]
    return {"diff": sum(differences) / len(differences), "ci95": paired_success_interval(list(clusters.values())),
            "pairs": len(differences)}


def compare(arms: dict[str, Any], runs: dict[str, list[tuple[int, dict[str, Any]]]]) -> list[dict[str, Any]]:
    rows = []
    for arm in arms:
        for split in arms[arm]["final"]:
            result = _paired(runs[arm], runs[arm], split, "end", "start")
            if result:
                rows.append({"comparison": f"{arm}: end - start", "split": split, **result})
            if arm != "grpo" and "grpo" in runs:
                result = _paired(runs[arm], runs["grpo"], split, "end", "end")
                if result:
                    rows.append({"comparison": f"{arm} - grpo (end)", "split": split, **result})
    return rows


def write_report(stages: Sequence[Any], preset: dict[str, Any], out: Path, missing: Sequence[str] = ()) -> Path:
    """``report.json``, ``report.md`` and ``report.html`` of the finished RL stages (objects with env, arm,
    seed, out), naming the planned RL stages left out (``missing``); returns the Markdown's path."""
    from seed_gym.leaderboards.experiment_report import render_html, render_markdown

    data = summarise([(s.env, s.arm, s.seed, Path(s.out)) for s in stages])
    out.mkdir(parents=True, exist_ok=True)
    payload = {"preset": preset, "envs": data, "missing": list(missing),
               "reference": [{"arm": arm, "paper_arm": name, "alfworld": alf, "webshop_success": web,
                              "source": "arXiv 2607.14777 [P]"} for arm, name, alf, web in PAPER_ROWS]}
    (out / "report.json").write_text(json.dumps(payload, indent=1, default=str) + "\n")
    (out / "report.md").write_text(render_markdown(payload))
    (out / "report.html").write_text(render_html(payload))
    return out / "report.md"
