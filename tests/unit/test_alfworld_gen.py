"""Fast checks of the ALFWorld game generator: no engine runs here."""

from __future__ import annotations

import functools
import json
import random
import re
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from alfworld.gen import constants

from seed_gym.envs.alfworld import gen
from seed_gym.envs.alfworld.gen import build, candidates, gamefiles, pddl, scenes, splits, tasks
from seed_gym.envs.alfworld.gen.candidates import make_candidate
from seed_gym.envs.alfworld.gen.scenes import Pose, demangle, format_coord, load_scene, mangle
from seed_gym.envs.alfworld.gen.tasks import TASK_TYPES

ALFRED_CLASSES = set(constants.OBJECTS)


def sample_candidates(split: str = "unseen", per_type: int = 8, seed: int = 0):
    return [make_candidate(seed, split, 1000 * k + i, t)
            for k, t in enumerate(TASK_TYPES) for i in range(per_type)]


# --------------------------------------------------------------------------- ids and names

def test_mangle_matches_real_files():
    assert (mangle("Desk|+01.58|00.00|+00.39")
            == "Desk_bar__plus_01_dot_58_bar_00_dot_00_bar__plus_00_dot_39")
    sink = "Sink|-01.90|+00.97|-01.50|SinkBasin"
    assert mangle(sink) == ("Sink_bar__minus_01_dot_90_bar__plus_00_dot_97_bar__minus_01_dot_50"
                            "_bar_SinkBasin")
    assert mangle("a,b") == "a_comma_b"
    for thor in (sink, "Apple|+00.00|-01.25|+03.10", "x,y|-1.5"):
        assert demangle(mangle(thor)) == thor


def test_thor_coordinates():
    assert format_coord(0) == "00.00"
    assert format_coord(-0.001) == "00.00"
    assert format_coord(1.5) == "+01.50"
    assert format_coord(-12.345) == "-12.35" or format_coord(-12.345) == "-12.34"
    assert scenes.thor_id("Mug", 0.5, 0.0, -1.0) == "Mug|+00.50|00.00|-01.00"


def test_location_names():
    assert Pose(0.75, 0.5, 90, 30).location == "loc_bar_3_bar_2_bar_1_bar_30"
    assert Pose(-0.75, 0.5, 270, -30).location == "loc_bar__minus_3_bar_2_bar_3_bar__minus_30"


# --------------------------------------------------------------------------- scenes

def test_every_wheel_floorplan_loads():
    numbers = scenes.available_scenes()
    assert len(numbers) == 120
    for number in numbers:
        scene = load_scene(number)
        assert scene.receptacles
        assert len({r.thor_id for r in scene.receptacles}) == len(scene.receptacles)
        assert scene.receptacle_types <= set(pddl.STATIC_RECEPTACLE_TYPES)


def test_real_receptacles_keep_thor_ids_and_shared_poses_share_locations():
    openable = json.loads((scenes.layouts_dir() / "FloorPlan320-openable.json").read_text())
    scene = load_scene(320)
    real = {r.thor_id: r for r in scene.receptacles if not r.synthetic}
    assert set(real) == set(openable)
    desk = real["Desk|+01.58|00.00|+00.39"]
    assert desk.pose.location == "loc_bar_3_bar_2_bar_1_bar_30"
    low, mid = real["Shelf|-01.73|+00.06|+01.51"], real["Shelf|-01.73|+00.50|+01.51"]
    assert low.pose.location == mid.pose.location  # same interaction pose in openable.json
    assert {r.rtype for r in scene.receptacles if r.synthetic} == {"GarbageCan"}


def test_synthetic_receptacles_sit_at_free_reachable_points():
    import numpy as np

    scene = load_scene(1)
    counts = Counter(r.rtype for r in scene.receptacles if r.synthetic)
    assert counts == {"CoffeeMachine": 1, "Toaster": 1, "StoveBurner": 4, "GarbageCan": 1}
    layout = {(round(float(x), 2), round(float(z), 2))
              for x, z in np.load(scenes.layouts_dir() / "FloorPlan1-layout.npy")}
    real_poses = {(r.pose.x, r.pose.z) for r in scene.receptacles if not r.synthetic}
    for r in scene.receptacles:
        if r.synthetic:
            assert (r.pose.x, r.pose.z) in layout
            assert (r.pose.x, r.pose.z) not in real_poses
            assert r.thor_id.startswith(r.rtype + "|")
    # Burners come in pairs that share a pose.
    burner_locations = Counter(r.pose.location for r in scene.receptacles_of("StoveBurner"))
    assert sorted(burner_locations.values()) == [2, 2]
    # A room is the same in every game: placement depends on the scene number only.
    load_scene.cache_clear()
    assert load_scene(1) == scene


