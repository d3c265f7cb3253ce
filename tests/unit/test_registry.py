"""The registry: by name, by entry point, and in gymnasium."""

from importlib.metadata import entry_points

import gymnasium
import pytest

import seed_gym
from seed_gym.registry import UnknownEnvError, register


def test_builtin_envs_come_from_the_entry_point_group():
    names = {ep.name for ep in entry_points(group="seed_gym.envs")}
    assert "alfworld" in names
    assert "alfworld" in {spec.env_id for spec in seed_gym.list_envs()}


def test_alfworld_is_registered_with_gymnasium():
    assert "seed_gym/ALFWorld-v0" in gymnasium.registry


def test_a_plugin_env_registers_and_builds_by_name():
    register("toy-counter-plugin", "toy_envs:CounterEnv", gym_id="seed_gym/ToyCounter-v0", max_steps=3)
    env = seed_gym.make("toy-counter-plugin")
    assert env.max_steps == 3
    env = gymnasium.make("seed_gym/ToyCounter-v0")
    observation, info = env.reset(options={"task_id": "count-1"})
    assert info["task"]["id"] == "count-1"


def test_unknown_env_names_the_registered_ones():
    with pytest.raises(UnknownEnvError, match="alfworld"):
        seed_gym.make("nethack")
