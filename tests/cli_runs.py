"""Running the real ``seed-gym`` command line from tests, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys


def seed_gym(*args: str, timeout: float = 900) -> str:
    """Run ``seed-gym ARGS`` in a subprocess; its stdout, or a test failure showing its output."""
    done = subprocess.run([sys.executable, "-m", "seed_gym.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, f"seed-gym {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout
