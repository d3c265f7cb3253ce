"""The design card's top-level folders are importable as one ``seed_gym`` namespace."""

import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
MODULES = ["seed_gym.cli", "seed_gym.envs.alfworld.env", "seed_gym.envs.alfworld.gen",
           "seed_gym.agents.scripted", "seed_gym.training", "seed_gym.leaderboards"]


def test_editable_install_imports_every_top_level_folder():
    import importlib

    for name in MODULES:
        importlib.import_module(name)


def test_importing_seed_gym_does_not_load_an_engine():
    code = "import sys, seed_gym; print(any(m.startswith(('textworld', 'alfworld')) for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
