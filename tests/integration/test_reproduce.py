"""`seed-gym reproduce` on the micro preset (tests/reproduce_micro.toml): every stage runs on the toy-pick env
(tiny model, SFT, hindsight-skill SFT, the offline library, 8 arms x 1 seed x 1 update), the report builds,
a second run skips every finished stage, a stage can run alone, and a stage killed after its training
finishes without redoing it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

pytest.importorskip("torch", reason="training needs torch (the [train] extra)")

from learning_env import register_pick_env  # noqa: E402

MICRO = Path(__file__).resolve().parents[1] / "reproduce_micro.toml"


def test_the_micro_preset_runs_every_stage_resumes_and_reports(tmp_path):
    from seed_gym.training.reproduce import MARKER, PresetError, reproduce

    register_pick_env()
    out, said = tmp_path / "repro", []
    plan = reproduce(MICRO, out, dry_run=True, echo=said.append)
    assert [s.name for s in plan][:4] == ["model", "sft/toy-pick", "skill-sft/toy-pick", "offline-skills/toy-pick"]
    assert len([s for s in plan if s.kind == "rl"]) == 8 and all(line.startswith("[todo]") for line in said)
    with pytest.raises(PresetError, match="needs sft/toy-pick"):
        reproduce(MICRO, out, stage="skill-sft/toy-pick", echo=said.append)

    reproduce(MICRO, out, stage="model", echo=said.append)  # one stage alone
    assert (out / "model" / MARKER).exists() and not (out / "sft").exists()
    reproduce(MICRO, out, echo=said.append)
    assert all(stage.done() for stage in plan)
    assert all(json.loads((stage.out / MARKER).read_text())["seconds"] >= 0 for stage in plan)  # its wall time

    # the arms start where the preset says, and the ablations got their teacher contexts
    def config(arm):
        return json.loads((out / "rl" / "toy-pick" / arm / "seed-0" / "config.json").read_text())["identity"]
    assert "/skill-sft/" in config("seed")["model"] and "/sft/" in config("seed-no-skill-sft")["model"]
    skill_sft = json.loads((out / "skill-sft" / "toy-pick" / "metrics.jsonl").read_text().splitlines()[-1])
    assert skill_sft["replay_examples"] == 2  # the SFT stage's demonstrations, replayed
    assert config("seed-frozen-analyzer")["analyzer"] == "frozen"
    assert config("seed-static-skills")["skill_bank"].endswith("offline-skills/toy-pick/bank")
    assert (out / "offline-skills" / "toy-pick" / "bank" / "general.md").read_text().startswith("- Take the")
    teacher = out / "rl" / "toy-pick" / "seed-static-skills" / "seed-0" / "rollouts" / "update-000001" / "teacher.jsonl"
    assert "Take the" in teacher.read_text()

    # each start was evaluated once: arms from the same start read back the first arm's update-0 episodes
    def start_episodes(arm):
        return (out / "rl" / "toy-pick" / arm / "seed-0" / "evals" / "update-000000" / "unseen" / "episodes.jsonl").read_text()
    assert start_episodes("gigpo") == start_episodes("grpo") == start_episodes("seed-no-skill-sft")
    assert start_episodes("seed-frozen-analyzer") == start_episodes("seed") != start_episodes("grpo")

    report = json.loads((out / "report" / "report.json").read_text())
    arms = report["envs"]["toy-pick"]["arms"]
    assert set(arms) == {"grpo", "gigpo", "grpo-opsd", "sdar", "seed", "seed-no-skill-sft", "seed-frozen-analyzer",
                         "seed-static-skills"}
    assert arms["grpo"]["final"]["unseen"]["end"]["episodes"] == 4 and arms["grpo"]["final"]["unseen"]["end_update"] == 1
    assert [p["update"] for p in arms["gigpo"]["curves"]["unseen"]] == [0, 1]
    assert any(row["comparison"] == "seed - grpo (end)" for row in report["envs"]["toy-pick"]["comparisons"])
    versus = report["envs"]["toy-pick"]["seed_vs_grpo"]  # seed-gym compare on the real evaluation folders
    assert "error" not in versus and versus["columns"]["seed 0"]["pairs"] == 4
    markdown = (out / "report" / "report.md").read_text()
    assert "| seed-static-skills | unseen |" in markdown and "| reported | seed |" in markdown
    html = (out / "report" / "report.html").read_text()
    assert html.count('<figure data-curve="toy-pick/unseen/') == 2 and "seed-gym compare" in html

    # a second run skips everything; a stage killed after training finishes it without redoing updates
    grpo = out / "rl" / "toy-pick" / "grpo" / "seed-0"
    rows = (grpo / "metrics.jsonl").read_text()
    (grpo / MARKER).unlink()
    said.clear()
    reproduce(MICRO, out, echo=said.append)
    assert said.count("[run] rl/toy-pick/grpo/seed-0") == 1 and sum(line.startswith("[run]") for line in said) == 1
    assert (grpo / "metrics.jsonl").read_text() == rows and (grpo / MARKER).exists()

    # the results travel without the weights: another run folder imports them and runs only what is missing
    results = tmp_path / "results"
    reproduce(MICRO, out, report_only=True, export_to=results, echo=said.append)
    assert (results / "report" / "report.json").is_file()
    assert not list(results.rglob("checkpoints")) and not list(results.rglob("rollouts"))
    shutil.rmtree(results / "rl" / "toy-pick" / "grpo" / "seed-0")
    again, said = tmp_path / "again", []
    reproduce(MICRO, again, import_from=results, echo=said.append)
    assert said[0].startswith("[import] 7 finished RL stage(s)")
    assert [line for line in said if line.startswith("[run]")] == [
        "[run] model", "[run] sft/toy-pick", "[run] rl/toy-pick/grpo/seed-0", "[run] report"]
    # the start retrained here is the one the imported arms trained from (else the stage would refuse to run)
    retrained = json.loads((again / "rl" / "toy-pick" / "grpo" / "seed-0" / MARKER).read_text())["start"]
    assert retrained["fingerprint"] == json.loads((grpo / MARKER).read_text())["start"]["fingerprint"]
    moved = json.loads((again / "report" / "report.json").read_text())["envs"]["toy-pick"]
    assert moved["arms"]["seed"]["final"] == arms["seed"]["final"]  # imported evaluations read in their new folder
    assert "error" not in moved["seed_vs_grpo"] and moved["seed_vs_grpo"]["columns"]["seed 0"]["pairs"] == 4

    # or the start stages travel with the results (README: go on elsewhere): nothing is retrained
    carried, said = tmp_path / "carried", []
    for start in ("model", "sft", "skill-sft", "offline-skills"):
        shutil.copytree(out / start, carried / start)
    reproduce(MICRO, carried, import_from=results, echo=said.append)
    assert [line for line in said if line.startswith("[run]")] == ["[run] rl/toy-pick/grpo/seed-0", "[run] report"]


def test_the_micro_preset_with_two_jobs_runs_stages_in_their_own_processes_and_shares_each_start(tmp_path):
    from seed_gym.training.reproduce import reproduce

    register_pick_env()  # the child processes get the runtime-registered env with their stage
    out, said = tmp_path / "repro", []
    plan = reproduce(MICRO, out, jobs=2, echo=said.append)
    assert all(stage.done() for stage in plan)
    runs = [line for line in said if line.startswith("[run] ")]
    assert len(runs) == len(plan)
    # nothing can run beside the model or the SFT start: every core; arms that start together share them
    cores = len(os.sched_getaffinity(0))
    assert all(f"({cores} threads" in line for line in runs[:2]) and "sft/toy-pick (" in runs[1]
    assert any(f"({max(1, cores // 2)} threads" in line for line in runs if "rl/toy-pick/" in line)
    assert (out / "logs" / "rl__toy-pick__grpo__seed-0.log").read_text().count("[run] rl/toy-pick/grpo/seed-0") == 1

    def start_episodes(arm):
        return (out / "rl" / "toy-pick" / arm / "seed-0" / "evals" / "update-000000" / "unseen" / "episodes.jsonl").read_text()
    assert start_episodes("gigpo") == start_episodes("grpo") == start_episodes("seed-no-skill-sft")
    assert start_episodes("seed-frozen-analyzer") == start_episodes("seed")
    assert set(json.loads((out / "report" / "report.json").read_text())["envs"]["toy-pick"]["arms"]) >= {"grpo", "seed"}
    said.clear()
    reproduce(MICRO, out, jobs=2, echo=said.append)  # everything finished: nothing runs again
    assert not any(line.startswith("[run]") for line in said)


def test_with_jobs_a_failed_stage_stops_the_plan_and_names_its_log(tmp_path):
    from seed_gym.training.reproduce import PresetError, reproduce

    preset = tmp_path / "broken.toml"
    preset.write_text(f'extends = "{MICRO}"\n[model]\nsize = "no-such-size"\n')
    out, said = tmp_path / "repro", []
    with pytest.raises(PresetError, match=r"1 stage\(s\) failed: model \(exit code 1; log .*logs/model\.log\)"):
        reproduce(preset, out, jobs=2, echo=said.append)
    assert [line.split(" (")[0] for line in said if line.startswith("[run]")] == ["[run] model"]  # nothing after it
    assert "no-such-size" in (out / "logs" / "model.log").read_text()  # the child's traceback, in its log
