"""``seed-gym eval`` end to end on generated ALFWorld games: comparison tables, summaries, resume."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.integration

SIZES = '{"unseen": 6}'


def seed_gym_cli(*args, env=None, **kwargs):
    return subprocess.run([sys.executable, "-m", "seed_gym.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {}), "COLUMNS": "200"}, **kwargs)


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval")
    result = seed_gym_cli("eval", "--agent", "expert", "--agent", "random", "--env", "alfworld", "--split", "unseen",
                          "--env-arg", f"sizes={SIZES}", "--workers", "2", "--out", str(out))
    assert result.returncode == 0, result.stderr[-3000:]
    return out, result.stdout


def test_expert_wins_generated_games_and_random_is_reported_beside_it(compared):
    out, stdout = compared
    expert = json.loads((out / "expert" / "summary.json").read_text())
    random_ = json.loads((out / "random" / "summary.json").read_text())
    assert expert["success_rate"] == 1.0 and expert["episodes"] == 6 and expert["complete"]
    assert random_["episodes"] == 6 and random_["success_rate"] < expert["success_rate"]
    assert random_["invalid_action_rate"] == 0.0  # it picks admissible actions
    assert expert["split_fingerprint"] == random_["split_fingerprint"]  # same tasks
    header = next(line for line in stdout.splitlines() if "metric" in line)
    assert "expert" in header and "random" in header
    assert "success % (95% CI)" in stdout and "invalid action %" in stdout


def test_summary_holds_the_documented_keys(compared):
    summary = json.loads((compared[0] / "expert" / "summary.json").read_text())
    for key in ("env", "split", "agent", "episodes", "success_rate", "mean_score", "mean_steps",
                "invalid_action_rate", "per_family", "ci95", "split_fingerprint", "data_fingerprint",
                "env_version"):
        assert key in summary, key
    manifest = json.loads((compared[0] / "expert" / "manifest.json").read_text())
    assert manifest["identity"]["split_fingerprint"] == summary["split_fingerprint"]
    assert manifest["provenance"]["packages"]["alfworld"] == "0.4.2"


def test_rerunning_the_same_command_redoes_nothing(compared):
    out, _ = compared
    before = (out / "expert" / "episodes.jsonl").read_text()
    result = seed_gym_cli("eval", "--agent", "expert", "--env", "alfworld", "--split", "unseen", "--env-arg", f"sizes={SIZES}",
                          "--out", str(out))
    assert result.returncode == 0, result.stderr[-2000:]
    assert (out / "expert" / "episodes.jsonl").read_text() == before
    assert json.loads((out / "expert" / "summary.json").read_text())["resumed_episodes"] == 6


def test_a_different_run_in_the_same_folder_is_refused(compared):
    result = seed_gym_cli("eval", "--agent", "expert", "--env", "alfworld", "--split", "unseen", "--env-arg", f"sizes={SIZES}",
                          "--max-steps", "7", "--out", str(compared[0]))
    assert result.returncode == 2 and "max_steps" in result.stderr


def test_a_killed_eval_resumes_with_every_episode_exactly_once(tmp_path):
    args = ["eval", "--agent", "random", "--env", "alfworld", "--split", "unseen", "--env-arg", f"sizes={SIZES}", "--group", "2",
            "--workers", "1", "--live-episodes", "1", "--out", str(tmp_path)]
    episodes = tmp_path / "random" / "episodes.jsonl"
    process = subprocess.Popen([sys.executable, "-m", "seed_gym.cli", *args], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and process.poll() is None:
        if episodes.exists() and len(episodes.read_text().splitlines()) >= 3:
            break
        time.sleep(0.2)
    assert process.poll() is None, "the run ended before it could be killed"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    killed_with = len(episodes.read_text().splitlines())
    assert killed_with < 12
    result = seed_gym_cli(*args)
    assert result.returncode == 0, result.stderr[-2000:]
    ids = [json.loads(line)["episode_id"] for line in episodes.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 12
    summary = json.loads((tmp_path / "random" / "summary.json").read_text())
    assert summary["complete"] and summary["resumed_episodes"] == killed_with


def test_group_members_start_identically(tmp_path):
    result = seed_gym_cli("eval", "--agent", "random", "--env", "alfworld", "--split", "unseen", "--env-arg", f"sizes={SIZES}",
                          "-n", "2", "--group", "3", "--max-steps", "5", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr[-2000:]
    records = [json.loads(line) for line in (tmp_path / "random" / "episodes.jsonl").read_text().splitlines()]
    by_task = {}
    for record in records:
        by_task.setdefault(record["task"]["id"], []).append(record)
    assert len(by_task) == 2 and all(len(group) == 3 for group in by_task.values())
    for group in by_task.values():
        assert len({r["steps"][0]["observation"] for r in group}) == 1
        assert len({tuple(s["action"] for s in r["steps"]) for r in group}) > 1  # sampled differently
