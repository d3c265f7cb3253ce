"""What ``seed-gym doctor`` reports for ALFWorld: the engine, and where games are found.

Named by the env's profile (``EnvProfile.checks``); :mod:`seed_gym.doctor` collects it.
"""

from __future__ import annotations

import os
from pathlib import Path

from seed_gym.doctor import Check


def _engine() -> Check:
    try:
        from seed_gym.envs.alfworld.engine import ENGINE_VERSION, make_engine

        make_engine(expert=True)
        return Check("ALFWorld engine", "ok", ENGINE_VERSION)
    except Exception as error:  # report, don't crash: this is a diagnostic
        return Check("ALFWorld engine", "fail", f"{type(error).__name__}: {error}")


def _data() -> list[Check]:
    from seed_gym.cache import env_cache
    from seed_gym.core import DataError
    from seed_gym.envs.alfworld.data import SPLIT_DIRS, collect_split, tree_root

    def games(name: str, tree: Path) -> Check:
        try:
            counts = ", ".join(f"{k} {len(collect_split(tree, v))}" for k, v in SPLIT_DIRS.items())
        except DataError as error:  # a game that cannot be played: say which
            return Check(name, "fail", str(error))
        return Check(name, "ok", f"{counts} ({tree})")

    checks = []
    generated = env_cache("alfworld")
    for folder in sorted(generated.glob("generated-seed*")):
        checks.append(games(f"generated games {folder.name}", folder / "json_2.1.1"))
    if not checks:
        checks.append(Check("generated games", "missing", f"none yet; built on first use under {generated}"))
    official = tree_root(os.environ.get("ALFWORLD_DATA") or Path.home() / ".cache" / "alfworld")
    if any((official / d).is_dir() for d in SPLIT_DIRS.values()):
        checks.append(games("official ALFWorld games", official))
    else:
        checks.append(Check("official ALFWorld games", "missing", f"not at {official} (set $ALFWORLD_DATA)"))
    return checks


def checks() -> list[Check]:
    """The ALFWorld engine starts; generated and official games found (``EnvProfile.checks``)."""
    return [_engine(), *_data()]
