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


EVAL_SCRIPT = textwrap.dedent("""
    from seed_gym.evaluate import EvalConfig, evaluate

    summary = evaluate(EvalConfig(env="webshop", split="test", agent="random", out="run", n=2, max_steps=2,
                                  backend="process", workers=2))
    print("episodes", summary["episodes"])
""")


def test_an_unguarded_script_evaluates_on_worker_processes(tmp_path: Path) -> None:
    """Env workers start without the user's script (it would otherwise run again in each of them and
    the worker die bootstrapping: 'env worker exited during start-up'), unless the env is defined there."""
    (tmp_path / "eval_api.py").write_text(EVAL_SCRIPT)
    env = {**os.environ, "SEED_GYM_HOME": str(tmp_path / "home")}
    try:
        result = subprocess.run([sys.executable, str(tmp_path / "eval_api.py")], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        pytest.fail("the unguarded script hung (its worker processes re-ran it)")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "episodes 2"


def test_an_env_defined_in_the_users_script_still_reaches_its_workers() -> None:
    from seed_gym.pools import spawn_context_for
    from seed_gym.registry import EnvSpec
    from seed_gym.spawning import main_free_spawn_context

    class ScriptEnv:  # stands for a class defined in a user's __main__
        pass

    ScriptEnv.__module__ = "__main__"
    assert type(spawn_context_for(EnvSpec("mine", ScriptEnv))) is not type(main_free_spawn_context())
    assert type(spawn_context_for(EnvSpec("mine", "__main__:ScriptEnv"))) is not type(main_free_spawn_context())
    assert type(spawn_context_for(EnvSpec("webshop", "seed_gym.envs.webshop:WebShopEnv"))) \
        is type(main_free_spawn_context())
