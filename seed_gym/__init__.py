"""seed-gym: text environments, one rollout harness, and scoring for agentic RL.

>>> import seed_gym
>>> env = seed_gym.make(seed_gym.list_envs()[0].env_id, split="unseen")   # doctest: +SKIP
"""

from __future__ import annotations

from seed_gym.agent import Agent, AgentAction, AgentSpec, make_agent, register_agent_kind
from seed_gym.checker import ContractViolation, check_text_env
from seed_gym.core import (INFO_KEYS, DataError, EnvMisuseError, MissingDataError, SeedGymError, StepOutcome,
                           TaskInfo, TextEnv, UnknownTaskError)
from seed_gym.profile import EnvProfile
from seed_gym.registry import list_envs, load_entry_points, make, profile, register
from seed_gym.tasks import Split, TaskSet

__version__ = "0.1.0"

__all__ = [
    "INFO_KEYS", "Agent", "AgentAction", "AgentSpec", "ContractViolation", "DataError", "EnvMisuseError", "EnvProfile", "MissingDataError",
    "SeedGymError", "Split", "StepOutcome", "TaskInfo", "TaskSet", "TextEnv", "UnknownTaskError",
    "check_text_env", "list_envs", "load_entry_points", "make", "make_agent", "profile", "register", "register_agent_kind",
]

# Registers every installed env (built-in and third-party) with seed-gym and gymnasium, so that
# gymnasium.make("seed_gym/<GymName>-v0") works after `import seed_gym`. Cheap: no engine loads.
load_entry_points()
