"""Workers started from ``main_free_spawn_context`` never re-run the parent's script."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# A script with no ``__main__`` guard: every execution of its top level appends a line.
SCRIPT = textwrap.dedent("""
    import os, sys
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context
    from seed_gym.spawning import main_free_spawn_context

    with open(sys.argv[1] if len(sys.argv) > 1 else os.environ["RUNS_FILE"], "a") as log:
        log.write("ran\\n")
    context = main_free_spawn_context() if os.environ["CONTEXT"] == "main-free" else get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        assert list(pool.map(abs, [-1, -2, -3])) == [1, 2, 3]
    print("done")
""")


def _run(tmp_path: Path, context: str, as_module: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "unguarded.py").write_text(SCRIPT)
    runs = tmp_path / "runs.txt"
    target = ["-m", "unguarded"] if as_module else [str(tmp_path / "unguarded.py")]
    env = {"PATH": "/usr/bin:/bin", "CONTEXT": context, "RUNS_FILE": str(runs), "PYTHONPATH": str(tmp_path)}
    return subprocess.run([sys.executable, *target], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("as_module", [False, True], ids=["script", "python -m"])
def test_children_do_not_rerun_an_unguarded_script(tmp_path: Path, as_module: bool) -> None:
    result = _run(tmp_path, "main-free", as_module)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "done"
    assert (tmp_path / "runs.txt").read_text().splitlines() == ["ran"]  # the parent only


def test_the_standard_spawn_context_does_rerun_it(tmp_path: Path) -> None:
    """Why the module exists: a plain spawn child re-imports the script and fails bootstrapping."""
    result = _run(tmp_path, "spawn", as_module=False)
    assert len((tmp_path / "runs.txt").read_text().splitlines()) > 1
    assert result.returncode != 0 or "bootstrapping" in result.stderr
