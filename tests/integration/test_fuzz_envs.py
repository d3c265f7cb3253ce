"""Fuzzing every env's ``reset`` and ``step`` (#20 "keep it fixed"), on the real engines.

Each example resets an env and plays a drawn sequence of actions: admissible ones, near misses,
the env's grammar pieces shuffled, unicode (lone surrogates and control characters included),
non-strings, and actions at and just over the action space's size limit. Each call runs under a
watchdog (``tests/conftest.py``): a hang is a failure, nothing is timed. What must hold:

* ``reset`` returns ``(str, info)`` or raises a typed :class:`~seed_gym.core.SeedGymError`, for any
  seed, options or task id; ``step`` never raises, returns the gymnasium 5-tuple with the
  contract's ``info`` keys, ``score`` in [0, 1], never both ``terminated`` and ``truncated``;
* the step can be recorded: its :class:`~seed_gym.records.EpisodeRecord` serialises to a JSON line
  that reads back whole (a run never dies, or loses an episode, on what an agent sent).

The budgets (``BUDGET``: examples per env, with the derandomized ``fuzz`` profile) are fixed, so
CI runs the same examples every time.
"""

from __future__ import annotations

import functools
import math
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

import seed_gym
from seed_gym.core import INFO_KEYS, MAX_TEXT_LENGTH, SeedGymError
from seed_gym.records import EpisodeRecord, StepRecord

pytestmark = pytest.mark.integration
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from toy_envs import CounterEnv  # noqa: E402  (the toy env lives with the unit tests)

#: Examples per env (each a reset and up to ``MAX_STEPS`` steps) and the per-call bound in seconds.
BUDGET = {"toy": 200, "webshop": 150, "searchqa": 150, "alfworld": 40, "webshop-browser": 12}
MAX_STEPS = 12
BOUND_S = {"webshop-browser": 60.0}
DEFAULT_BOUND_S = 20.0
ALF_SIZES = {"train": 3, "seen": 2, "unseen": 2}  # the generated games test_training.py also uses

GRAMMAR = {
    "toy": ["up", "down", " ", "UP", "u", "p"],
    "webshop": ["search[", "click[", "]", "[", "buy now", "next >", "< prev", "back to search", "b0", "description",
                " ", "\n", "search", "click"],
    "searchqa": ["<search>", "</search>", "<answer>", "</answer>", "<information>", "<", ">", "/", " paris ",
                 "who", "\n"],
    "alfworld": ["go to", "take", "put", "open", "close", "look", "inventory", "examine", " 1", " in/on ",
                 "countertop", "help", "  ", "\t"],
}
GRAMMAR["webshop-browser"] = GRAMMAR["webshop"]
LIMIT_PIECES = ["[", "search[", "<search>", "<answer>", "a", "é", "\x00", " ", "click[b0", "jeans é "]
LIMIT_WRAPS = [("", ""), ("search[", "]"), ("click[", "]"), ("<search>", "</search>"), ("<answer>", "</answer>")]


