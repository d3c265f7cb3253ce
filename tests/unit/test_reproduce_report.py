"""The ``seed-gym reproduce`` report on small synthetic RL run folders, written with the project's own
writers (evaluation run folders by ``RunDir``, metrics rows by ``TrainRun.log``): the curves, the updates
to reach the threshold, SEED against GRPO, the ablation table, the offline HTML page, ``--report-only``.

Every expected number is computed here from :data:`WINS`, the evaluations' outcomes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from seed_gym.leaderboards.compare import compare_runs
from seed_gym.leaderboards.runs import load_run
from seed_gym.records import RunDir
from seed_gym.training.costs import PhaseCosts
from seed_gym.training.reproduce import MARKER, Stage, load_preset, plan, reproduce
from seed_gym.training.reproduce_report import write_report
from seed_gym.training.runs import TrainRun

from run_folders import make_run, tasks

EVALS = (0, 2, 4)  # the updates evaluated (0 = the start)
STEPS = 10  # update u spends STEPS * u env steps
#: arm -> seed -> the tasks won at each evaluation of EVALS (4 tasks each). By design: seed reaches grpo's
#: final mean at update 2, the frozen analyzer never does, the static skills start above it.
WINS = {
    "grpo": {0: ("1000", "1100", "1100"), 1: ("0000", "1000", "1110")},
    "seed": {0: ("1000", "1110", "1111"), 1: ("0000", "1100", "1110")},
    "seed-frozen-analyzer": {0: ("1000", "1000", "1000"), 1: ("0000", "0000", "1000")},
    "seed-static-skills": {0: ("1111", "1111", "1111"), 1: ("1110", "1111", "1111")},
}
SPLITS = {"alfworld": ("seen", "unseen"), "webshop": ("unseen",)}


def rate(pattern: str) -> float:
    return pattern.count("1") / len(pattern)


def mean_at(arm: str, index: int) -> float:
    return sum(rate(wins[index]) for wins in WINS[arm].values()) / len(WINS[arm])


def write_rl_run(folder: Path, env: str, arm: str, seed: int) -> None:
    """One RL stage's folder: an evaluation per split at each of EVALS, an update row per update."""
    run = TrainRun(folder)
    for index, update in enumerate(EVALS):
        if update:
            for number in range(EVALS[index - 1] + 1, update + 1):
                costs = PhaseCosts()
                costs.add("env", 0.5, STEPS * number)
                costs.add("generate", 1.5, 100)
                stats = {"gate_mean": 0.1 * number, "skill_parse_rate": 0.2 * number} if arm.startswith("seed") else {}
                run.log({"update": number, "seconds": 3.0, "success_rate": 0.25, **stats, **costs.row()})
        for split in SPLITS.get(env, ("unseen",)):
            evaluation = make_run(folder / "evals" / f"update-{update:06d}" / split, tasks(WINS[arm][seed][index]),
                                  agent=f"hf:{arm}", env=env, split=split, seed=seed)
            summary = RunDir(evaluation).read_summary()
            run.log({"update": update, "split": split, "episodes": summary["episodes"],
                     "success_rate": summary["success_rate"], "run_dir": str(evaluation)})


def rl_stages(out: Path) -> list[Stage]:
    stages = []
    for env in SPLITS:
        for arm, seeds in WINS.items():
            for seed in seeds:
                folder = out / "rl" / env / arm / f"seed-{seed}"
                write_rl_run(folder, env, arm, seed)
                stages.append(Stage(f"rl/{env}/{arm}/seed-{seed}", "rl", folder, env, arm=arm, seed=seed))
    return stages


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("repro")
    write_report(rl_stages(out), {"name": "synthetic", "seeds": [0, 1]}, out / "report")
    return out / "report"


def data(report: Path) -> dict:
    return json.loads((report / "report.json").read_text())


