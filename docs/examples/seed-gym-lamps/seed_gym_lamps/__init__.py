"""Lamps: switch lamps on in the order the task names. A seed-gym plugin env."""

from __future__ import annotations

from pathlib import Path

from seed_gym import EnvProfile, register

# What agents, training, the tiny model and reports know about the env; every field is optional.
PROFILE = EnvProfile(
    prompt_template=Path(__file__).parent / "prompts" / "lamps.toml",  # what model agents read
    rl_max_steps=6, rl_tasks=2,                # RL rollouts: step cap, tasks per update
    reward_scale=5.0, invalid_penalty=0.2,     # R = 5 * won, minus 0.2 per format-invalid step
    rule="seed_gym_lamps.rule:lamps_rule",     # the rule analyzer (SEED, OPSD teachers)
    corpus="seed_gym_lamps.rule:sample_texts",  # sample texts for the tiny model's tokenizer
    family_columns={"Short": "three-lamps", "Long": "four-lamps"},  # report column -> family
    packages=("seed-gym-lamps",),              # versions recorded in every run's provenance
)


def register_envs() -> None:
    """The entry point's target: seed-gym calls it the first time it looks for envs."""
    register("lamps", "seed_gym_lamps.env:LampsEnv", description="Switch lamps on in a given order (plugin)",
             gym_id="seed_gym/Lamps-v0", profile=PROFILE)
