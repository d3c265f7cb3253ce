"""What the TextEnv base class checks once, so no env has to: reset's option keys, task ids
against the splits, and the expert contract (who has one, who is passed ``expert=True``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from toy_envs import CounterEnv

from seed_gym.core import EnvMisuseError, TaskInfo, TextEnv, UnknownTaskError
from seed_gym.evaluate import EvalConfig, MissingExpertError, evaluate, expert_kwargs
from seed_gym.registry import register


class LaxCounterEnv(CounterEnv):
    """Its own ``_reset`` accepts any id: only the base class stands between it and a bad one."""

    env_id = "toy-lax"

    def _reset(self, task_id: str, seed: int) -> tuple[str, TaskInfo]:
        return "anything goes", TaskInfo(task_id, "train", "lax", "do anything")


class PlainCounterEnv(CounterEnv):
    """A counter game without an expert (the base class's hook, not overridden)."""

    _expert_action = TextEnv._expert_action


class ExpertOnRequestEnv(CounterEnv):
    """Takes an ``expert`` keyword (a costly expert computed only on request)."""

    def __init__(self, max_steps: int | None = None, expert: bool = False) -> None:
        super().__init__(max_steps=max_steps)
        self.expert = expert

    def _expert_action(self) -> str | None:
        return "up" if self.expert else None


register("toy-plain", PlainCounterEnv)
register("toy-counter-expert", CounterEnv)
register("toy-expert-on-request", ExpertOnRequestEnv)


@pytest.mark.parametrize("options, hint", [({"task": "count-1"}, "did you mean 'task_id'"),
                                            ({"task_id": "count-1", "seed": 3}, "'seed'"),
                                            ({"taskid": "count-1"}, "did you mean 'task_id'")])
def test_an_unknown_reset_option_is_refused_not_ignored(options: dict, hint: str) -> None:
    with pytest.raises(EnvMisuseError, match=hint):
        CounterEnv().reset(seed=0, options=options)


def test_an_env_may_declare_more_reset_options() -> None:
    class WithLevel(CounterEnv):
        reset_options = CounterEnv.reset_options | {"level"}

    observation, _ = WithLevel().reset(seed=0, options={"task_id": "count-2", "level": 1})
    assert observation.startswith("count to 2")


@pytest.mark.parametrize("task_id", ["count-99", "count-1 ", " count-1", "COUNT-1", 7, "", "count-01"])
def test_only_the_ids_the_splits_list_are_tasks(task_id: object) -> None:
    env = LaxCounterEnv()
    with pytest.raises(UnknownTaskError, match="unknown task id"):
        env.reset(seed=0, options={"task_id": task_id})
    assert env.reset(seed=0, options={"task_id": "count-1"})[0] == "anything goes"  # still usable


def test_has_expert_is_whether_the_env_overrides_the_hook() -> None:
    assert CounterEnv.has_expert() and ExpertOnRequestEnv.has_expert()
    assert not PlainCounterEnv.has_expert()


def test_expert_true_goes_only_to_envs_that_take_it() -> None:
    assert expert_kwargs("toy-expert-on-request", ExpertOnRequestEnv(), "expert") == {"expert": True}
    assert expert_kwargs("toy-counter-expert", CounterEnv(), "expert") == {}  # always on


def test_an_expert_agent_on_an_env_without_an_expert_is_one_clear_error(tmp_path: Path) -> None:
    config = EvalConfig(env="toy-plain", split="train", agent="expert", out=tmp_path / "run", n=1, backend="inline")
    with pytest.raises(MissingExpertError, match=r"agent 'expert' .* env 'toy-plain' has no expert"):
        evaluate(config)


@pytest.mark.parametrize("env_id", ["toy-counter-expert", "toy-expert-on-request"])
def test_the_expert_plays_envs_with_or_without_an_expert_keyword(tmp_path: Path, env_id: str) -> None:
    config = EvalConfig(env=env_id, split="train", agent="expert", out=tmp_path / "run", n=3, backend="inline")
    assert evaluate(config)["success_rate"] == 1.0
