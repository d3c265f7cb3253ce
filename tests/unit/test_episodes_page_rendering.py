"""The episode page escapes what agents and envs wrote, reads runs still in progress and the
teacher context beside a training rollout (a torn line costs that episode its skill only)."""

from __future__ import annotations

import pytest

from seed_gym.core import SeedGymError
from seed_gym.leaderboards.episodes_view import TEACHER_FILE, load_viewed_runs, render_view, write_view
from seed_gym.records import EpisodeRecord, RunDir, StepRecord

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def record(episode_id: str, won: bool, family: str = "f") -> EpisodeRecord:
    step = StepRecord(t=0, observation=HOSTILE, action=HOSTILE, reward=float(won), invalid_action=not won,
                      admissible_actions=["up", HOSTILE], response=HOSTILE, prompt=HOSTILE,
                      meta={"completion_tokens": 3, "parse_flags": ["missing_think"]})
    return EpisodeRecord(episode_id=episode_id, task={"id": episode_id.split("#")[0], "split": "train",
                                                      "family": family, "instruction": HOSTILE},
                         agent="a", group_index=0, seed=0, steps=[step], final_observation=HOSTILE, won=won,
                         score=float(won), total_reward=float(won), status="completed", wall_seconds=0.1)


@pytest.fixture
def run(tmp_path):
    folder = tmp_path / "run"
    RunDir(folder).open({"env": "toy", "split": "train", "agent": "a", "tasks": 5}, {})
    RunDir(folder).append([record("t1#0", True, "f<1>"), record("t2#0", False)])  # 2 of 5: still running
    (folder / TEACHER_FILE).write_text('{"episode_id": "t1#0", "teacher": "hindsight", "skill": "Go up."}\n{"torn\n')
    return folder


def test_every_text_is_escaped_so_nothing_an_agent_wrote_runs(run):
    html = render_view(load_viewed_runs(run), HOSTILE)
    assert "<script>alert" not in html and "<img src=x" not in html
    assert html.count("<script>") == 1  # the page's own filter script, and nothing else
    assert 'data-family="f&lt;1&gt;"' in html


def test_a_run_in_progress_shows_its_finished_episodes_and_the_skills_it_has(run):
    [viewed] = load_viewed_runs(run)
    assert [r.episode_id for r in viewed.records] == ["t1#0", "t2#0"]
    assert viewed.skills == {"t1#0": {"teacher": "hindsight", "skill": "Go up."}}
    html = write_view(run).read_text()
    assert html.count('<details class="episode"') == 2 and "Go up." in html and "missing_think" in html
    assert 'data-outcome="won"' in html and 'data-outcome="lost"' in html


def test_a_folder_without_runs_is_a_clear_error(tmp_path):
    with pytest.raises(SeedGymError, match="no run directory here"):
        load_viewed_runs(tmp_path)