def test_sink_and_bathtub_basins_are_typed_as_basins():
    assert scenes.receptacle_type_of("Sink|-01.90|+00.97|-01.50|SinkBasin") == "SinkBasin"
    assert scenes.receptacle_type_of("Bathtub|-01.41|00.00|+00.56|BathtubBasin") == "BathtubBasin"
    assert scenes.receptacle_type_of("Cabinet|+00.68|+00.50|-02.20") == "Cabinet"


# --------------------------------------------------------------------------- splits

def test_unseen_scenes_are_disjoint_from_train_and_cover_every_room():
    train, seen, unseen = (set(gen.split_scenes(s)) for s in ("train", "seen", "unseen"))
    assert seen == train
    assert not train & unseen
    assert {10, 219, 308, 424} <= unseen
    assert train | unseen == set(scenes.available_scenes())
    for room in scenes.ROOM_RANGES:
        assert any(scenes.room_type(s) == room for s in unseen)
        assert any(scenes.room_type(s) == room for s in train)


def test_public_constants():
    assert gen.SPLIT_DIRS == {"train": "train", "seen": "valid_seen", "unseen": "valid_unseen"}
    assert gen.DEFAULT_SIZES == {"train": 2420, "seen": 140, "unseen": 134}
    assert isinstance(gen.GENERATOR_VERSION, str)
    with pytest.raises(ValueError):
        gen.split_scenes("test")


def test_default_sizes_reproduce_alfworld_mixture():
    assert list(splits.task_quotas("seen", 140).values()) == [35, 13, 27, 16, 25, 24]
    assert list(splits.task_quotas("unseen", 134).values()) == [24, 18, 31, 23, 21, 17]
    for split in splits.SPLIT_DIRS:
        for size in (0, 1, 5, 6, 12, 50, 333):
            quotas = splits.task_quotas(split, size)
            assert sum(quotas.values()) == size
            if size >= 6:
                assert min(quotas.values()) >= 1


def test_type_schedule_period_holds_the_quotas():
    quotas = splits.task_quotas("unseen", 134)
    schedule = splits.type_schedule(quotas)
    assert Counter(schedule) == Counter({t: q for t, q in quotas.items()})
    assert len(set(schedule[:6])) >= 5  # interleaved, not blocked


def test_every_split_can_host_every_task_type():
    for split in splits.SPLIT_DIRS:
        for task_type in TASK_TYPES:
            assert candidates.eligible_scenes(split, task_type), (split, task_type)


# --------------------------------------------------------------------------- task filters

@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_valid_tasks_follow_alfred_filters(task_type):
    for number in scenes.available_scenes():
        scene = load_scene(number)
        found = tasks.valid_tasks(scene, task_type)
        if found:
            assert scene.room in constants.GOALS_VALID[task_type]
        for task in found:
            assert task.object_target in ALFRED_CLASSES and "Sliced" not in task.object_target
            assert task.object_target in scene.object_types
            if task_type == tasks.LOOK:
                assert task.toggle_target == "DeskLamp" and task.parent_target == ""
                assert "DeskLamp" in scene.object_types and tasks.lamp_receptacles(scene)
                continue
            assert task.parent_target in ALFRED_CLASSES | {"SinkBasin", "BathtubBasin"}
            assert task.parent_target in scene.receptacle_types
            assert tasks.holds(task.parent_target, task.object_target)
            assert task.parent_target != "Toaster"
            assert task.parent_target not in tasks.INVALID_PARENTS.get(task_type, ())
            if task_type in tasks.APPLIANCE:
                assert tasks.APPLIANCE[task_type] in scene.receptacle_types
                affordance = tasks.AFFORDANCE[task_type]
                assert task.object_target in constants.VAL_ACTION_OBJECTS[affordance]


def test_floor_lamp_only_rooms_get_no_look_task():
    scene = load_scene(219)  # FloorLamp, no DeskLamp
    assert "FloorLamp" in scene.object_types and "DeskLamp" not in scene.object_types
    assert tasks.valid_tasks(scene, tasks.LOOK) == []


