"""The TextEnv contract, on the toy counter env."""

import pytest
from toy_envs import CounterEnv

from seed_gym import INFO_KEYS, EnvMisuseError, UnknownTaskError


def test_reset_returns_observation_and_all_info_keys():
    env = CounterEnv()
    observation, info = env.reset(seed=3, options={"task_id": "count-2"})
    assert observation == "count to 2 (seed 3)"
    assert set(INFO_KEYS) <= set(info)
    assert info["task"] == {"id": "count-2", "split": "train", "family": "even", "instruction": "count to 2"}
    assert info["won"] is False and info["invalid_action"] is False


def test_step_returns_the_gymnasium_five_tuple_and_terminates_on_win():
    env = CounterEnv()
    env.reset(options={"task_id": "count-2"})
    assert env.step("up")[1:4] == (0.0, False, False)
    observation, reward, terminated, truncated, info = env.step("up")
    assert (reward, terminated, truncated, info["won"], info["score"]) == (1.0, True, False, True, 1.0)


def test_step_budget_truncates_and_is_never_both_terminated_and_truncated():
    env = CounterEnv(max_steps=2)
    env.reset(options={"task_id": "count-2"})
    env.step("up")
    _, _, terminated, truncated, _ = env.step("up")
    assert terminated and not truncated  # winning on the last allowed step is termination
    env.reset(options={"task_id": "count-5"})
    env.step("up")
    _, _, terminated, truncated, _ = env.step("up")
    assert truncated and not terminated


@pytest.mark.parametrize("action", ["", "x" * 100_000, "ü 😀 ☃", "\x00\x07\x1b[2J", None, 42, ["up"]])
def test_bad_actions_are_invalid_observations_never_exceptions(action):
    env = CounterEnv()
    env.reset(options={"task_id": "count-3"})
    observation, reward, terminated, truncated, info = env.step(action)
    assert info["invalid_action"] is True and reward == 0.0 and not terminated
    assert env.step("up")[4]["invalid_action"] is False  # still usable


def test_misuse_raises_typed_errors():
    env = CounterEnv()
    with pytest.raises(EnvMisuseError):
        env.step("up")
    with pytest.raises(UnknownTaskError):
        env.reset(options={"task_id": "nope"})
    env.reset(options={"task_id": "count-1"})
    env.step("up")
    with pytest.raises(EnvMisuseError):
        env.step("up")


def test_reset_without_task_id_draws_from_the_default_split_deterministically():
    first = CounterEnv().reset(seed=7)[1]["task"]["id"]
    assert first == CounterEnv().reset(seed=7)[1]["task"]["id"]
    assert first in CounterEnv().task_set().split("train")


def test_text_spaces_accept_natural_language():
    env = CounterEnv()
    assert env.action_space.contains("go to countertop 1, then look.")
    assert env.observation_space.contains("You see a mug 2.\nYour task is to: x")


def test_task_info_as_dict_holds_every_field():
    from dataclasses import asdict

    from seed_gym.core import TaskInfo

    task = TaskInfo(id="t-1", split="test", family="f", instruction="buy a lamp")
    assert task.as_dict() == asdict(task)