def text_at(size: int) -> st.SearchStrategy[str]:
    """A string of exactly ``size`` characters: one piece repeated (hypothesis cannot draw megabyte
    strings character by character, and a repeat is the worst case for a parser), bare or inside
    an action's brackets or tags."""
    def build(wrap: tuple[str, str], piece: str) -> str:
        body = size - len(wrap[0]) - len(wrap[1])
        return wrap[0] + (piece * (body // len(piece) + 1))[:body] + wrap[1]

    return st.builds(build, st.sampled_from(LIMIT_WRAPS), st.sampled_from(LIMIT_PIECES))


@functools.lru_cache(maxsize=4096)  # a strategy is costly to build, and admissible lists repeat
def actions(env_id: str, admissible: tuple[str, ...] | None) -> st.SearchStrategy[Any]:
    pieces = GRAMMAR[env_id]
    near: list[st.SearchStrategy[Any]] = []
    if admissible:
        chosen = st.sampled_from(admissible)
        near = [chosen, chosen.map(str.upper), chosen.map(lambda a: f"  {a}\n"), chosen.map(lambda a: a[:-1]),
                chosen.map(lambda a: a + "]"), chosen.map(lambda a: a.replace("[", "[[", 1))]
    return st.one_of(
        *near,
        st.lists(st.sampled_from(pieces), max_size=12).map("".join),
        st.text(max_size=64),
        st.text(st.characters(codec=None, categories=["Cs", "Cc", "Zs", "Ll"]), max_size=32),  # lone surrogates
        st.sampled_from([None, 0, 1.5, -1, b"click[buy now]", ["search[x]"], {"action": "up"}, float("nan")]),
        st.one_of(text_at(MAX_TEXT_LENGTH), text_at(MAX_TEXT_LENGTH + 1), text_at(4096)),  # at the limit
    )


def task_ids(valid: list[str]) -> st.SearchStrategy[Any]:
    chosen = st.sampled_from(valid)
    return st.one_of(
        chosen, chosen, chosen.map(lambda t: t + " "), chosen.map(lambda t: " " + t), chosen.map(str.upper),
        chosen.map(lambda t: t.replace("1", "\u0661")), chosen.map(lambda t: t + "/.."), chosen.map(lambda t: t + "\x00"),
        st.text(max_size=40), st.sampled_from([None, 0, -1, 1.5, ["x"], {"a": 1}, b"fixed_1", "../../etc/passwd", ""]),
        text_at(MAX_TEXT_LENGTH),
    )


seeds = st.one_of(st.none(), st.integers(min_value=-2**70, max_value=2**70), st.sampled_from([True, 1.5, "3", [1]]))


def check_step(result: Any, env: Any) -> tuple[str, dict]:
    observation, reward, terminated, truncated, info = result
    assert isinstance(observation, str)
    assert isinstance(reward, float) and math.isfinite(reward)
    assert isinstance(terminated, bool) and isinstance(truncated, bool) and not (terminated and truncated)
    assert set(INFO_KEYS) <= set(info)
    assert isinstance(info["invalid_action"], bool) and isinstance(info["won"], bool)
    assert 0.0 <= info["score"] <= 1.0
    admissible = info["admissible_actions"]
    assert admissible is None or all(isinstance(a, str) for a in admissible)
    return observation, info


def recorded(steps: list[StepRecord], info: dict, observation: str) -> None:
    """The episode so far as its record, serialised and read back whole."""
    record = EpisodeRecord(episode_id="fuzz#0", task=dict(info["task"]), agent="fuzz", group_index=0, seed=0,
                           steps=steps, final_observation=observation, won=bool(info["won"]),
                           score=float(info["score"]), total_reward=0.0, status="completed", wall_seconds=0.0)
    line = record.to_json()
    from seed_gym import jsonl

    assert jsonl.parse_object(line.encode("utf-8")) is not None


#: The toy env's test hooks (crash the process, raise, sleep an hour) are not part of its contract.
TOY_HOOKS = ("crash", "boom", "hang")


def make_env(env_id: str) -> Any:
    if env_id == "toy":
        return CounterEnv(crash_on=TOY_HOOKS[0])
    if env_id == "searchqa":
        return seed_gym.make("searchqa", entities=300)
    if env_id == "alfworld":
        return seed_gym.make("alfworld", sizes=ALF_SIZES, split="unseen", expert=True)
    if env_id == "webshop-browser":
        pytest.importorskip("selenium")
        if not (shutil.which("chromium") and shutil.which("chromedriver")):
            pytest.skip("needs chromium and chromium-driver")
    return seed_gym.make(env_id, num_products=300, expert=True)


@pytest.fixture(scope="module")
def envs():
    made: dict[str, Any] = {}

    def get(env_id: str) -> Any:
        if env_id not in made:
            made[env_id] = make_env(env_id)
        return made[env_id]

    yield get
    for env in made.values():
        env.close()


def splits_of(env: Any) -> list[str]:
    task_set = env.task_set()
    name = "unseen" if "unseen" in task_set.names() else task_set.default_split
    return list(task_set.split(name).task_ids[:20])


@pytest.mark.parametrize("env_id", list(BUDGET))
def test_fuzzed_resets_and_steps_keep_the_contract(env_id, envs, watchdog):
    env = envs(env_id)
    valid = splits_of(env)
    bound = BOUND_S.get(env_id, DEFAULT_BOUND_S)

    @settings(settings.get_profile("fuzz"), max_examples=BUDGET[env_id])
    @given(data=st.data())
    def episode(data: st.DataObject) -> None:
        seed, task_id = data.draw(seeds, "seed"), data.draw(task_ids(valid), "task_id")
        options = data.draw(st.one_of(st.just({"task_id": task_id}), st.just({"task": task_id}),
                                      st.sampled_from([None, "abc", 5])), "options")
        known = False
        try:
            with watchdog(bound):
                observation, info = env.reset(seed=seed, options=options)
            assert isinstance(observation, str) and set(INFO_KEYS) <= set(info)
            known = isinstance(options, dict) and options.get("task_id") in valid
        except SeedGymError:
            pass  # refused, typed: the env stays usable
        if not known:
            with watchdog(bound):  # play a known task (a reset without one draws a random task)
                observation, info = env.reset(seed=0, options={"task_id": valid[0]})
        steps: list[StepRecord] = []
        for t in range(data.draw(st.integers(1, MAX_STEPS), "steps")):
            admissible = info["admissible_actions"]
            action = data.draw(actions(env_id, None if admissible is None else tuple(admissible)), f"action {t}")
            if env_id == "toy" and action in TOY_HOOKS:
                continue
            with watchdog(bound):
                result = env.step(action)
            next_observation, info = check_step(result, env)
            steps.append(StepRecord(t=t, observation=observation, action=action if isinstance(action, str) else
                                    repr(action), reward=result[1], invalid_action=info["invalid_action"]))
            observation = next_observation
            if result[2] or result[3]:
                break
        recorded(steps, info, observation)

    episode()
