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


def test_a_record_holding_a_lone_surrogate_is_written_and_read_back_as_sent(tmp_path):
    """Found by the env fuzz suite: an action with a lone surrogate (what ``"\\ud800"`` in an
    agent's JSON decodes to) made the record unwritable, and the run died with UnicodeEncodeError."""
    run = RunDir(tmp_path)
    run.open({"env": "e"}, {})
    record = make("a")
    record.steps[0].action = "click[\ud800 x]"
    record.final_observation = "é \udcff"
    run.append([record, make("b")])
    assert run.finished()["a"] == record and list(run.finished()) == ["a", "b"]
    run.episodes_path.read_bytes().decode("utf-8")  # still UTF-8 throughout


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


def test_run_dirs_and_training_runs_share_one_identity_rule():
    from seed_gym.records import identity_diff

    recorded = {"seed": 0, "agent_config": {"sampling": {"temperature": 1.0}}, "gone": 1}
    today = {"seed": 0, "agent_config": {"sampling": {"temperature": 1.0, "max_prompt_tokens": None},
                                         "choose": "generate"}}
    defaults = {"agent_config.choose": "generate", "agent_config.sampling.max_prompt_tokens": None}
    assert identity_diff(recorded, today, defaults) == []  # new keys at their defaults, a dropped key ignored
    assert identity_diff(recorded, {**today, "seed": 1}, defaults) == ["seed"]
    changed = {"agent_config": {**today["agent_config"], "choose": "rank"}, "seed": 0}
    assert identity_diff(recorded, changed, defaults) == ["agent_config"]
    assert identity_diff({"n": 1}, {"n": 1.0}) == ["n"]  # compared as the JSON the folder holds


def test_an_eval_run_made_before_identity_keys_existed_resumes(tmp_path):
    """Runs written when an empty agent_config, the default choose and an unset max_prompt_tokens
    were left out of the identity resume under today's code (one rule, no special cases)."""
    run = RunDir(tmp_path / "run")
    today = {"seed": 0, "agent_config": {"choose": "generate", "rank_by": "sum",
                                         "sampling": {"temperature": 1.0, "max_prompt_tokens": None}}}
    defaults = {"agent_config": {}, "agent_config.choose": "generate", "agent_config.rank_by": "sum",
                "agent_config.sampling.max_prompt_tokens": None}
    run.open({"seed": 0, "agent_config": {"sampling": {"temperature": 1.0}}}, {})
    RunDir(run.path).open(today, {}, defaults)  # does not raise
    scripted = RunDir(tmp_path / "scripted")
    scripted.open({"seed": 0}, {})
    RunDir(scripted.path).open({"seed": 0, "agent_config": {}}, {}, {"agent_config": {}})
    with pytest.raises(RunMismatchError, match="agent_config"):
        RunDir(scripted.path).open({"seed": 0, "agent_config": {"history": 3}}, {}, {"agent_config": {}})


def test_provenance_names_the_cpu_whose_kernels_trained_a_checkpoint():
    from pathlib import Path

    from seed_gym.records import KERNEL_FEATURES, provenance

    cpu = provenance()["cpu"]
    assert cpu["cores"] >= 1 and set(cpu["features"]) <= set(KERNEL_FEATURES)
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():  # Linux: the same model name and features that the kernel reports
        text = cpuinfo.read_text()
        model = next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name"))
        flags = next(line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags"))
        assert cpu["model"] == model
        assert cpu["features"] == [f for f in KERNEL_FEATURES if f in flags]
