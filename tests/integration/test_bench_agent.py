"""``seed-gym bench agent`` end to end on the tiny model: tokens/s per batch size, and lock-step
batching against one episode at a time on the same tasks (greedy: the same actions both ways)."""

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_bench_agent_reports_throughput_per_batch_and_the_lockstep_speedup(tiny_model_dir, tmp_path):
    out = tmp_path / "bench.json"
    result = subprocess.run(
        [sys.executable, "-m", "seed_gym.cli", "bench", "agent", "--model", str(tiny_model_dir), "--env", "webshop", "--batch", "1",
         "--batch", "4", "--max-new-tokens", "8", "--episodes", "3", "--max-steps", "2", "--out", str(out)],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(out.read_text())
    assert [(r["backend"], r["batch"]) for r in data["throughput"]] == [("hf", 1), ("hf", 4)]
    assert all(0 < r["new_tokens"] <= r["batch"] * 8 and r["tokens_per_s"] > 0 for r in data["throughput"])
    lock = data["lockstep"]
    assert lock["episodes"] == 3 and lock["same_actions"] is True
    assert lock["lockstep_ticks"] < lock["sequential_ticks"]  # one batched call per tick vs one per episode step
    assert lock["speedup"] == pytest.approx(lock["sequential_seconds"] / lock["lockstep_seconds"])
    assert "lock-step vs one episode at a time" in result.stdout and "tokens/s" in result.stdout
