"""Scoring on hand-built records: every number here is computed by hand."""

import pytest

from seed_gym.records import EpisodeRecord, StepRecord
from seed_gym.scoring import bootstrap_ci, success_interval, summarize, wilson_interval


def record(task, family, won, steps, invalid=0, score=None, status="completed"):
    step_list = [StepRecord(t=i, observation="", action="a", reward=0.0, invalid_action=i < invalid)
                 for i in range(steps)]
    return EpisodeRecord(episode_id=f"{task}#0", task={"id": task, "split": "s", "family": family, "instruction": ""},
                         agent="x", group_index=0, seed=0, steps=step_list, final_observation="", won=won,
                         score=float(won) if score is None else score, total_reward=0.0, status=status,
                         wall_seconds=0.0)


RECORDS = [record("a", "pick", True, 4), record("b", "pick", False, 10, invalid=5),
           record("c", "look", True, 6, invalid=1), record("d", "look", False, 10, score=0.5)]


def test_overall_metrics():
    summary = summarize(RECORDS)
    assert summary["episodes"] == 4 and summary["tasks"] == 4
    assert summary["success_rate"] == 0.5
    assert summary["mean_score"] == pytest.approx((1 + 0 + 1 + 0.5) / 4)
    assert summary["mean_steps"] == 7.5
    assert summary["invalid_action_rate"] == pytest.approx(6 / 30)  # pooled over steps


def test_per_family_and_macro():
    summary = summarize(RECORDS + [record("e", "look", True, 2)])
    assert summary["per_family"]["pick"]["success_rate"] == 0.5
    assert summary["per_family"]["look"]["success_rate"] == pytest.approx(2 / 3)
    assert summary["macro_success_rate"] == pytest.approx((0.5 + 2 / 3) / 2)


def test_ci_brackets_the_estimate_and_is_deterministic():
    records = [record(f"t{i}", "f", i % 3 == 0, 5) for i in range(60)]
    summary = summarize(records)
    low, high = summary["ci95"]["success_rate"]
    assert low < summary["success_rate"] < high
    assert bootstrap_ci(records) == bootstrap_ci(records)


def test_ci_is_degenerate_when_every_episode_agrees():
    assert bootstrap_ci([record(f"t{i}", "f", True, 3) for i in range(10)])["success_rate"] == [1.0, 1.0]


def test_bootstrap_resamples_tasks_not_episodes():
    # Two tasks, each with 10 identical episodes: resampling tasks can only give 0, 0.5 or 1.
    records = [record("win", "f", True, 1) for _ in range(10)] + [record("lose", "f", False, 1) for _ in range(10)]
    low, high = bootstrap_ci(records)["success_rate"]
    assert (low, high) == (0.0, 1.0)


def test_empty_and_error_runs():
    assert summarize([])["success_rate"] is None
    summary = summarize([record("a", "f", False, 0, status="error"), record("b", "f", True, 1)])
    assert summary["errors"] == 1 and summary["success_rate"] == 0.5


def test_ci_does_not_depend_on_the_order_episodes_finished_in():
    records = [record(f"t{i}", "f", i % 3 == 0, 1 + i % 4) for i in range(30)]
    assert bootstrap_ci(records) == bootstrap_ci(records[::-1])


def test_the_success_interval_does_not_collapse_at_0_or_100_percent():
    all_won = summarize([record(f"t{i}", "f", True, 3) for i in range(10)])
    low, high = all_won["ci95"]["success_rate"]
    assert high == 1.0 and low == pytest.approx(0.7225, abs=1e-4)  # Wilson, 10 of 10
    low, high = summarize([record(f"t{i}", "f", False, 3) for i in range(10)])["ci95"]["success_rate"]
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    assert all_won["ci95"]["mean_steps"] == [3.0, 3.0]  # means keep the task bootstrap


def test_the_success_interval_counts_correlated_episodes_of_one_task_once():
    # Two tasks whose 8 episodes all agree: as informative as 2 episodes, not 16.
    clustered = [record("win", "f", True, 1) for _ in range(8)] + [record("lose", "f", False, 1) for _ in range(8)]
    assert success_interval(clustered) == pytest.approx(wilson_interval(1, 2))
    # Episodes that vary within tasks as much as between them: every episode counts.
    mixed = [record(f"t{i // 4}", "f", i % 2 == 0, 1) for i in range(16)]
    assert success_interval(mixed) == pytest.approx(wilson_interval(8, 16))


def test_the_invalid_rate_interval_does_not_collapse_at_100_percent():
    """Invalid % is a proportion of steps: Wilson over the effective steps, not a degenerate bootstrap."""
    every_step_invalid = summarize([record(f"t{i}", "f", False, 3, invalid=3) for i in range(10)])
    assert every_step_invalid["invalid_action_rate"] == 1.0
    low, high = every_step_invalid["ci95"]["invalid_action_rate"]
    assert high == 1.0 and low == pytest.approx(wilson_interval(30, 30)[0]) and low < 0.9
    low, high = summarize([record(f"t{i}", "f", True, 3) for i in range(10)])["ci95"]["invalid_action_rate"]
    assert low == 0.0 and high == pytest.approx(wilson_interval(0, 30)[1]) and high > 0.1


def test_the_invalid_rate_interval_counts_the_correlated_steps_of_one_task_once():
    # Two tasks, one invalid on all 8 of its steps and one on none: as informative as 2 steps.
    clustered = [record("bad", "f", False, 8, invalid=8), record("good", "f", True, 8)]
    assert summarize(clustered)["ci95"]["invalid_action_rate"] == pytest.approx(wilson_interval(1, 2))
    # Steps that vary within tasks as much as between them: every step counts.
    mixed = [record(f"t{i}", "f", False, 4, invalid=2) for i in range(4)]
    assert summarize(mixed)["ci95"]["invalid_action_rate"] == pytest.approx(wilson_interval(8, 16))
