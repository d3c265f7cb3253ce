"""Generated ALFWorld splits on the real engine: winnable, loadable by alfworld, reproducible."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from seed_gym.envs.alfworld import gen
from seed_gym.envs.alfworld.gen.tasks import TASK_TYPES

pytestmark = pytest.mark.integration

SIZE = 12
FOLDER = re.compile(r"^(\w+)-([A-Za-z]+)-None-([A-Za-z]+)-(\d+)$")
TRIAL = re.compile(r"^trial_gen_(\d+)_(\d{6})$")


@pytest.fixture(scope="module")
def unseen(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("alfworld-gen")
    progress: list[tuple[int, int]] = []
    split_dir = gen.generate_split(root, "unseen", seed=0, size=SIZE, workers=2,
                                   on_progress=lambda d, n: progress.append((d, n)))
    assert progress[0] == (0, SIZE) and progress[-1] == (SIZE, SIZE)
    return split_dir


def game_dirs(split_dir: Path) -> list[Path]:
    return sorted(p.parent for p in split_dir.glob("*/*/game.tw-pddl"))


def test_split_layout_and_manifest(unseen):
    assert unseen.name == "valid_unseen" and unseen.parent.name == "json_2.1.1"
    manifest = json.loads((unseen / "generation.json").read_text())
    assert manifest["size"] == SIZE and manifest["seed"] == 0 and manifest["split"] == "unseen"
    dirs = game_dirs(unseen)
    assert len(dirs) == SIZE
    types = Counter()
    unseen_scenes = set(gen.split_scenes("unseen"))
    for folder in dirs:
        task_match, trial_match = FOLDER.match(folder.parent.name), TRIAL.match(folder.name)
        assert task_match and trial_match
        assert sorted(p.name for p in folder.iterdir()) == [
            "game.tw-pddl", "initial_state.pddl", "traj_data.json"]
        traj = json.loads((folder / "traj_data.json").read_text())
        game = json.loads((folder / "game.tw-pddl").read_text())
        task_type, obj, last, scene = task_match.groups()
        assert traj["task_type"] == task_type and traj["pddl_params"]["object_target"] == obj
        assert traj["task_id"] == folder.name and int(trial_match.group(1)) == int(scene)
        assert int(scene) in unseen_scenes
        assert game["solvable"] is True and game["walkthrough"]
        assert game["pddl_problem"] == (folder / "initial_state.pddl").read_text()
        types[task_type] += 1
    assert set(types) == set(TASK_TYPES)
    assert dict(types) == {t: q for t, q in manifest["task_types"].items() if q}
    assert not set(gen.split_scenes("train")) & unseen_scenes


def test_games_win_with_their_walkthrough_in_alfred_tw_env(unseen):
    from alfworld.agents.environment.alfred_tw_env import AlfredTWEnv

    from seed_gym.envs.alfworld.engine import make_engine

    config = {
        "dataset": {"data_path": str(unseen), "eval_id_data_path": str(unseen),
                    "eval_ood_data_path": str(unseen), "num_train_games": -1,
                    "num_eval_games": -1},
        "env": {"task_types": [1, 2, 3, 4, 5, 6], "expert_type": "handcoded",
                "domain_randomization": False, "goal_desc_human_anns_prob": 0},
        "general": {"training_method": "dagger"},
        "dagger": {"training": {"max_nb_steps_per_episode": 50}},
    }
    tw = AlfredTWEnv(config, train_eval="eval_out_of_distribution")
    assert tw.num_games == SIZE  # every file passes alfworld's own collect_game_files
    env = tw.init_env(batch_size=1)
    played, too_long = set(), []
    try:
        for _ in range(SIZE):
            _, infos = env.reset()
            game_file = infos["extra.gamefile"][0]
            walkthrough = json.loads(Path(game_file).read_text())["walkthrough"]
            assert not infos["won"][0]  # the goal is false at reset
            if len(walkthrough) > 50:  # beyond the episode cap: replay on the engine below
                too_long.append(game_file)
                played.add(game_file)
                continue
            for command in walkthrough:
                _, _, dones, infos = env.step([command])
            assert infos["won"][0], game_file
            played.add(game_file)
    finally:
        env.close()
    assert len(played) == SIZE
    engine = make_engine(expert=False)
    for game_file in too_long:
        engine.load(game_file)
        state = engine.reset()
        for command in json.loads(Path(game_file).read_text())["walkthrough"]:
            state, _, _ = engine.step(command)
        assert state["won"], game_file


def test_existing_split_is_returned_without_work(unseen):
    stamps = {p: p.stat().st_mtime_ns for p in unseen.rglob("*")}
    calls: list[tuple[int, int]] = []
    again = gen.generate_split(unseen.parent.parent, "unseen", seed=0, size=SIZE,
                               on_progress=lambda d, n: calls.append((d, n)))
    assert again == unseen and calls == []
    assert {p: p.stat().st_mtime_ns for p in unseen.rglob("*")} == stamps


def test_same_seed_gives_byte_identical_files_for_any_worker_count(tmp_path):
    one = gen.generate_split(tmp_path / "a", "seen", seed=1, size=3, workers=1)
    two = gen.generate_split(tmp_path / "b", "seen", seed=1, size=3, workers=2)
    files_one = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    files_two = sorted(p.relative_to(two) for p in two.rglob("*") if p.is_file())
    assert files_one == files_two and len(files_one) == 3 * 3 + 1
    for rel in files_one:
        assert (one / rel).read_bytes() == (two / rel).read_bytes(), rel
    assert set(int(p.name.rsplit("-", 1)[1]) for p in one.iterdir() if p.is_dir()) <= set(
        gen.split_scenes("seen"))
