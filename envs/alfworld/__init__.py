"""ALFWorld on the real ALFWorld/TextWorld engine (``alfworld``).

Importing this package is cheap; the engine loads on the first ``reset``.
"""

from __future__ import annotations


def register_envs() -> None:
    """Entry point of the ``seed_gym.envs`` group: registers ``alfworld``."""
    from seed_gym.registry import register

    register("alfworld", "seed_gym.envs.alfworld.env:ALFWorldEnv", gym_id="seed_gym/ALFWorld-v0",
             description="ALFWorld household tasks on the real TextWorld engine (6 task types)")