def test_curves_are_the_mean_and_band_over_seeds_against_updates_and_env_steps(report: Path) -> None:
    for env, splits in SPLITS.items():
        for arm in WINS:
            for split in splits:
                curve = data(report)["envs"][env]["arms"][arm]["curves"][split]
                assert [p["update"] for p in curve] == list(EVALS)
                assert [p["env_steps"] for p in curve] == [STEPS * sum(range(u + 1)) for u in EVALS]
                for index, point in enumerate(curve):
                    rates = [rate(wins[index]) for wins in WINS[arm].values()]
                    assert (point["mean"], point["min"], point["max"]) == pytest.approx(
                        (sum(rates) / len(rates), min(rates), max(rates)))


def test_updates_to_reach_grpos_final_success(report: Path) -> None:
    level = mean_at("grpo", -1)
    for env, splits in SPLITS.items():
        for split in splits:
            threshold = data(report)["envs"][env]["thresholds"][split]
            assert threshold["threshold"] == pytest.approx(level)
            for arm in WINS:
                first = next((u for i, u in enumerate(EVALS) if mean_at(arm, i) >= level), None)
                expected = None if first is None else {"update": first, "env_steps": STEPS * sum(range(first + 1))}
                assert threshold["arms"][arm] == expected
    assert [data(report)["envs"]["webshop"]["thresholds"]["unseen"]["arms"][arm] is None for arm in WINS] == \
        [False, False, True, False]
    markdown = (report / "report.md").read_text()
    assert f"reach {100 * level:.1f}%" in markdown and "| seed-frozen-analyzer | not reached |" in markdown
    assert "| seed | update 2 (30 env steps) |" in markdown


def test_seed_against_grpo_is_seed_gym_compare_per_seed_and_pooled(report: Path) -> None:
    result = data(report)["envs"]["alfworld"]["seed_vs_grpo"]
    assert (result["split"], result["a"], result["b"]) == ("unseen", "grpo", "seed")
    assert list(result["columns"]) == ["seed 0", "seed 1", "pooled (2 seeds)"]
    for seed in WINS["seed"]:
        folders = [f"{report.parent}/rl/alfworld/{arm}/seed-{seed}/evals/update-{EVALS[-1]:06d}/unseen"
                   for arm in ("grpo", "seed")]
        assert f"seed-gym compare {folders[0]} {folders[1]}" in result["commands"]
        alone = compare_runs(*map(load_run, map(Path, folders)))
        assert result["columns"][f"seed {seed}"]["success_diff"] == pytest.approx(alone.success_diff)
    pooled = result["columns"]["pooled (2 seeds)"]
    diffs = [rate(b) - rate(a) for a, b in ((WINS["grpo"][s][-1], WINS["seed"][s][-1]) for s in WINS["seed"])]
    assert pooled["pairs"] == 8 and pooled["success_diff"] == pytest.approx(sum(diffs) / len(diffs))
    markdown = (report / "report.md").read_text()
    assert "| success diff B-A (95% CI) |" in markdown and "seed-gym compare " in markdown


def test_end_against_start_is_the_paired_interval_seed_gym_compare_uses(report: Path) -> None:
    from seed_gym.leaderboards.compare import paired_success_interval

    row = next(r for r in data(report)["envs"]["webshop"]["comparisons"]
               if r["comparison"] == "grpo: end - start" and r["split"] == "unseen")
    # grpo gains 1 task of 4 on seed 0 and 3 on seed 1 and loses none: (start, end) per (seed, task)
    clusters = [[(float(a == "1"), float(b == "1"))] for s in (0, 1)
                for a, b in zip(WINS["grpo"][s][0], WINS["grpo"][s][-1])]
    assert row["diff"] == pytest.approx(0.5) and row["pairs"] == 8
    assert row["ci95"] == pytest.approx(paired_success_interval(clusters))
    assert 0 < row["ci95"][0] < 0.5 < row["ci95"][1] < 1  # every pair moved one way: no point interval


