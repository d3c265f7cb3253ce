"""``seed-gym reproduce`` evaluates each start once per seed: an RL stage copies the finished update-0
evaluation of an earlier arm with the same start, seed and settings (training/reproduce.py rules)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seed_gym.training.reproduce import plan, share_start_evaluation, start_evaluation

PRESET = {"envs": ["webshop"], "seeds": [0, 1], "model": {"size": "tiny"}, "rl": {"updates": 2, "eval_n": 5},
          "arms": {"grpo": {"algo": "grpo"}, "gigpo": {"algo": "gigpo"},
                   "seed": {"algo": "seed", "start": "skill-sft"},
                   "seed-frozen": {"algo": "seed", "start": "skill-sft", "analyzer": "frozen"},
                   "grpo-hot": {"algo": "grpo", "eval_temperature": 1.0}}}


def finish_evaluation(out: Path, splits: dict[str, bool]) -> None:
    """An update-0 evaluation folder per split, complete or not."""
    for split, complete in splits.items():
        folder = start_evaluation(out) / split
        folder.mkdir(parents=True)
        (folder / "episodes.jsonl").write_text(f'{{"split": "{split}"}}\n')
        (folder / "summary.json").write_text(json.dumps({"complete": complete}))


def stages_by_name(tmp_path: Path) -> dict:
    return {stage.name: stage for stage in plan(PRESET, tmp_path)}


def test_an_arm_from_the_same_start_and_seed_copies_the_finished_evaluation(tmp_path):
    stages = stages_by_name(tmp_path)
    grpo, gigpo = stages["rl/webshop/grpo/seed-0"], stages["rl/webshop/gigpo/seed-0"]
    finish_evaluation(grpo.out, {"test": True, "unseen": True})
    assert share_start_evaluation(gigpo, list(stages.values())) == start_evaluation(grpo.out)
    copied = start_evaluation(gigpo.out) / "unseen" / "episodes.jsonl"
    assert copied.read_text() == (start_evaluation(grpo.out) / "unseen" / "episodes.jsonl").read_text()


def test_the_analyzer_is_an_arm_setting_that_does_not_touch_the_start_evaluation(tmp_path):
    stages = stages_by_name(tmp_path)
    finish_evaluation(stages["rl/webshop/seed/seed-1"].out, {"test": True})
    assert share_start_evaluation(stages["rl/webshop/seed-frozen/seed-1"], list(stages.values())) is not None


def test_another_start_seed_or_evaluation_setting_gets_its_own_evaluation(tmp_path):
    stages = stages_by_name(tmp_path)
    finish_evaluation(stages["rl/webshop/grpo/seed-0"].out, {"test": True})
    everything = list(stages.values())
    for name in ("rl/webshop/seed/seed-0", "rl/webshop/gigpo/seed-1", "rl/webshop/grpo-hot/seed-0"):
        assert share_start_evaluation(stages[name], everything) is None
        assert not start_evaluation(stages[name].out).exists()


def test_an_unfinished_evaluation_is_not_shared_and_an_existing_one_is_kept(tmp_path):
    stages = stages_by_name(tmp_path)
    everything = list(stages.values())
    finish_evaluation(stages["rl/webshop/grpo/seed-0"].out, {"test": True, "unseen": False})
    assert share_start_evaluation(stages["rl/webshop/gigpo/seed-0"], everything) is None
    finish_evaluation(stages["rl/webshop/grpo/seed-1"].out, {"test": True})
    finish_evaluation(stages["rl/webshop/gigpo/seed-1"].out, {"test": False})  # its own, resumed by the trainer
    assert share_start_evaluation(stages["rl/webshop/gigpo/seed-1"], everything) is None
    summary = start_evaluation(stages["rl/webshop/gigpo/seed-1"].out) / "test" / "summary.json"
    assert json.loads(summary.read_text()) == {"complete": False}


def test_a_preset_can_extend_another_and_name_exactly_the_arms_it_runs(tmp_path):
    from seed_gym.training.reproduce import PresetError, load_preset

    long = load_preset("cpu-grpo-long")
    mini = load_preset("cpu-mini")
    assert list(long["arms"]) == ["grpo"]  # arms are replaced, not merged
    assert long["rl"]["updates"] == 30 and long["rl"]["eval_n"] == 100
    assert {k: v for k, v in long["rl"].items() if k not in ("updates", "eval_every", "eval_n", "eval_batch")} == \
        {k: v for k, v in mini["rl"].items() if k not in ("updates", "eval_every")}
    assert long["sft"] == mini["sft"] and long["skill_sft"] == mini["skill_sft"] and long["common"] == mini["common"]
    # the same SFT stage, so a copy of a cpu-mini output folder is reused as it stands
    assert [s.config for s in plan(long, tmp_path) if s.kind == "sft"] == \
        [s.config for s in plan(mini, tmp_path) if s.kind == "sft"]
    loop = tmp_path / "loop.toml"
    loop.write_text('extends = "loop.toml"\nenvs = ["webshop"]\n')
    with pytest.raises(PresetError, match="extends itself"):
        load_preset(loop)


@pytest.mark.parametrize("name", ["cpu-mini", "cpu-grpo-long", "cpu-alfworld", "qwen-gpu"])
def test_every_training_stage_of_a_built_in_preset_is_a_valid_training_config(name, tmp_path):
    from seed_gym.training.config import build_config
    from seed_gym.training.reproduce import builtin_presets, load_preset

    assert name in builtin_presets()
    stages = [s for s in plan(load_preset(name), tmp_path) if s.kind in ("sft", "skill-sft", "rl")]
    assert stages and all(build_config(dict(s.config)).env == s.env for s in stages)  # a typo'd key is refused


def mark_done(stage) -> None:
    stage.out.mkdir(parents=True, exist_ok=True)
    (stage.out / "stage.json").write_text("{}")


def test_parallel_stages_start_when_their_inputs_finished_and_never_evaluate_one_start_twice(tmp_path):
    from seed_gym.training.reproduce import ready_stages

    all_stages = plan(PRESET, tmp_path)
    stages = {stage.name: stage for stage in all_stages}
    pending = [s for s in all_stages if s.kind != "report"]
    assert [s.name for s in ready_stages(pending, [], all_stages)] == ["model"]
    for name in ("model", "sft/webshop"):
        mark_done(stages[name])
    pending = [s for s in pending if not s.done()]
    ready = [s.name for s in ready_stages(pending, [], all_stages)]
    # skill SFT and every arm from the plain SFT start; the skill-sft arms wait for their start
    assert ready[0] == "skill-sft/webshop" and "rl/webshop/grpo/seed-0" in ready
    assert not any(name.startswith(("rl/webshop/seed/", "offline-skills")) for name in ready)
    # while grpo seed 0 evaluates the SFT start for seed 0, no other arm from it may start
    running = [stages["rl/webshop/grpo/seed-0"]]
    ready = [s.name for s in ready_stages([s for s in pending if s not in running], running, all_stages)]
    assert "rl/webshop/gigpo/seed-0" not in ready and "rl/webshop/gigpo/seed-1" in ready
    assert "rl/webshop/grpo-hot/seed-0" in ready  # another evaluation setting: another evaluation


def test_the_plan_runs_every_arm_on_a_seed_before_the_next_seed(tmp_path):
    """A run cut short (or rebuilt with --report-only) then compares every arm on the seeds it finished."""
    rl = [(s.seed, s.arm) for s in plan(PRESET, tmp_path) if s.kind == "rl"]
    assert rl == [(seed, arm) for seed in PRESET["seeds"] for arm in PRESET["arms"]]


def test_a_stage_nothing_can_run_beside_gets_every_core_and_parallel_stages_share_them():
    from seed_gym.training.reproduce import stage_threads

    assert stage_threads(cores=2, jobs=2, running=0, ready=1) == 2   # the SFT start, alone
    assert stage_threads(cores=2, jobs=2, running=0, ready=5) == 1   # two arms at once
    assert stage_threads(cores=2, jobs=2, running=1, ready=1) == 1   # joins a running stage
    assert stage_threads(cores=2, jobs=4, running=0, ready=3) == 1   # never below one thread
    assert stage_threads(cores=16, jobs=4, running=0, ready=3) == 4


def test_replay_sft_data_mixes_the_sft_stages_expert_episodes_into_skill_sft(tmp_path):
    preset = {**PRESET, "skill_sft": {"replay_sft_data": True, "sft_replay_examples": 64}}
    skill = {s.name: s for s in plan(preset, tmp_path)}["skill-sft/webshop"]
    assert skill.config["sft_replay_runs"] == [str(tmp_path / "sft" / "webshop" / "data" / "expert")]
    assert "replay_sft_data" not in skill.config and skill.config["sft_replay_examples"] == 64
    assert "sft/webshop" in skill.needs
    plain = {s.name: s for s in plan(PRESET, tmp_path)}["skill-sft/webshop"]
    assert "sft_replay_runs" not in plain.config
