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


def test_gymnasium_make_works_in_a_fresh_interpreter():
    """Gymnasium 1.x has no plugin entry points (removed in 1.0); its own way to load a package's
    envs from a fresh interpreter is the ``module:`` prefix, which imports seed_gym first."""
    import subprocess
    import sys

    code = ("import gymnasium\n"
            "env = gymnasium.make('seed_gym:seed_gym/SearchQA-v0')\n"
            "observation, info = env.reset(seed=0)\n"
            "print(type(env.unwrapped).__name__, sorted(info)[0])\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["SearchQAEnv", "admissible_actions"]
