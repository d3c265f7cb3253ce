"""The report of a ``seed-gym reproduce`` run: Markdown + JSON from the RL stages' run folders.

What it holds, per env (every number is read from the runs' ``metrics.jsonl`` and evaluation
episodes; nothing is typed in except the paper's rows, which are labelled as such):

* **Curves**: success on every eval split against updates and against env steps (cumulative
  ``env/steps`` of the update rows), per arm: the mean over seeds and the min/max band.
* **Final**: success at the start (update 0: the arm's SFT start) and at the last evaluation, per
  split, pooled over seeds, with a 95% Wilson interval over the pooled episodes.
* **Paired comparisons** on the same evaluation episodes (same seed, same task list): each arm's end
  against its start, and each arm against ``grpo``; the mean difference and a 95% paired bootstrap
  interval over (seed, episode) pairs (2,000 resamples, seeded).
* **Training statistics**: mean ``gate_mean``, ``gate_active_ratio``, ``teacher_gap_mean`` and the
  analyzer's ``skill_parse_rate`` over the first and the second half of training; summed per-phase
  seconds (``time/<phase>_s``).
* **Reference**: the SEED paper's Qwen2.5-3B numbers (seed-method.md §12.2, §12.5), labelled as the
  paper's, on another scale: they are not comparable with the runs above.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: The SEED paper (arXiv 2607.14777), Qwen2.5-3B, 150 updates: (arm, ALFWorld, WebShop success).
PAPER_ROWS = (
    ("grpo", 75.0, 63.3), ("grpo-opsd", 81.2, 66.4), ("sdar", 84.4, 68.0), ("seed", 91.8, 78.9),
    ("seed w/o hindsight-skill SFT", 86.0, None), ("seed w/o self-evolution (frozen analyzer)", 87.0, None),
    ("seed with static offline skills", 84.4, None),
)
BOOTSTRAP = 2000


def wilson(wins: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a success rate."""
    if n == 0:
        return (0.0, 0.0)
    p = wins / n
    centre, half = p + z * z / (2 * n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return ((centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n))


def paired_bootstrap(a: Sequence[float], b: Sequence[float], seed: int = 0) -> tuple[float, float, float]:
    """(mean of a − b, 2.5%, 97.5% percentiles) over pairs resampled with replacement."""
    diffs = [x - y for x, y in zip(a, b)]
    if not diffs:
        return (0.0, 0.0, 0.0)
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(diffs, k=len(diffs))) / len(diffs) for _ in range(BOOTSTRAP))
    return (sum(diffs) / len(diffs), means[int(0.025 * BOOTSTRAP)], means[int(0.975 * BOOTSTRAP) - 1])


def read_run(folder: Path) -> dict[str, Any]:
    """A run's update rows and evaluation rows (the last row of each update/split wins)."""
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines() if line.strip()]
    updates = {row["update"]: row for row in rows if "split" not in row}
    evals: dict[str, dict[int, dict[str, Any]]] = {}
    for row in rows:
        if "split" in row:
            evals.setdefault(row["split"], {})[row["update"]] = row
    return {"updates": [updates[k] for k in sorted(updates)], "evals": evals}


def outcomes(run_dir: str) -> dict[str, float]:
    """episode id -> won (1.0 / 0.0) of one evaluation run folder."""
    path = Path(run_dir) / "episodes.jsonl"
    if not path.is_file():
        return {}
    return {r["episode_id"]: float(bool(r.get("won"))) for r in map(json.loads, path.read_text().splitlines()) if r}


def _band(values: list[float]) -> dict[str, float]:
    return {"mean": sum(values) / len(values), "min": min(values), "max": max(values)}


def _half_means(rows: list[dict[str, Any]], key: str) -> list[float | None]:
    values = [row[key] for row in rows if isinstance(row.get(key), (int, float))]
    if not values:
        return [None, None]
    half = max(1, len(values) // 2)
    first, second = values[:half], values[half:] or values[:half]
    return [sum(first) / len(first), sum(second) / len(second)]


def summarise(runs: list[tuple[str, str, int, Path]]) -> dict[str, Any]:
    """``runs`` = (env, arm, seed, folder) of every finished RL stage -> the report's data."""
    data: dict[str, Any] = {}
    loaded = [(env, arm, seed, read_run(folder)) for env, arm, seed, folder in runs]
    for env in dict.fromkeys(env for env, *_ in loaded):
        arms: dict[str, Any] = {}
        for arm in dict.fromkeys(a for e, a, *_ in loaded if e == env):
            seeds = [(seed, run) for e, a, seed, run in loaded if e == env and a == arm]
            arms[arm] = summarise_arm(seeds)
        data[env] = {"arms": arms, "comparisons": compare(arms, {arm: [(seed, run) for e, a, seed, run in loaded
                                                                       if e == env and a == arm] for arm in arms})}
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
                ("gate_mean", "gate_active_ratio", "teacher_gap_mean", "skill_parse_rate", "success_rate")}
    phases = sorted({k for row in updates for k in row if k.startswith("time/")})
    cost = {k: sum(row.get(k, 0.0) for row in updates) / len(seeds) for k in phases}
    return {"seeds": [seed for seed, _ in seeds], "curves": curves, "final": final, "training": training,
            "cost_per_seed": cost}


def pooled(rows: list[dict[str, Any]]) -> dict[str, Any]:
    wins = sum(round(row["success_rate"] * row["episodes"]) for row in rows)
    n = sum(row["episodes"] for row in rows)
    low, high = wilson(wins, n)
    return {"success": wins / max(1, n), "episodes": n, "ci95": [low, high]}