def test_the_ablation_table_pairs_each_ablation_with_seed(report: Path) -> None:
    rows = data(report)["envs"]["alfworld"]["ablation"]
    assert [(row["arm"], row["split"]) for row in rows] == [
        (arm, split) for split in ("seen", "unseen") for arm in ("seed", "seed-frozen-analyzer", "seed-static-skills")]
    for row in rows:
        end = [rate(wins[-1]) for wins in WINS[row["arm"]].values()]
        assert row["end"]["success"] == pytest.approx(sum(end) / len(end))
        if row["arm"] == "seed":
            assert row["vs_seed"] is None
            continue
        differences = [rate(WINS[row["arm"]][s][-1]) - rate(WINS["seed"][s][-1]) for s in WINS["seed"]]
        assert row["vs_seed"]["diff"] == pytest.approx(sum(differences) / len(differences))
        assert row["vs_seed"]["pairs"] == 8 and row["vs_seed"]["ci95"][0] <= row["vs_seed"]["diff"] <= row["vs_seed"]["ci95"][1]
    markdown = (report / "report.md").read_text()
    assert "| seed-frozen-analyzer | seen |" in markdown and "| 87.0 |" in markdown  # the paper's Table 2 cell


def test_the_papers_ablation_figures_sit_only_beside_the_split_they_were_measured_on(report: Path) -> None:
    """Table 2 is ALFWorld valid_seen: not beside ALFWorld unseen, and no column at all for WebShop."""
    envs = data(report)["envs"]
    assert {(row["split"], row["paper_alfworld"]) for row in envs["alfworld"]["ablation"] if row["arm"] != "seed"} == {
        ("seen", 87.0), ("seen", 84.4), ("unseen", None)}
    assert all(row["paper_alfworld"] is None for row in envs["webshop"]["ablation"])
    markdown = (report / "report.md").read_text()
    webshop = markdown[markdown.index("*webshop: SEED ablations"):]
    assert "paper ALFWorld" not in webshop[:webshop.index("\n\n\n")]


def test_training_statistics_halves_are_halves_of_the_updates_not_of_the_seeds(report: Path) -> None:
    # every seed logs gate_mean 0.1 * update over updates 1..4: halves (1, 2) and (3, 4) of each seed
    summary = data(report)["envs"]["alfworld"]["arms"]["seed"]
    assert summary["training"]["gate_mean"] == pytest.approx([0.15, 0.35])
    assert [p["mean"] for p in summary["training_curves"]["gate_mean"]] == pytest.approx([0.1, 0.2, 0.3, 0.4])
    assert "| seed | 0.25 → 0.25 | 0.15 → 0.35 |" in (report / "report.md").read_text()


def test_the_html_page_is_offline_with_one_chart_per_env_split_and_axis(report: Path) -> None:
    html = (report / "report.html").read_text()
    assert "<script" not in html and "<link" not in html and "src=" not in html and "url(" not in html
    assert set(re.findall(r"https?://[^\"' ]+", html)) == {"http://www.w3.org/2000/svg"}  # the SVG namespace only
    curves = re.findall(r'<figure data-curve="([^"]+)">(.*?)</figure>', html)
    assert sorted(name for name, _ in curves) == sorted(f"{env}/{split}/{axis}" for env, splits in SPLITS.items()
                                                        for split in splits for axis in ("updates", "env_steps"))
    for _, chart in curves:
        assert chart.count("<svg") == 1 and chart.count('class="band"') == len(WINS) and chart.count("<polyline") == len(WINS)
    statistics = re.findall(r'<figure data-statistic="([^"]+)">', html)
    assert {"alfworld/gate_mean", "alfworld/skill_parse_rate", "alfworld/success_rate"} <= set(statistics)
    assert "alfworld/gate_active_ratio" not in statistics  # no run logged it
    reference = html[html.index('<table class="reported"'):]
    assert "91.8" in reference and "arXiv 2607.14777" in reference
    for section in ("Final success", "Updates to reach a threshold", "Ablations", "Per-phase cost", "Training statistics"):
        assert f"<h3>{section}</h3>" in html