def test_clean_needs_a_sink_basin():
    for number in scenes.available_scenes():
        scene = load_scene(number)
        if "SinkBasin" not in scene.receptacle_types:
            assert tasks.valid_tasks(scene, "pick_clean_then_place_in_recep") == []


def test_folder_names():
    look = tasks.Task(tasks.LOOK, "TennisRacket", toggle_target="DeskLamp")
    assert look.folder_name(320) == "look_at_obj_in_light-TennisRacket-None-DeskLamp-320"
    heat = tasks.Task("pick_heat_then_place_in_recep", "Potato", parent_target="SinkBasin")
    assert heat.folder_name(18) == "pick_heat_then_place_in_recep-Potato-None-SinkBasin-18"
    assert list(heat.pddl_params()) == ["object_target", "parent_target", "toggle_target",
                                        "mrecep_target", "object_sliced"]


# --------------------------------------------------------------------------- candidates

def test_candidates_are_deterministic_and_seed_dependent():
    a = make_candidate(0, "unseen", 7, "pick_two_obj_and_place")
    assert a == make_candidate(0, "unseen", 7, "pick_two_obj_and_place")
    others = {make_candidate(s, "unseen", 7, "pick_two_obj_and_place") for s in (1, 2, 3)}
    assert a not in others
    # seen and train are different streams over the same rooms
    assert make_candidate(0, "seen", 7, "pick_and_place_simple") != make_candidate(
        0, "train", 7, "pick_and_place_simple")


def test_sampling_does_not_touch_global_random():
    random.seed(123)
    expected = random.random()
    random.seed(123)
    make_candidate(0, "seen", 3, "look_at_obj_in_light")
    assert random.random() == expected


def test_trial_numbers_are_unique_within_a_split():
    numbers = {candidates.trial_number(0, "train", i) for i in range(20000)}
    assert len(numbers) == 20000
    assert all(0 <= n < 1_000_000 for n in numbers)


def test_initial_states_make_the_goal_false_and_respect_receptacles():
    for split in ("unseen", "train"):
        for cand in sample_candidates(split, per_type=6):
            task, state = cand.task, cand.state
            targets = [o for o in state.objects if o.otype == task.object_target]
            assert targets
            for obj in state.objects:
                if obj.otype == tasks.LAMP:
                    assert obj.receptacle.rtype in tasks.LAMP_RECEPTACLES
                else:
                    assert tasks.holds(obj.receptacle.rtype, obj.otype)
            if task.task_type == tasks.LOOK:
                assert any(o.otype == "DeskLamp" for o in state.objects)
                continue
            for obj in targets:
                assert obj.receptacle.rtype != task.parent_target
                assert obj.receptacle.rtype != tasks.APPLIANCE.get(task.task_type)
            if task.task_type == tasks.PICK_TWO:
                assert len(targets) >= 2
            assert len(targets) <= 4


# --------------------------------------------------------------------------- PDDL

def _problem(cand) -> str:
    return pddl.problem_pddl(cand.trial_id, cand.state, cand.task)


