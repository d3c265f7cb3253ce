"""Training checkpoints are written atomically and a resume takes the last complete one (#20).

The kill tests (a real ``kill -9`` of a training process inside a checkpoint write) are in
``tests/integration/test_fault_suite.py``; these pin the rules they rely on."""

from __future__ import annotations

import json

import pytest

from seed_gym.training.runs import TrainRun


def write(run: TrainRun, update: int) -> None:
    """A checkpoint as the trainer writes one: files, the state file last, then the commit."""
    with run.staged_checkpoint(update) as folder:
        (folder / "model.safetensors").write_bytes(b"w" * 64)
        (folder / "trainer_state.json").write_text(json.dumps({"update": update}))
    run.commit_checkpoint(update, keep=2)


def test_a_checkpoint_is_invisible_until_it_is_whole(tmp_path):
    run = TrainRun(tmp_path)
    write(run, 1)
    with run.staged_checkpoint(2) as folder:
        (folder / "model.safetensors").write_bytes(b"half")
        assert not run.checkpoint_dir(2).exists()  # an agent pointed at update-2 finds nothing half-made
        assert run.latest() == run.checkpoint_dir(1)
        (folder / "trainer_state.json").write_text(json.dumps({"update": 2}))
    assert (run.checkpoint_dir(2) / "model.safetensors").read_bytes() == b"half"
    assert run.latest() == run.checkpoint_dir(1)  # not committed yet: LATEST is the commit point
    run.commit_checkpoint(2, keep=2)
    assert run.latest() == run.checkpoint_dir(2)


def test_a_write_that_fails_leaves_nothing_in_place(tmp_path):
    run = TrainRun(tmp_path)
    write(run, 1)
    with pytest.raises(OSError):
        with run.staged_checkpoint(2) as folder:
            (folder / "model.safetensors").write_bytes(b"half")
            raise OSError("disk full")
    assert not run.checkpoint_dir(2).exists() and run.latest() == run.checkpoint_dir(1)
    write(run, 2)  # the next try starts clean
    assert run.latest() == run.checkpoint_dir(2)


def test_resume_takes_the_last_complete_checkpoint_when_latest_names_a_broken_one(tmp_path):
    run = TrainRun(tmp_path)
    write(run, 1)
    write(run, 2)
    (run.checkpoint_dir(2) / "trainer_state.json").write_text('{"upd')  # damaged by hand or disk
    assert run.latest() == run.checkpoint_dir(1)  # not None: a resume must not start from scratch
    (run.checkpoints / "LATEST").write_text("update-000009")  # names a folder that is gone
    assert run.latest() == run.checkpoint_dir(1)
    (run.checkpoints / "LATEST").unlink()
    assert run.latest() == run.checkpoint_dir(1)


def test_a_leftover_of_an_uncommitted_try_is_replaced_whole(tmp_path):
    run = TrainRun(tmp_path)
    write(run, 1)
    leftover = run.checkpoint_dir(2)
    leftover.mkdir()
    (leftover / "stale.bin").write_bytes(b"from a run killed before its commit")
    write(run, 2)
    assert sorted(p.name for p in leftover.iterdir()) == ["model.safetensors", "trainer_state.json"]


def test_pruning_keeps_the_newest_and_leaves_no_partial_folder(tmp_path):
    run = TrainRun(tmp_path)
    for update in (1, 2, 3):
        write(run, update)
    assert sorted(p.name for p in run.checkpoints.iterdir()) == ["LATEST", "update-000002", "update-000003"]
