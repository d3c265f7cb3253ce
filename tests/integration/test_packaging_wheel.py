"""A built wheel maps the top-level folders into the ``seed_gym`` namespace."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.integration
def test_built_wheel_holds_and_imports_the_namespace(tmp_path):
    pytest.importorskip("build")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True)
    wheel = next(tmp_path.glob("seed_gym-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "seed_gym/envs/alfworld/env.py" in names and "seed_gym/agents/scripted.py" in names
    assert not any(n.startswith(("envs/", "agents/", "tests/")) for n in names)
    unpacked = tmp_path / "unpacked"
    zipfile.ZipFile(wheel).extractall(unpacked)
    code = ("import seed_gym, seed_gym.envs.alfworld.env, seed_gym.agents.scripted; "
            "print(seed_gym.__file__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path, env={"PYTHONPATH": str(unpacked), "PATH": "/usr/bin:/bin"}).stdout
    assert out.strip().startswith(str(unpacked))
