"""Lamps: switch lamps on in the order the task names. A seed-gym plugin env (see pyproject.toml)."""

from __future__ import annotations

from pathlib import Path

from seed_gym import EnvProfile, register

PROFILE = EnvProfile(
    prompt_template=Path(__file__).parent / "prompts" / "lamps.toml",
    rl_max_steps=6, rl_tasks=2, reward_scale=5.0, invalid_penalty=0.2,
    rule="seed_gym_lamps.rule:lamps_rule",
    corpus="seed_gym_lamps.rule:sample_texts",
    family_columns={"Short": "three-lamps", "Long": "four-lamps"},
    packages=("seed-gym-lamps",),
)


def register_envs() -> None:
    register("lamps", "seed_gym_lamps.env:LampsEnv", description="Switch lamps on in a given order (plugin)",
             profile=PROFILE)
