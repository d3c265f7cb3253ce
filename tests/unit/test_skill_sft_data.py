"""Skill SFT's base-policy episodes (SEED stage 1, seed-method.md §4) are played the way RL's rollouts
will be, so the analyzer learns to read the episodes it is sent in training."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="training needs torch (the [train] extra)")

from seed_gym.agent import AgentSpec  # noqa: E402
from seed_gym.training.config import TrainConfig  # noqa: E402
from seed_gym.training.trainer import base_policy_agent  # noqa: E402


def agent_options(**settings) -> dict[str, str]:
    config = TrainConfig(algo="sft", env="webshop", model="runs/sft", out="o", sft_data="skills", **settings)
    return dict(AgentSpec.parse(base_policy_agent(config)).params)


def test_base_policy_episodes_rank_the_admissible_actions_when_rl_rollouts_do():
    # Measured: a 5M start that generated won 0 of 128 such episodes (every label a rule about invalid
    # actions) while its ranked-choice RL rollouts won 6%.
    options = agent_options(rollout_choose="rank", rollout_rank_by="prefix", temperature=1.0)
    assert options["choose"] == "rank" and options["rank_by"] == "prefix" and options["temperature"] == "1.0"


def test_base_policy_episodes_generate_when_rl_rollouts_generate():
    assert "choose" not in agent_options(rollout_choose="generate")
