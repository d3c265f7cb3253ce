"""The README's Python API works from a plain script with no ``__main__`` guard.

Generating ALFWorld games starts worker processes; before ``seed_gym.spawning`` they re-ran the
unguarded script and waited forever on the generator's lock (0% CPU, no message).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SCRIPT = textwrap.dedent("""
    import seed_gym

    env = seed_gym.make("alfworld", split="unseen", sizes={"train": 0, "seen": 0, "unseen": 2}, gen_workers=2)
    split = env.task_set().split("unseen")
    obs, info = env.reset(seed=0, options={"task_id": split.task_ids[0]})
    obs, reward, terminated, truncated, info = env.step(info["admissible_actions"][0])
    import os
    print("played", len(split.task_ids), *sorted(os.listdir(env.source.root)))
""")


# "stdin" is the REPL's and a notebook's case: a __main__ with no file that a child could re-import.
@pytest.mark.parametrize("how", ["script", "module", "stdin"],
                         ids=["python script.py", "python -m script", "python < script (REPL, notebook)"])
def test_an_unguarded_script_generates_and_plays(tmp_path: Path, how: str) -> None:
    (tmp_path / "readme_api.py").write_text(SCRIPT)
    target = {"script": [str(tmp_path / "readme_api.py")], "module": ["-m", "readme_api"], "stdin": ["-"]}[how]
    env = {**os.environ, "SEED_GYM_HOME": str(tmp_path / "home"), "PYTHONPATH": str(tmp_path)}
    try:
        result = subprocess.run([sys.executable, *target], cwd=tmp_path, env=env, capture_output=True,
                                text=True, timeout=300, input=SCRIPT if how == "stdin" else None)
    except subprocess.TimeoutExpired:
        pytest.fail("the unguarded script hung (its worker processes re-ran it)")
    assert result.returncode == 0, result.stderr[-2000:]
    # resetting a task checks its id against its own split only: no other split was generated
    assert result.stdout.strip() == "played 2 valid_unseen"
