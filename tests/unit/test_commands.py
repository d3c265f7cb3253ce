"""An open CLI: command modules come from the ``seed_gym.commands`` entry points, a broken one is a
warning, command modules never import ``seed_gym.cli``, and doctor collects the env profiles' checks."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import EntryPoint

import pytest
from typer.testing import CliRunner

from seed_gym import cli
from seed_gym.commands import ENTRY_POINT_GROUP

BUILT_IN = {"agents", "alfworld", "leaderboards", "searchqa", "training", "webshop"}


def _help(app, *args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_entry_point_loads_and_registers():
    points = cli.command_entry_points()
    assert BUILT_IN <= {ep.name for ep in points}
    assert [ep.name for ep in points] == sorted(ep.name for ep in points)
    for ep in points:
        assert callable(ep.load().register), ep.name
    root = _help(cli.app)
    for command in ("list", "eval", "play", "doctor", "compare", "train", "data", "bench", "serve", "model",
                    "leaderboard"):
        assert command in root
    assert {"alfworld", "webshop", "searchqa"} <= set(_help(cli.app, "data").split())
    assert {"alfworld", "alfworld-memory", "webshop", "retriever", "agent", "train"} <= set(_help(cli.app, "bench").split())
    assert {"webshop", "retriever", "policy"} <= set(_help(cli.app, "serve").split())
    assert "build" in _help(cli.app, "leaderboard")


def test_a_broken_plugin_is_a_warning_and_the_rest_still_registers(monkeypatch, capsys):
    broken = EntryPoint(name="broken", value="no_such_module_xyz", group=ENTRY_POINT_GROUP)
    real = cli.command_entry_points
    monkeypatch.setattr(cli, "command_entry_points", lambda: [broken, *real()])
    app = cli.build_app()
    err = capsys.readouterr().err
    assert "warning" in err and "broken" in err and "no_such_module_xyz" in err and "ModuleNotFoundError" in err
    root = _help(app)
    for command in ("doctor", "eval", "leaderboard", "train", "data", "bench"):
        assert command in root
    assert "webshop" in _help(app, "data")


def test_a_plugin_whose_register_raises_is_skipped(capsys):
    import typer

    bad = EntryPoint(name="bad", value="seed_gym.commands", group=ENTRY_POINT_GROUP)  # a module without register
    good = next(ep for ep in cli.command_entry_points() if ep.name == "leaderboards")
    apps = [typer.Typer() for _ in range(4)]
    assert cli.register_command_modules([bad, good], *apps) == ["bad"]
    assert "'bad'" in capsys.readouterr().err
    assert any(group.name == "leaderboard" for group in apps[0].registered_groups)


@pytest.mark.parametrize("module", ["seed_gym.envs.alfworld.cli", "seed_gym.envs.webshop.cli",
                                    "seed_gym.envs.searchqa.cli", "seed_gym.leaderboards.cli",
                                    "seed_gym.agents.cli", "seed_gym.training.cli"])
def test_a_command_module_does_not_import_the_core_cli(module):
    code = (f"import sys, typer, {module} as m\n"
            "apps = [typer.Typer() for _ in range(4)]\n"
            "m.register(*apps)\n"
            "print('seed_gym.cli' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_the_core_cli_names_no_env():
    from pathlib import Path

    import seed_gym

    root = Path(seed_gym.__file__).parent
    for name in ("cli.py", "doctor.py", "commands.py"):
        text = (root / name).read_text().lower()
        for env in ("alfworld", "webshop", "searchqa"):
            assert env not in text, (name, env)


def test_eval_without_env_names_the_registered_envs():
    result = CliRunner().invoke(cli.app, ["eval", "-a", "random"], env={"COLUMNS": "200"})
    assert result.exit_code == 2
    assert "registered:" in result.output and "alfworld" in result.output and "webshop" in result.output


def test_doctor_collects_the_env_profiles_checks():
    from seed_gym.doctor import Check, run_checks

    checks = run_checks()
    assert all(isinstance(c, Check) for c in checks)
    names = [c.name for c in checks]
    for name in ("package gymnasium", "package alfworld", "package textworld", "ALFWorld engine",
                 "official ALFWorld games", "WebShop noun tagger"):
        assert name in names
    assert any(n.startswith("generated games") for n in names)
    assert len(names) == len(set(names))  # webshop and webshop-browser share one profile: checked once


def test_a_check_target_that_fails_to_import_is_a_failed_check(monkeypatch):
    from seed_gym import doctor, registry
    from seed_gym.profile import EnvProfile

    registry.load_entry_points()
    monkeypatch.setitem(registry._SPECS, "zz-broken", registry.EnvSpec(
        "zz-broken", "no_such_module_xyz:Env", profile=EnvProfile(checks="no_such_module_xyz:checks",
                                                                  packages=("no-such-distribution-xyz",))))
    checks = {c.name: c for c in doctor.run_checks()}
    assert checks["zz-broken checks"].status == "fail" and "no_such_module_xyz" in checks["zz-broken checks"].detail
    assert checks["package no-such-distribution-xyz"].status == "fail"
    assert "WebShop noun tagger" in checks
