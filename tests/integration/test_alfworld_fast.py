"""The fast engine on the real ALFWorld/TextWorld stack plays exactly like the stock one.

CI runs the checker on a few official games (the full 274-game run is `seed-gym data alfworld
--check-engine`); the checker itself is shown to catch a changed observation and a changed RNG
stream, so a pass means something."""

import random
import time

import pytest
from typer.testing import CliRunner

import seed_gym
from seed_gym.envs.alfworld import check, fast
from seed_gym.envs.alfworld.engine import FAST_ENGINE_VERSION, STOCK_ENGINE_VERSION

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def games(official_alfworld):
    files = check.game_files(official_alfworld, ["unseen", "seen"])
    picked = {}
    for path in files:  # one game of each task type
        picked.setdefault(path.split("/")[-3].split("-")[0], path)
    return sorted(picked.values())


def test_a_few_official_games_play_identically_on_both_engines(games):
    assert len(games) == 6
    for game in games[:3]:
        result = check.check_game(game, random_steps=8)
        assert result["differences"] == []
        assert result["compared"] >= 3 + 8 + 8  # three starts and both random sequences
    stats = fast.cache_stats()
    assert stats["translation_hits"] >= 3  # the reloads and resets came from the cache
    assert stats["disk_writes"] >= 3  # and the translations were stored for other processes


def test_the_checker_catches_a_changed_observation(games, monkeypatch):
    check._engines()
    grammar = fast._FAST_GRAMMAR
    original = grammar.derive

    def tampered(self, start, context={}):
        text = original(self, start, context)
        return text + " " if start == "#intro#" else text

    monkeypatch.setattr(grammar, "derive", tampered)
    result = check.check_game(games[3], random_steps=2)
    assert result["differences"] and "observation differs" in result["differences"][0]


def test_the_checker_catches_a_changed_plan(games, monkeypatch):
    check._engines()
    state_class = fast._CLASSES[0]
    original = state_class.replan

    def replan(self, infos):
        return list(reversed(original(self, infos)))

    monkeypatch.setattr(state_class, "replan", replan)
    result = check.check_game(games[2], random_steps=2)
    assert result["differences"] and "planner" in result["differences"][0] and "plan differs" in result["differences"][0]


def test_a_planner_search_that_never_ends_is_cut_off_on_one_stack_a_difference(games, monkeypatch):
    check._engines()
    monkeypatch.setattr(fast._CLASSES[0], "replan", lambda self, infos: time.sleep(3600) or [])
    started = time.monotonic()
    result = check.check_game(games[2], random_steps=2, planner_timeout=1)
    assert time.monotonic() - started < 120  # not the hour the search would take
    assert result["differences"] and "fast found no plan within 1 s" in result["differences"][0]
    assert result["planner_timeouts"] == 0


def test_a_planner_search_that_never_ends_on_both_stacks_is_counted_not_compared(games, monkeypatch):
    from textworld.envs.pddl.logic import PddlState

    check._engines()
    monkeypatch.setattr(PddlState, "replan", lambda self, infos: time.sleep(3600) or [])
    result = check.check_game(games[2], random_steps=2, planner_timeout=1)
    assert result["differences"] == [] and result["planner_timeouts"] == 1
    assert result["compared"] >= 3 + 2 + 2  # the game's other comparisons stand


def test_the_checker_catches_a_changed_random_stream(games, monkeypatch):
    _, fast_engine = check._engines()
    original = fast_engine.step

    def step(command):
        random.random()  # one extra draw from the engine's RNG
        return original(command)

    monkeypatch.setattr(fast_engine, "step", step)
    result = check.check_game(games[4], random_steps=2)
    assert any("rng differs" in d for d in result["differences"])