def _paired(first: list[tuple[int, dict[str, Any]]], second: list[tuple[int, dict[str, Any]]], split: str,
            first_update: str, second_update: str) -> dict[str, Any] | None:
    """Paired difference first − second over (seed, episode) pairs of one split's evaluations."""
    a_all, b_all = [], []
    other = dict(second)
    for seed, run in first:
        if seed not in other or split not in run["evals"] or split not in other[seed]["evals"]:
            continue
        a_evals, b_evals = run["evals"][split], other[seed]["evals"][split]
        a_row = a_evals[max(a_evals)] if first_update == "end" else a_evals[min(a_evals)]
        b_row = b_evals[max(b_evals)] if second_update == "end" else b_evals[min(b_evals)]
        a, b = outcomes(a_row["run_dir"]), outcomes(b_row["run_dir"])
        for episode in sorted(set(a) & set(b)):
            a_all.append(a[episode])
            b_all.append(b[episode])
    if not a_all:
        return None
    mean, low, high = paired_bootstrap(a_all, b_all)
    return {"diff": mean, "ci95": [low, high], "pairs": len(a_all)}


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


def _pct(value: float | None) -> str:
    return "" if value is None else f"{100 * value:.1f}"


def markdown(data: dict[str, Any], preset: dict[str, Any]) -> str:
    lines = [f"# seed-gym reproduce: preset {preset.get('name', '?')}", "",
             str(preset.get("description", "")).strip(), "",
             f"Seeds: {', '.join(map(str, preset.get('seeds', [])))}. Success in %; CIs are 95%.", ""]
    for env, content in data.items():
        lines += [f"## {env}", "", "### Final success (pooled over seeds, Wilson CI)", "",
                  "| arm | split | start | end | end CI | episodes | end update |", "|---|---|---|---|---|---|---|"]
        for arm, summary in content["arms"].items():
            for split, final in summary["final"].items():
                ci = final["end"]["ci95"]
                lines.append(f"| {arm} | {split} | {_pct(final['start']['success'])} | {_pct(final['end']['success'])} "
                             f"| [{_pct(ci[0])}, {_pct(ci[1])}] | {final['end']['episodes']} | {final['end_update']} |")
        lines += ["", "### Paired comparisons (same evaluation episodes; paired bootstrap CI)", "",
                  "| comparison | split | difference | CI | pairs |", "|---|---|---|---|---|"]
        for row in content["comparisons"]:
            lines.append(f"| {row['comparison']} | {row['split']} | {_pct(row['diff'])} | "
                         f"[{_pct(row['ci95'][0])}, {_pct(row['ci95'][1])}] | {row['pairs']} |")
        lines += ["", "### Success against updates and env steps (mean over seeds [min, max])", ""]
        for arm, summary in content["arms"].items():
            for split, curve in summary["curves"].items():
                points = ", ".join(f"u{p['update']} ({p['env_steps']:.0f} steps): {_pct(p['mean'])} "
                                   f"[{_pct(p['min'])}, {_pct(p['max'])}]" for p in curve)
                lines.append(f"- {arm} / {split}: {points}")
        lines += ["", "### Training statistics (first half → second half of the updates)", "",
                  "| arm | train success | gate mean | gate > 0.5 | teacher gap | skill parse rate |",
                  "|---|---|---|---|---|---|"]
        for arm, summary in content["arms"].items():
            t = summary["training"]
            cells = ["–" if t[key][0] is None else " → ".join(f"{v:.3g}" for v in t[key]) for key in
                     ("success_rate", "gate_mean", "gate_active_ratio", "teacher_gap_mean", "skill_parse_rate")]
            lines.append(f"| {arm} | " + " | ".join(cells) + " |")
        lines += ["", "### Per-phase seconds per seed", "", "| arm | " + " | ".join(PHASES) + " |",
                  "|---|" + "---|" * len(PHASES)]
        for arm, summary in content["arms"].items():
            lines.append(f"| {arm} | " + " | ".join(f"{summary['cost_per_seed'].get(f'time/{p}_s', 0.0):.1f}"
                                                    for p in PHASES) + " |")
        lines.append("")
    lines += ["## Reference: the SEED paper (Qwen2.5-3B, 150 updates; arXiv 2607.14777) — not comparable", "",
              "| paper arm | ALFWorld | WebShop succ |", "|---|---|---|"]
    lines += [f"| {arm} (paper) | {alf} | {'' if web is None else web} |" for arm, alf, web in PAPER_ROWS]
    return "\n".join(lines) + "\n"


PHASES = ("env", "generate", "analyzer", "old_logprobs", "ref_logprobs", "teacher_logprobs", "update", "eval")


def write_report(stages: Sequence[Any], preset: dict[str, Any], out: Path) -> Path:
    """``report.json`` and ``report.md`` of the finished RL stages (objects with env, arm, seed, out)."""
    data = summarise([(s.env, s.arm, s.seed, Path(s.out)) for s in stages])
    out.mkdir(parents=True, exist_ok=True)
    payload = {"preset": preset, "envs": data,
               "reference": [{"arm": a, "alfworld": alf, "webshop_success": web, "source": "arXiv 2607.14777 [P]"}
                             for a, alf, web in PAPER_ROWS]}
    (out / "report.json").write_text(json.dumps(payload, indent=1, default=str) + "\n")
    (out / "report.md").write_text(markdown(data, preset))
    return out / "report.md"
