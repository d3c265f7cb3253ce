"""Per-phase cost of an update: seconds and counts per phase, the metric keys every update row
carries, the console summary, and the token meter on a generation backend."""

from __future__ import annotations

import time

import pytest

from seed_gym.agents.backends.base import Generation, SamplingParams
from seed_gym.training.costs import PHASES, PhaseCosts, TokenMeter, console_summary, forward_tokens


class CountingBackend:
    name = "counting"

    def generate(self, prompts, params):
        return [Generation(text="x" * len(p), prompt_tokens=1, completion_tokens=len(p)) for p in prompts]

    def describe(self):
        return {"backend": self.name}

    def close(self):
        raise AssertionError("the meter never closes the backend it wraps: the rollout engine owns it")


def test_every_phase_has_a_seconds_key_and_a_count_key():
    row = PhaseCosts().row()
    assert set(PHASES) == {"env", "generate", "analyzer", "old_logprobs", "ref_logprobs", "teacher_logprobs",
                           "update", "sync", "eval"}
    for phase in PHASES:
        assert row[f"time/{phase}_s"] == 0.0
    assert {"env/steps", "sync/bytes", "tokens/generate", "tokens/analyzer", "tokens/old_logprobs",
            "tokens/ref_logprobs", "tokens/teacher_logprobs", "tokens/update", "tokens/eval"} <= set(row)
    assert len(row) == 2 * len(PHASES)


def test_a_phase_times_its_block_and_counts_what_the_meter_generated_meanwhile():
    costs, meter = PhaseCosts(), TokenMeter(CountingBackend())
    meter.generate(["ab"], SamplingParams())  # before the phase: not counted
    with costs.phase("analyzer", meter):
        time.sleep(0.02)
        meter.generate(["abc", "de"], SamplingParams())
    with costs.phase("analyzer", meter):  # phases add up
        meter.generate(["f"], SamplingParams())
    costs.add("update", 1.5, 40)
    row = costs.row()
    assert row["time/analyzer_s"] >= 0.02 and row["tokens/analyzer"] == 6
    assert row["time/update_s"] == 1.5 and row["tokens/update"] == 40 and meter.tokens == 8
    with pytest.raises(KeyError, match="phases"):
        with costs.phase("rollout"):
            pass


def test_the_meter_is_the_backend_it_wraps_except_that_it_never_closes_it():
    meter = TokenMeter(CountingBackend())
    assert meter.name == "counting" and meter.describe() == {"backend": "counting"}
    meter.close()


def test_the_console_summary_names_only_the_phases_that_took_time():
    costs = PhaseCosts()
    costs.add("env", 0.5, 12)
    costs.add("generate", 2.0, 800)
    costs.add("sync", 0.25, 4096)
    line = console_summary(costs.row())
    assert line == "env 0.50s 12 steps | generate 2.00s 800 tok | sync 0.25s 4096 B"


def test_forward_tokens_count_prompt_and_response():
    assert forward_tokens([[1, 2, 3], [4]], [[5], [6, 7]]) == 7


def test_the_phase_table_averages_update_rows_and_ignores_evaluation_rows():
    from seed_gym.training.costs import phase_table

    first, second = PhaseCosts(), PhaseCosts()
    first.add("generate", 3.0, 100)
    first.add("update", 1.0, 50)
    second.add("generate", 1.0, 300)
    rows = [{"update": 1, **first.row()}, {"update": 1, "split": "test", "success_rate": 0.0},
            {"update": 2, **second.row()}]
    table = {phase: (seconds, share, count) for phase, seconds, share, count in phase_table(rows)}
    assert table["generate"] == (2.0, pytest.approx(0.8), 200.0)
    assert table["update"] == (0.5, pytest.approx(0.2), 25.0)
    assert phase_table([{"update": 1, "split": "test"}]) == []


def test_shares_are_of_the_updates_wall_time_and_other_is_what_no_phase_covers():
    from seed_gym.training.costs import OTHER, phase_table

    costs = PhaseCosts()
    costs.add("generate", 3.0, 100)
    costs.add("eval", 1.0, 10)
    # the row's seconds run from the rollouts through the sync; its evaluation comes after
    table = {phase: (seconds, share) for phase, seconds, share, _ in phase_table([{"update": 1, "seconds": 4.0,
                                                                                 **costs.row()}])}
    assert table["generate"] == (3.0, pytest.approx(0.6)) and table["eval"] == (1.0, pytest.approx(0.2))
    assert table[OTHER] == (1.0, pytest.approx(0.2))
