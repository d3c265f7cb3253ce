"""Training configs and run folders: what a resumed run must share with the run it resumes."""

from __future__ import annotations

import json

import pytest

from seed_gym.training.config import TrainConfig
from seed_gym.training.runs import TrainRun, TrainRunMismatch


def config(tmp_path, **changes) -> TrainConfig:
    return TrainConfig(algo="sft", env="webshop", model="m", out=str(tmp_path), **changes)


def open_run(tmp_path, cfg: TrainConfig) -> None:
    TrainRun(tmp_path).open(cfg.identity(), cfg.model_dump(), TrainConfig.identity_defaults())


def test_how_long_a_run_lasts_and_its_bookkeeping_may_change_on_resume(tmp_path):
    open_run(tmp_path, config(tmp_path))
    open_run(tmp_path, config(tmp_path, updates=300, sft_epochs=9, eval_every=1, workers=4, keep_checkpoints=5))


def test_a_changed_training_setting_refuses_to_resume_and_names_it(tmp_path):
    open_run(tmp_path, config(tmp_path))
    with pytest.raises(TrainRunMismatch, match="sft_lr"):
        open_run(tmp_path, config(tmp_path, sft_lr=0.5))


def test_a_run_recorded_before_a_field_existed_resumes_when_the_field_keeps_its_default(tmp_path):
    open_run(tmp_path, config(tmp_path))
    path = tmp_path / "config.json"
    saved = json.loads(path.read_text())
    del saved["identity"]["sft_prompt_weight"]  # as written by an older seed-gym
    saved["identity"]["sft_epochs"] = 3          # once part of the identity, no longer
    path.write_text(json.dumps(saved))
    open_run(tmp_path, config(tmp_path))
    path.write_text(json.dumps(saved))
    with pytest.raises(TrainRunMismatch, match="sft_prompt_weight"):
        open_run(tmp_path, config(tmp_path, sft_prompt_weight=1.0))


def test_periodic_evaluation_generates_by_default_and_ranks_admissible_actions_when_asked(tmp_path):
    from seed_gym.training.trainer import eval_choice_params

    assert eval_choice_params(config(tmp_path)) == {}
    assert eval_choice_params(config(tmp_path, eval_choose="rank")) == {"choose": "rank", "rank_by": "prefix"}
    assert eval_choice_params(config(tmp_path, eval_choose="rank", eval_rank_by="mean"))["rank_by"] == "mean"


def test_an_unknown_evaluation_choice_rule_is_refused(tmp_path):
    with pytest.raises(ValueError, match="eval_rank_by"):
        config(tmp_path, eval_choose="rank", eval_rank_by="max")


def test_rollouts_generate_by_default_and_rank_admissible_actions_only_on_hf(tmp_path):
    from seed_gym.training.trainer import choice_params

    plain = config(tmp_path)
    assert choice_params(plain.rollout_choose, plain.rollout_rank_by) == {}
    ranked = config(tmp_path, rollout_choose="rank")
    assert choice_params(ranked.rollout_choose, ranked.rollout_rank_by) == {"choose": "rank", "rank_by": "prefix"}
    with pytest.raises(ValueError, match="rollout_choose=rank .* needs rollout_backend=hf"):
        config(tmp_path, rollout_choose="rank", rollout_backend="vllm")


def test_search_qa_rl_keeps_search_r1s_budget_and_limits():
    from seed_gym.registry import make

    config = TrainConfig(algo="grpo", env="searchqa", model="m", out="o")
    assert config.rl_max_steps() is None  # the env's own: max_turns generations, then an answer-only one
    env = make("searchqa", max_steps=config.rl_max_steps())
    assert env.max_steps == env.max_turns + 1 == 5
    assert (config.new_tokens(), config.prompt_tokens()) == (500, 4096)
    alfworld = TrainConfig(algo="grpo", env="alfworld", model="m", out="o")
    assert (alfworld.rl_max_steps(), alfworld.new_tokens(), alfworld.prompt_tokens()) == (30, 512, 2048)
    # a run that wrote the old explicit defaults still matches its identity
    assert TrainConfig(algo="grpo", env="alfworld", model="m", out="o", max_new_tokens=512,
                       max_prompt_tokens=2048).identity() == alfworld.identity()
