"""A real ALFWorld generator killed mid-split leaves a staging folder; ``seed-gym doctor`` flags it,
and the next generation of that split removes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.integration


def test_doctor_flags_the_split_a_killed_generator_left_half_done(tmp_path):
    env = {**os.environ, "SEED_GYM_HOME": str(tmp_path / "home"), "COLUMNS": "400"}
    cache = tmp_path / "home" / "alfworld"  # sizes other than the default get a folder of their own
    generator = subprocess.Popen([sys.executable, "-m", "seed_gym.cli", "data", "alfworld", "--split", "unseen",
                                  "--size", "30", "--workers", "1"], env=env, start_new_session=True,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not list(cache.glob("*/json_2.1.1/.valid_unseen.tmp-*/.candidates/*")) and time.monotonic() < deadline:
            assert generator.poll() is None, "the generator ended before it was killed"
            time.sleep(0.2)
    finally:
        os.killpg(generator.pid, signal.SIGKILL)  # the generator and its worker processes
        generator.wait()
    [staging] = cache.glob("*/json_2.1.1/.valid_unseen.tmp-*")
    root = staging.parents[1]

    doctor = subprocess.run([sys.executable, "-m", "seed_gym.cli", "doctor"], env=env, capture_output=True,
                            text=True, timeout=300)
    [line] = [line for line in doctor.stdout.splitlines() if "half-generated valid_unseen" in line]
    assert "warn" in line and "killed" in line and str(staging) in line

    from seed_gym.envs.alfworld.gen.build import generate_split, unfinished_generations

    generate_split(root, "unseen", seed=0, size=2, workers=1)
    assert not staging.exists() and unfinished_generations(root) == []