def test_env_records_which_engine_played(official_alfworld):
    fast_env = seed_gym.make("alfworld", data=str(official_alfworld))
    stock_env = seed_gym.make("alfworld", data=str(official_alfworld), engine="stock")
    assert fast_env.version == FAST_ENGINE_VERSION and fast_env.describe()["engine"] == FAST_ENGINE_VERSION
    assert fast_env.task_set() is fast_env.task_set()  # built once: resets never rescan the game tree
    assert stock_env.version == STOCK_ENGINE_VERSION and stock_env.describe()["engine"] == STOCK_ENGINE_VERSION
    task_id = fast_env.task_set().split("unseen").task_ids[5]
    a, b = (e.reset(seed=0, options={"task_id": task_id}) for e in (fast_env, stock_env))
    assert a == b
    for command in a[1]["admissible_actions"][:3]:
        assert fast_env.step(command) == stock_env.step(command)
        fast_env.reset(seed=0, options={"task_id": task_id})
        stock_env.reset(seed=0, options={"task_id": task_id})


def test_fast_engine_refuses_unpinned_versions(official_alfworld, monkeypatch):
    monkeypatch.setattr(fast, "installed_versions", lambda: {"alfworld": "0.4.2", "textworld": "1.8.0"})
    with pytest.raises(fast.EngineVersionError, match="textworld 1.8.0"):
        seed_gym.make("alfworld", data=str(official_alfworld))
    assert seed_gym.make("alfworld", data=str(official_alfworld), engine="stock").version == STOCK_ENGINE_VERSION


def test_check_engine_command(games, tmp_path):
    from seed_gym.cli import app

    tree = tmp_path / "json_2.1.1"
    for game in games[5:]:
        src = __import__("pathlib").Path(game).parent
        dst = tree / "valid_seen" / src.parent.name / src.name
        dst.mkdir(parents=True)
        for name in ("game.tw-pddl", "traj_data.json"):
            (dst / name).write_bytes((src / name).read_bytes())
    log = tmp_path / "check.jsonl"
    command = ["data", "alfworld", "--check-engine", str(tmp_path), "--split", "seen", "--check-steps", "3",
               "--check-log", str(log)]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.output
    assert "1 games" in result.output and "0 differences" in result.output and "0 games from" in result.output
    assert len(log.read_text().splitlines()) == 1

    with log.open("a") as sink:
        sink.write('{"game": "torn')  # a check killed mid-write
    again = CliRunner().invoke(app, command)  # the logged game is not played again
    assert again.exit_code == 0, again.output
    assert "1 games" in again.output and "1 games from" in again.output and "0 differences" in again.output
    assert len(log.read_text().splitlines()) == 2  # nothing appended but the torn fragment's line end
    empty = CliRunner().invoke(app, ["data", "alfworld", "--check-engine", str(tmp_path), "--split", "unseen"])
    assert empty.exit_code == 1  # nothing checked is not a pass

    # the log knows games by their path in the tree and their content: it resumes on a copy elsewhere...
    import shutil

    copy = tmp_path / "elsewhere"
    shutil.copytree(tree, copy / "json_2.1.1")
    moved = CliRunner().invoke(app, [*command[:3], str(copy), *command[4:]])
    assert moved.exit_code == 0 and "1 games from" in moved.output, moved.output
    # ...and never vouches for a game whose file changed
    game_file = next((copy / "json_2.1.1").rglob("game.tw-pddl"))
    game_file.write_bytes(game_file.read_bytes() + b"\n")
    changed = CliRunner().invoke(app, [*command[:3], str(copy), *command[4:]])
    assert changed.exit_code == 0 and "0 games from" in changed.output, changed.output


def test_memory_benchmark_reports_rss_with_and_without_recycling(official_alfworld):
    from seed_gym.envs.alfworld.memory import run_memory_benchmark

    result = run_memory_benchmark(episodes=4, recycle_after=2, steps=2, env_kwargs={"data": str(official_alfworld)})
    assert result["checkpoints"] == [0, 1, 2, 4] and result["engine"] == FAST_ENGINE_VERSION
    assert result["temp_files_left"] == 0  # workers leave nothing in their temp folder
    never, recycled = result["rows"]
    assert never["recycled"] == 0 and recycled["recycled"] == 1  # replaced before the 3rd episode
    for row in (never, recycled):
        assert row["episodes"] == 4 and row["errors"] == 0
        assert all(mib and mib > 10 for mib in row["rss_mib"].values())