def test_problem_structure_matches_real_files():
    for cand in sample_candidates(per_type=3):
        text = _problem(cand)
        header = f"(define (problem plan_{cand.trial_id})\n(:domain alfred)\n(:objects\n"
        assert text.startswith(header)
        assert text.count("(") == text.count(")")
        assert text.rstrip().endswith(")")
        objects = text.split("(:objects", 1)[1].split("(:init", 1)[0]
        declared = dict(re.findall(r"^\s+(\S+) - (\w+)$", objects, re.M))
        kinds = Counter(declared.values())
        assert kinds["otype"] == 79 and kinds["rtype"] == 30 and kinds["agent"] == 1
        assert sum(1 for k, v in declared.items() if v == "object" and "_bar_" not in k) == 79
        init = text.split("(:init", 1)[1].split("(:goal", 1)[0]
        facts = re.findall(r"\((\w+) ([^()]*)\)", init)
        names = Counter(name for name, _ in facts)
        for absent in ("isHot", "isClean", "isToggled", "opened", "distance", "totalCost"):
            assert names[absent] == 0
        assert ":metric" not in text
        assert names["atLocation"] == 1
        for name, args in facts:
            for arg in args.split():
                if not arg.endswith("Type"):
                    assert arg in declared, (name, arg)
        args = {name: [a.split() for n, a in facts if n == name] for name in names}
        obj_loc = dict(args["objectAtLocation"])
        rec_loc = dict(args["receptacleAtLocation"])
        obj_type = dict(args["objectType"])
        rec_type = dict(args["receptacleType"])
        can = {tuple(a) for a in args["canContain"]}
        pickupable = {a[0] for a in args["pickupable"]}
        for obj, rec in args["inReceptacle"]:
            assert obj_loc[obj] == rec_loc[rec]  # seen from its receptacle's location
            if obj in pickupable:
                assert (rec_type[rec], obj_type[obj]) in can
        assert set(rec_loc) == {r.pddl_id for r in cand.state.scene.receptacles}
        lamps = [o for o, t in obj_type.items() if t == "DeskLampType"]
        assert not pickupable & set(lamps)
        for name, affordance in (("cleanable", "Cleanable"), ("heatable", "Heatable"),
                                 ("coolable", "Coolable"), ("toggleable", "Toggleable")):
            able = constants.VAL_ACTION_OBJECTS[affordance]
            assert {a[0] for a in args.get(name, [])} == {
                o for o, t in obj_type.items() if t[:-len("Type")] in able}
        in_fridge = {o for o, r in args["inReceptacle"] if rec_type[r] == "FridgeType"}
        assert {a[0] for a in args.get("isCool", [])} == in_fridge
        for r in args.get("openable", []):
            assert rec_type[r[0]][:-4] in {"Fridge", "Cabinet", "Microwave", "Drawer", "Safe"}


@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_goal_is_the_goal_library_template(task_type):
    cand = make_candidate(0, "unseen", 5, task_type)
    goal = pddl.goal_pddl(cand.task)
    assert goal.lstrip().startswith("(:goal")
    assert "#" not in goal and "{" not in goal
    assert f"(objectType ?o {cand.task.object_target}Type)" in goal or \
        f"(objectType ?o1 {cand.task.object_target}Type)" in goal
    assert goal.count(")") - goal.count("(") == 1  # the extra one closes (define
    assert _problem(cand).endswith(goal)


# --------------------------------------------------------------------------- game files

def test_game_folder_files(tmp_path):
    cand = make_candidate(0, "unseen", 11, "look_at_obj_in_light")
    random.seed(5)
    expected = random.random()
    random.seed(5)
    game_file = gamefiles.write_game(tmp_path / cand.relative_dir, cand, ["look", "use desklamp 1"])
    assert random.random() == expected  # global random restored
    folder = game_file.parent
    assert folder.name == cand.trial_id
    assert folder.parent.name == cand.task.folder_name(cand.scene)
    game = json.loads(game_file.read_text())
    assert list(game) == ["pddl_domain", "grammar", "pddl_problem", "solvable", "walkthrough"]
    assert game["solvable"] is True and game["walkthrough"] == ["look", "use desklamp 1"]
    assert game["pddl_problem"] == (folder / "initial_state.pddl").read_text()
    assert game["pddl_domain"] == gamefiles.logic_text("alfred.pddl")
    assert "UNKNOWN GOAL" not in game["grammar"]
    sentence = gamefiles.goal_text(game["grammar"])
    target = cand.task.object_target.lower()
    assert sentence in (f"look at {target} under the desklamp",
                        f"examine the {target} with the desklamp")
    twl2 = gamefiles.logic_text("alfred.twl2")
    assert game["grammar"].replace(sentence, "UNKNOWN GOAL", 1) == twl2
    traj = json.loads((folder / "traj_data.json").read_text())
    assert traj["task_id"] == cand.trial_id and traj["task_type"] == "look_at_obj_in_light"
    assert traj["pddl_params"] == cand.task.pddl_params()
    assert traj["scene"] == {"floor_plan": f"FloorPlan{cand.scene}", "scene_num": cand.scene,
                             "random_seed": cand.trial_number}
    assert traj["turk_annotations"]["anns"][0]["task_desc"] == sentence.capitalize() + "."
    # Same candidate, same bytes.
    again = gamefiles.write_game(tmp_path / "again", cand, ["look", "use desklamp 1"])
    assert again.read_bytes() == game_file.read_bytes()
    unverified = gamefiles.write_game(tmp_path / "unverified", cand)
    assert json.loads(unverified.read_text())["solvable"] is False


# --------------------------------------------------------------------------- selection driver

