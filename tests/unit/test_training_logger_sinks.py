"""Which numbers of a metrics row reach TensorBoard and W&B, and what a missing extra says."""

from __future__ import annotations

import sys

import pytest

from seed_gym.core import SeedGymError
from seed_gym.training.config import TrainConfig
from seed_gym.training.loggers import MissingLoggerError, make_sinks, scalars


def test_every_numeric_key_of_an_update_row_is_a_train_scalar_and_nested_keys_are_flattened():
    row = {"update": 3, "loss": 0.5, "episodes": 4, "algo": "grpo", "ci95": [0.1, 0.2], "won": True,
           "gate_mean": None, "bad": float("nan"), "time": {"rollout_s": 2.0, "update_s": 1, "note": "x"}}
    assert dict(scalars(row)) == {"train/loss": 0.5, "train/episodes": 4.0, "train/time/rollout_s": 2.0,
                                  "train/time/update_s": 1.0}


def test_an_evaluation_row_goes_under_its_split():
    row = {"update": 5, "split": "unseen", "success_rate": 0.25, "run_dir": "runs/x"}
    assert dict(scalars(row)) == {"eval/unseen/success_rate": 0.25}


def test_loggers_is_a_checked_config_field_outside_the_run_identity():
    base = {"algo": "grpo", "env": "webshop", "model": "m", "out": "o"}
    config = TrainConfig(**base, loggers=["tensorboard", "wandb"])
    assert "loggers" not in config.identity()  # switching a logger on does not refuse a resume
    with pytest.raises(ValueError):
        TrainConfig(**base, loggers=["tensorbored"])


def test_an_unknown_logger_name_is_a_typed_error(tmp_path):
    with pytest.raises(SeedGymError, match="unknown logger 'mlflow'"):
        make_sinks(["mlflow"], tmp_path, {})


@pytest.mark.parametrize("name, module", [("wandb", "wandb"), ("tensorboard", "torch.utils.tensorboard")])
def test_a_missing_extra_names_the_pip_command(tmp_path, monkeypatch, name, module):
    monkeypatch.setitem(sys.modules, module, None)  # what an environment without the extra looks like
    with pytest.raises(MissingLoggerError, match=rf"pip install 'seed-gym\[{name}\]'"):
        make_sinks([name], tmp_path, {})
