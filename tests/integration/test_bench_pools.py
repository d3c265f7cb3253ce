"""``seed-gym bench pools`` at its smallest size (#21 part 4): every section runs and reports
figures with the right shape. Speed is not asserted here: the command prints ratios, measured
side by side in one run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_bench_pools_measures_every_pool_the_engine_waves_and_memory(tiny_model_dir, tmp_path):
    out = tmp_path / "pools.json"
    result = subprocess.run(
        [sys.executable, "-m", "seed_gym.cli", "bench", "pools", "--env", "searchqa", "--split", "test",
         "--workers", "1", "--envs-per-worker", "2", "--episodes", "4", "--max-steps", "2",
         "--overhead-episodes", "4", "--repeats", "1", "--model", str(tiny_model_dir), "--model-episodes", "4",
         "--memory-episodes", "4", "--out", str(out)],
        capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "env-steps/s" in result.stdout and "overhead" in result.stdout and "waves" in result.stdout
    whole = json.loads(out.read_text())
    floor = whole["transport_floor"]  # what a call through each transport costs with no env work
    assert floor["process_pipe_ms"] > 0 and floor["ray_actor_ms"] > 0 and "Ray actor" in result.stdout
    report = whole["envs"]["searchqa"]
    assert report["agent"] == "expert"  # Search-QA lists no admissible actions: its expert is the zero-cost agent

    rows = report["steps_per_s"]
    assert [(r["backend"], r["workers"]) for r in rows] == [("inline", 1), ("process", 1), ("ray", 1)]
    assert all(r["episodes"] == 4 and r["steps"] > 0 and r["errors"] == 0 and r["steps_per_s"] > 0 for r in rows)
    assert rows[0]["vs_inline"] == 1.0 and all(r["vs_inline"] > 0 for r in rows)

    overhead = report["engine_overhead"]
    assert overhead["same_steps"] and overhead["bare_seconds"] > 0 and overhead["engine_seconds"] > 0
    assert overhead["overhead_median_of_pairs"] > -1

    waves = report["lock_step_vs_waves"]
    assert waves["same_records"]  # sampled at temperature 1: the episodes' own seeds, whatever the batch
    assert waves["lock_step"]["steps"] == waves["overlapped"]["steps"] > 0 and waves["speedup"] > 0

    memory = report["memory"]
    assert [row["pool"] for row in memory] == ["process", "ray", "ray-unshared"]
    for row in memory:
        assert row["episodes"] == 4 and row["errors"] == 0
        assert set(row["memory"]) == {"0", "1", "2", "4"}
        assert all(m["rss_mib"] > 10 and 0 < m["pss_mib"] <= m["rss_mib"] for m in row["memory"].values())
