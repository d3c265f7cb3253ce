"""Run directories: append, torn lines, identity checks."""

import json

import pytest

from seed_gym.records import EpisodeRecord, RunDir, RunMismatchError, StepRecord


def make(episode_id):
    return EpisodeRecord(episode_id=episode_id, task={"id": episode_id, "split": "s", "family": "f", "instruction": ""},
                         agent="a", group_index=0, seed=0,
                         steps=[StepRecord(t=0, observation="o ü", action="x", reward=1.0, invalid_action=False)],
                         final_observation="", won=True, score=1.0, total_reward=1.0, status="completed",
                         wall_seconds=0.1)


def test_records_round_trip(tmp_path):
    run = RunDir(tmp_path)
    run.open({"env": "e"}, {})
    run.append([make("a"), make("b")])
    assert list(run.finished()) == ["a", "b"]
    assert run.finished()["a"] == make("a")


def test_a_torn_last_line_is_skipped_and_appends_stay_valid(tmp_path):
    run = RunDir(tmp_path)
    run.open({"env": "e"}, {})
    run.append([make("a")])
    with run.episodes_path.open("a") as handle:
        handle.write(make("b").to_json()[:40])  # killed mid-write
    assert list(run.finished()) == ["a"]
    run.append([make("c")])
    assert list(run.finished()) == ["a", "c"]
    for line in run.episodes_path.read_text().splitlines()[-1:]:
        json.loads(line)


def test_reopening_with_another_identity_is_refused(tmp_path):
    RunDir(tmp_path).open({"env": "e", "seed": 0}, {})
    RunDir(tmp_path).open({"env": "e", "seed": 0}, {})  # same run: fine
    with pytest.raises(RunMismatchError, match="seed"):
        RunDir(tmp_path).open({"env": "e", "seed": 1}, {})