def test_a_metrics_line_torn_by_a_kill_is_skipped(tmp_path: Path) -> None:
    stages = [Stage("rl/webshop/grpo/seed-0", "rl", tmp_path / "grpo", "webshop", arm="grpo", seed=0)]
    write_rl_run(stages[0].out, "webshop", "grpo", 0)
    with (stages[0].out / "metrics.jsonl").open("a") as metrics:
        metrics.write('{"update": 5, "split": "unse')
    write_report(stages, {"name": "torn"}, tmp_path / "report")
    assert [p["update"] for p in data(tmp_path / "report")["envs"]["webshop"]["arms"]["grpo"]["curves"]["unseen"]] == list(EVALS)


def test_report_only_rebuilds_from_the_finished_rl_stages(tmp_path: Path) -> None:
    preset = Path(__file__).resolve().parents[1] / "reproduce_micro.toml"
    stages = plan(load_preset(preset), tmp_path)
    rl = [s for s in stages if s.kind == "rl"]
    for stage in rl[:2]:
        write_rl_run(stage.out, stage.env, "grpo", 0)
        (stage.out / MARKER).write_text("{}")
    said: list[str] = []
    reproduce(preset, tmp_path, report_only=True, echo=said.append)
    report = tmp_path / "report"
    assert set(data(report)["envs"]["toy-pick"]["arms"]) == {s.arm for s in rl[:2]}
    assert said[0].startswith(f"[partial] the report leaves out {len(rl) - 2} unfinished RL stages")
    assert not (report / MARKER).exists() and (report / "report.html").exists()
    # the report itself says so (it outlives the console), naming what is missing
    assert data(report)["missing"] == [s.name for s in rl[2:]]
    for page in ("report.md", "report.html"):
        assert f"{len(rl) - 2} planned RL stages had not finished" in (report / page).read_text() and rl[-1].name in (report / page).read_text()
    for stage in rl[2:]:
        write_rl_run(stage.out, stage.env, "grpo", 0)
        (stage.out / MARKER).write_text("{}")
    reproduce(preset, tmp_path, report_only=True, echo=said.append)
    assert set(data(report)["envs"]["toy-pick"]["arms"]) == {s.arm for s in rl} and (report / MARKER).exists()
    assert data(report)["missing"] == [] and "Partial" not in (report / "report.md").read_text()
    assert not (tmp_path / "model").exists()  # no other stage ran


def test_a_moved_run_folder_reads_its_own_evaluations_and_names_its_start_and_code(tmp_path: Path) -> None:
    import shutil

    stages = rl_stages(tmp_path / "made")
    for stage in stages:
        (stage.out / MARKER).write_text(json.dumps({"seconds": 12.0, "start": {"model": "m", "fingerprint": f"sha256:{stage.arm}"}}))
    shutil.move(tmp_path / "made", tmp_path / "moved")  # as --export / --import move them
    moved = [Stage(s.name, s.kind, tmp_path / "moved" / s.out.relative_to(tmp_path / "made"), s.env, arm=s.arm, seed=s.seed)
             for s in stages]
    write_report(moved, {"name": "synthetic", "seeds": [0, 1]}, tmp_path / "report")
    content = data(tmp_path / "report")["envs"]["webshop"]
    assert content["seed_vs_grpo"]["columns"]["seed 0"]["pairs"] == 4  # the evaluations were found where they are now
    assert any(row["comparison"] == "seed - grpo (end)" for row in content["comparisons"])
    made = content["arms"]["seed"]["provenance"]["1"]
    manifest = json.loads((moved[0].out / "evals" / "update-000004" / "unseen" / "manifest.json").read_text())
    assert made["start"] == "sha256:seed" and made["seconds"] == 12.0
    assert made["commit"] == manifest["provenance"]["git_commit"] and made["evaluated"] == manifest["provenance"]["created"]
    assert "### Provenance" in (tmp_path / "report" / "report.md").read_text()
