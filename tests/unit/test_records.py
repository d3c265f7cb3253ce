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


@pytest.mark.parametrize("torn", [
    "cut inside a character",  # the defect: UnicodeDecodeError on every rerun
    "valid JSON, not an object",  # the defect: ValueError on every rerun
    "an object that is not a record",
    "cut mid-line",
])
def test_a_torn_line_of_any_kind_is_skipped_redone_and_set_aside(tmp_path, torn):
    run = RunDir(tmp_path)
    run.open({"env": "e"}, {})
    run.append([make("a")])
    whole = make("b").to_json().encode()
    fragment = {"cut inside a character": whole[:whole.index("ü".encode()) + 1],
                "valid JSON, not an object": b'["b"]', "an object that is not a record": b'{"episode_id": "b"}',
                "cut mid-line": whole[:40]}[torn]
    with run.episodes_path.open("ab") as handle:
        handle.write(fragment)  # killed mid-write
    resumed = RunDir(tmp_path)  # the rerun
    assert list(resumed.finished()) == ["a"]  # b is redone
    resumed.append([make("b")])
    assert list(resumed.finished()) == ["a", "b"]
    lines = run.episodes_path.read_text(encoding="utf-8").splitlines()  # no fragment kept:
    assert [json.loads(line)["episode_id"] for line in lines] == ["a", "b"]
    assert (tmp_path / "episodes.jsonl.torn").read_bytes() == fragment + b"\n"  # nothing is lost


def test_training_metrics_survive_a_torn_line(tmp_path):
    from seed_gym.training.runs import TrainRun

    run = TrainRun(tmp_path)
    run.log({"update": 1, "loss": 0.5})
    with run.metrics_path.open("ab") as handle:
        handle.write('{"update": 2, "note": "ü'.encode()[:-1])
    resumed = TrainRun(tmp_path)
    assert resumed.metrics() == [{"update": 1, "loss": 0.5}]
    resumed.log({"update": 2, "loss": 0.4})
    assert [r["update"] for r in resumed.metrics()] == [1, 2]