def _fake_verify(seed, split, index, task_type, scratch, *, calls=None):
    """Stands in for the engine: unsolvable when a hash says so, random delays."""
    if calls is not None:
        calls.append(index)
    time.sleep(random.Random(index * 7919 + seed).random() * 0.01 + random.random() * 0.01)
    rel = f"{task_type}-X-None-Y-1/trial_gen_1_{index:06d}"
    folder = Path(scratch) / rel
    folder.mkdir(parents=True)
    (folder / "game.tw-pddl").write_text(str(index))
    solved = (index * 2654435761 + seed) % 5 != 0
    return build.Verdict(index, task_type, rel, solved)


def _threads(workers):
    return ThreadPoolExecutor(max_workers=workers)


def _select(tmp_path, name, workers, seed=0, size=24, progress=None, calls=None):
    out = tmp_path / name
    out.mkdir()
    verify = functools.partial(_fake_verify, calls=calls)
    counts = build.select_games(out, seed, "unseen", size, workers, progress,
                                verify=verify, executor=_threads)
    kept = sorted(p.relative_to(out).as_posix() for p in out.glob("*/*"))
    return counts, kept


def test_selection_is_independent_of_workers_and_timing(tmp_path):
    progress = []
    one = _select(tmp_path, "one", 1)
    four = _select(tmp_path, "four", 4, progress=lambda d, n: progress.append((d, n)))
    assert one == four
    counts, kept = one
    assert len(kept) == 24
    assert Counter(k.split("-")[0] for k in kept) == Counter(splits.task_quotas("unseen", 24))
    assert counts["discarded"] == counts["candidates"] - 24 > 0
    assert not (tmp_path / "one" / build._SCRATCH).exists()
    assert progress[0] == (0, 24) and progress[-1] == (24, 24)
    assert [d for d, _ in progress] == sorted(d for d, _ in progress)
    # Kept games are the first solvable candidates of each type by index.
    quotas = splits.task_quotas("unseen", 24)
    schedule = splits.type_schedule(quotas)
    for task_type, quota in quotas.items():
        indices = [i for i in range(1000) if schedule[i % len(schedule)] == task_type]
        solvable = [i for i in indices if (i * 2654435761) % 5 != 0][:quota]
        assert sorted(int(k.rsplit("_", 1)[1]) for k in kept if k.startswith(task_type + "-")) \
            == solvable


def test_generate_split_is_atomic_locked_and_idempotent(tmp_path, monkeypatch):
    calls: list[int] = []
    fake = functools.partial(build.select_games,
                             verify=functools.partial(_fake_verify, calls=calls),
                             executor=_threads)
    monkeypatch.setattr(build, "select_games", fake)
    root = tmp_path / "root"
    results = []

    def run():
        results.append(gen.generate_split(root, "unseen", seed=3, size=10, workers=2))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    split_dir = root / "json_2.1.1" / "valid_unseen"
    assert results == [split_dir, split_dir]
    manifest = json.loads((split_dir / "generation.json").read_text())
    assert manifest["generator_version"] == gen.GENERATOR_VERSION
    assert (manifest["seed"], manifest["split"], manifest["size"]) == (3, "unseen", 10)
    assert manifest["scenes"] == gen.split_scenes("unseen")
    assert sum(manifest["task_types"].values()) == 10
    first_run = len(calls)
    assert first_run == manifest["candidates"]  # the second thread found the split done
    assert len(list(split_dir.glob("*/*"))) == 10
    assert [p.name for p in (root / "json_2.1.1").iterdir()] == ["valid_unseen"]  # no temp left
    # Matching manifest: returned without work; different size: replaced whole.
    assert gen.generate_split(root, "unseen", seed=3, size=10) == split_dir
    assert len(calls) == first_run
    gen.generate_split(root, "unseen", seed=3, size=6, workers=1)
    assert len(list(split_dir.glob("*/*"))) == 6
    assert [p.name for p in (root / "json_2.1.1").iterdir()] == ["valid_unseen"]


def test_failed_generation_leaves_nothing(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("engine exploded")

    fake = functools.partial(build.select_games, verify=broken, executor=_threads)
    monkeypatch.setattr(build, "select_games", fake)
    root = tmp_path / "root"
    with pytest.raises(RuntimeError):
        gen.generate_split(root, "seen", size=4, workers=1)
    assert list((root / "json_2.1.1").iterdir()) == []
