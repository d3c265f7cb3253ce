"""The alfworld env on the real ALFWorld/TextWorld engine, on the real official games."""

import json

import pytest

import seed_gym
from seed_gym import INFO_KEYS, MissingDataError, UnknownTaskError

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def env(official_alfworld):
    return seed_gym.make("alfworld", data=str(official_alfworld), expert=True)


def test_official_splits_keep_only_solvable_games(env, official_alfworld):
    task_set = env.task_set()
    assert len(task_set.split("seen")) == 140 and len(task_set.split("unseen")) == 134
    assert len(task_set.split("valid_unseen")) == 134  # the official name is an alias
    for task_id in task_set.split("unseen").task_ids:
        assert json.loads((official_alfworld / task_id / "game.tw-pddl").read_text())["solvable"] is True


def test_split_order_and_fingerprint_are_stable(official_alfworld):
    a = seed_gym.make("alfworld", data=str(official_alfworld)).task_set().split("unseen")
    b = seed_gym.make("alfworld", data=str(official_alfworld)).task_set().split("unseen")
    assert a.task_ids == b.task_ids and a.fingerprint == b.fingerprint
    assert len({tid.split("/")[1].split("-")[0] for tid in a.select(20)}) >= 4  # prefixes mix task types


def test_reset_fills_every_info_key_from_the_engine(env):
    task_id = env.task_set().split("unseen").task_ids[0]
    observation, info = env.reset(seed=0, options={"task_id": task_id})
    assert observation.startswith("-= Welcome to TextWorld, ALFRED! =-")
    assert set(INFO_KEYS) <= set(info)
    assert info["task"]["family"] == task_id.split("/")[1].split("-")[0]
    assert info["task"]["instruction"] and info["task"]["instruction"] in observation
    assert "look" in info["admissible_actions"] and info["expert_action"] in info["admissible_actions"]
    assert env.max_steps == 50


@pytest.mark.parametrize("action", ["", "x" * 100_000, "prends la pomme 🍎", "go to\x00 desk 1\x1b[0m", "help"])
def test_bad_actions_get_nothing_happens_and_the_env_stays_usable(env, action):
    env.reset(seed=0, options={"task_id": env.task_set().split("unseen").task_ids[1]})
    observation, reward, terminated, truncated, info = env.step(action)
    assert observation == "Nothing happens." and info["invalid_action"] and reward == 0.0
    assert not (terminated or truncated)
    assert not env.step("look")[4]["invalid_action"]


def test_commands_are_normalised_before_matching(env):
    env.reset(seed=0, options={"task_id": env.task_set().split("unseen").task_ids[1]})
    assert not env.step("  LOOK ")[4]["invalid_action"]


def test_same_seed_same_game_same_trajectory(env):
    task_id = env.task_set().split("unseen").task_ids[2]

    def play():
        observation, info = env.reset(seed=4, options={"task_id": task_id})
        seen = [observation]
        for _ in range(6):
            observation, *_, info = env.step(info["admissible_actions"][len(seen) % len(info["admissible_actions"])])
            seen.append(observation)
        return seen

    assert play() == play()


def test_expert_wins_every_task_type_including_pick_two(env):
    ids = env.task_set().split("unseen").task_ids
    by_type = {}
    for task_id in ids:
        by_type.setdefault(task_id.split("/")[1].split("-")[0], task_id)
    assert len(by_type) == 6
    for task_id in by_type.values():
        _, info = env.reset(seed=0, options={"task_id": task_id})
        terminated = truncated = False
        while not (terminated or truncated):
            _, _, terminated, truncated, info = env.step(info["expert_action"])
        assert info["won"], task_id


def test_the_fixes_make_the_expert_solve_an_old_grammar_pick_two_game(official_alfworld):
    """Released files use ``put X in/on Y``; the stock expert only proposes ``move X to Y``."""
    import random

    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredExpert, AlfredInfos
    from textworld.envs.pddl import PddlEnv

    from seed_gym.envs.alfworld.engine import solve_with_expert

    game = str(sorted((official_alfworld / "valid_unseen").glob("pick_two_obj_and_place-KeyChain-None-Safe-219/*/game.tw-pddl"))[0])
    infos = textworld.EnvInfos(won=True, admissible_commands=True, facts=True, feedback=True,
                               extras=["gamefile", "expert_plan"])
    stock = AlfredExpert(AlfredInfos(AlfredDemangler(PddlEnv(infos), shuffle=False)))
    random.seed(0)
    stock.load(game)
    state = stock.reset()
    for _ in range(50):
        state, _, _ = stock.step(state["extra.expert_plan"][0])
    assert not state["won"]
    walkthrough = solve_with_expert(game, max_steps=50)
    assert walkthrough is not None and any(step.startswith("put ") for step in walkthrough)


def test_unknown_tasks_and_missing_data_raise_typed_errors(env, tmp_path):
    with pytest.raises(UnknownTaskError):
        env.reset(options={"task_id": "valid_unseen/no-such-game/trial_0"})
    with pytest.raises(UnknownTaskError):
        env.reset(options={"task_id": "../../../../etc"})
    with pytest.raises(MissingDataError, match="no ALFWorld games"):
        seed_gym.make("alfworld", data=str(tmp_path))


def test_play_lets_a_person_play_in_the_terminal(official_alfworld):
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "seed_gym.cli", "play", "alfworld", "--env-arg",
                             f"data={official_alfworld}", "--index", "0"],
                            input="20\nfly to the moon\nquit\n", capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Your task is to:" in result.stdout and "[1] go to" in result.stdout
    assert "Nothing happens." in result.stdout  # the free-text line was played, not a crash
    assert "not won after 2 steps" in result.stdout


@pytest.mark.parametrize("odd", ["{first}/", "./{first}", "{split}/../{first}", "{split}/./{rest}", "/{first}",
                                 "{first}\udc80", "x" * 5000, "{split}\\{rest}", "{split}//{rest}"])
def test_an_odd_task_id_is_an_unknown_task_not_a_raw_error(official_alfworld, odd):
    from seed_gym.core import UnknownTaskError

    env = seed_gym.make("alfworld", data=str(official_alfworld))
    first = env.task_set().split("unseen").task_ids[0]
    split, rest = first.split("/", 1)
    with pytest.raises(UnknownTaskError):
        env.reset(seed=0, options={"task_id": odd.format(first=first, split=split, rest=rest)})
