"""Where seed-gym keeps what it generates or indexes: ``$SEED_GYM_HOME`` (default
``~/.cache/seed-gym``), one folder per env under it. Everything there can be rebuilt."""

from __future__ import annotations

import os
from pathlib import Path


def seed_gym_home() -> Path:
    """``$SEED_GYM_HOME``, else ``~/.cache/seed-gym``."""
    return Path(os.environ.get("SEED_GYM_HOME", Path.home() / ".cache" / "seed-gym"))


def env_cache(env: str) -> Path:
    """The folder an env caches under: ``seed_gym_home() / env``."""
    return seed_gym_home() / env
