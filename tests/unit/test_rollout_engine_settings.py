"""The training settings of the rollout engine and of sharding, the engine-vs-trainer log-prob gap,
and how a resumed run forgets evaluations of updates it redoes."""

from __future__ import annotations

import pytest
import torch

from seed_gym.records import EpisodeRecord, StepRecord
from seed_gym.training.batch import StepSample
from seed_gym.training.config import ConfigError, TrainConfig, build_config
from seed_gym.training.runs import TrainRun

BASE = {"algo": "grpo", "env": "searchqa", "model": "m", "out": "o"}


def test_rollout_backend_and_parallel_are_checked_choices_with_hf_and_ddp_by_default():
    config = TrainConfig(**BASE)
    assert (config.rollout_backend, config.parallel, config.engine_dtype) == ("hf", "ddp", None)
    assert build_config(BASE, overrides=["rollout_backend=vllm", "parallel=fsdp"]).rollout_backend == "vllm"
    for bad in ("rollout_backend=sglang", "parallel=zero3", "engine_memory_fraction=0", "engine_memory_fraction=1.5",
                "sync_tolerance=0"):
        with pytest.raises(ConfigError, match=bad.split("=")[0]):
            build_config(BASE, overrides=[bad])


def test_what_changes_samples_is_identity_and_memory_settings_are_bookkeeping():
    identity = TrainConfig(**BASE).identity()
    assert {"rollout_backend", "engine_dtype", "engine_max_model_len", "parallel"} <= set(identity)
    assert not {"engine_memory_fraction", "engine_sleep", "sync_tolerance"} & set(identity)


def sample(logprobs=None, response=(1, 2, 3)):
    extra = {} if logprobs is None else {"sampling_logprobs": logprobs}
    return StepSample(messages=[], response_ids=list(response), episode_id="e", group_id="g", reward=0.0, extra=extra)


def test_the_sampling_gap_is_token_weighted_over_samples_whose_engine_kept_its_logprobs():
    from seed_gym.training.update import sampling_gap

    old = [torch.tensor([-1.0, -2.0, -3.0]), torch.tensor([-1.0]), torch.tensor([-0.5, -0.5, -0.5])]
    samples = [sample([-1.5, -2.0, -2.0]), sample([-1.0, -1.0]), sample(None)]  # 2nd: lengths differ
    total, tokens = sampling_gap(samples, old)
    assert tokens == 3 and total == pytest.approx(1.5)


def test_step_samples_get_the_engines_logprobs_of_their_own_steps_except_retokenized_ones():
    from seed_gym.training.trainer import keep_sampling_logprobs

    def step(t, logprobs, retokenize=False):
        return StepRecord(t=t, observation="o", action="a", reward=0.0, invalid_action=False, logprobs=logprobs,
                          retokenize=retokenize)

    records = [EpisodeRecord("e#0", {"id": "t"}, "agent", 0, 0, [step(0, [-0.1]), step(1, None)], "", False, 0.0,
                             0.0, "completed", 0.0),
               EpisodeRecord("e#1", {"id": "t"}, "agent", 1, 0, [step(0, [-0.3], retokenize=True)], "", False, 0.0,
                             0.0, "completed", 0.0)]
    samples = [sample(), sample(), sample()]
    keep_sampling_logprobs(samples, records)
    assert [s.extra.get("sampling_logprobs") for s in samples] == [[-0.1], None, None]


def test_a_resumed_run_deletes_the_evaluations_of_updates_it_will_redo(tmp_path):
    run = TrainRun(tmp_path)
    for update in (2, 3, 4):
        run.eval_dir(update, "test").mkdir(parents=True)
    run.drop_evals_after(3)
    assert sorted(p.name for p in (tmp_path / "evals").iterdir()) == ["update-000002", "update-000003"]


def test_unknown_engines_and_parallel_modes_are_errors():
    from seed_gym.training.distributed import DataParallel
    from seed_gym.training.weight_sync import start_engine

    with pytest.raises(ValueError, match="hf or vllm"):
        start_engine("sglang", policy=None)
    with pytest.raises(ValueError, match="ddp or fsdp"):
        DataParallel("zero3")
