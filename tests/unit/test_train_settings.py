"""Training settings a user can see: ``seed-gym train --show-config`` lists every TrainConfig field
with its type, default and meaning, and an unknown key names the nearest field."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from seed_gym import cli
from seed_gym.training.config import ConfigError, TrainConfig, build_config

BASE = {"algo": "grpo", "env": "searchqa", "model": "m", "out": "o"}


def test_show_config_lists_every_field_with_type_default_and_meaning():
    result = CliRunner().invoke(cli.app, ["train", "--show-config"], env={"COLUMNS": "260"})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    for name, info in TrainConfig.model_fields.items():
        assert info.description, f"{name} has no one-line meaning"
        default = "required" if info.is_required() else json.dumps(info.default)
        row = [line for line in lines if line.startswith(f"│ {name} ")]
        assert len(row) == 1, name
        assert default in row[0] and info.description in row[0], row[0]
    assert "│ lr " in result.output and "float" in result.output and "1e-06" in result.output


def test_train_help_points_at_the_settings():
    result = CliRunner().invoke(cli.app, ["train", "--help"], env={"COLUMNS": "200"})
    assert "--show-config" in result.output


@pytest.mark.parametrize("key,nearest", [("lrr", "lr"), ("group_size", "group"), ("eval_evry", "eval_every")])
def test_an_unknown_set_key_names_the_nearest_field(key, nearest):
    with pytest.raises(ConfigError, match=f"unknown config field '{key}'.*did you mean '{nearest}'"):
        build_config(BASE, overrides=[f"{key}=1"])


def test_an_unknown_key_in_a_config_file_names_the_nearest_field(tmp_path):
    path = tmp_path / "train.toml"
    path.write_text("temprature = 0.7\n")
    with pytest.raises(ConfigError, match=f"{path}.*did you mean 'temperature'"):
        build_config(BASE, path)


def test_a_key_with_nothing_near_still_says_where_to_look():
    with pytest.raises(ConfigError, match="--show-config"):
        build_config(BASE, overrides=["zzzqqq=1"])
