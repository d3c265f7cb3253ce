"""ALFWorld on the real ALFWorld/TextWorld engine (``alfworld``).

Importing this package is cheap; the engine loads on the first ``reset``.
"""

from __future__ import annotations

from pathlib import Path

from seed_gym.profile import EnvProfile

#: seed-method.md §9 (30 steps, 16 tasks per update) and §3 (R = 10·won, 0.1 per invalid step);
#: the prompt is verl-agent's layout, what SEED, SDAR and GiGPO checkpoints were trained on.
PROFILE = EnvProfile(
    prompt_template=Path(__file__).parent / "prompts" / "alfworld-verl-agent.toml",
    rl_max_steps=30, rl_tasks=16, reward_scale=10.0, invalid_penalty=0.1,
    rule="seed_gym.envs.alfworld.rule:alfworld_rule",
    skill_bank="seed_gym.envs.alfworld.skills:SKILL_BANK",
    corpus="seed_gym.envs.alfworld.corpus:sample_texts",
    reported="seed_gym.envs.alfworld.reported:ROWS",
    # The papers' per-task-type columns -> our family names (the task types in the records).
    family_columns={"Pick": "pick_and_place_simple", "Look": "look_at_obj_in_light",
                    "Clean": "pick_clean_then_place_in_recep", "Heat": "pick_heat_then_place_in_recep",
                    "Cool": "pick_cool_then_place_in_recep", "Pick2": "pick_two_obj_and_place"},
    checks="seed_gym.envs.alfworld.doctor:checks",
    packages=("alfworld", "textworld"),
)


def register_envs() -> None:
    """Entry point of the ``seed_gym.envs`` group: registers ``alfworld``."""
    from seed_gym.registry import register

    register("alfworld", "seed_gym.envs.alfworld.env:ALFWorldEnv", gym_id="seed_gym/ALFWorld-v0",
             description="ALFWorld household tasks on the real TextWorld engine (6 task types)",
             profile=PROFILE)
