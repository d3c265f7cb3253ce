"""A stage's wall seconds in ``stage.json`` count every invocation that worked on it: a stage killed
and resumed reports the time of both, not only of the run that finished it."""

from __future__ import annotations

import json

import pytest

from seed_gym.training import reproduce
from seed_gym.training.reproduce import StageClock


@pytest.fixture
def now(monkeypatch):
    """A settable wall clock for the module under test."""
    clock = {"t": 0.0}
    monkeypatch.setattr(reproduce.time, "time", lambda: clock["t"])
    return clock


def test_a_resumed_stage_adds_the_killed_invocation_up_to_its_last_row(tmp_path, now):
    rows = []
    now["t"] = 100.0
    first = StageClock(tmp_path).ticking(rows.append)
    now["t"] = 130.0
    first({"update": 1})
    now["t"] = 145.0  # killed here: the 15 s after its last row are not known to anyone
    now["t"] = 500.0
    second = StageClock(tmp_path)
    second.ticking(None)({"update": 2})
    now["t"] = 520.0
    assert second.finish() == {"seconds": 50.0, "invocations": 2}
    assert rows == [{"update": 1}]  # the caller's callback still sees every row
    assert json.loads((tmp_path / StageClock.FILE).read_text()) == {"invocations": [30.0, 20.0]}


def test_a_stage_run_once_reports_its_own_seconds(tmp_path, now):
    now["t"] = 10.0
    clock = StageClock(tmp_path)
    now["t"] = 17.5
    assert clock.finish() == {"seconds": 7.5, "invocations": 1}


def test_an_unreadable_time_file_starts_the_count_afresh(tmp_path, now):
    (tmp_path / StageClock.FILE).write_text("{torn")
    clock = StageClock(tmp_path)
    now["t"] = 3.0
    assert clock.finish() == {"seconds": 3.0, "invocations": 1}
