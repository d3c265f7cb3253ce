"""Rule analyzers: true, specific skills from the trajectory and the env's ground truth, without a
model. They label the stage-1 hindsight-skill SFT data offline, and teach OPSD.

Rules: :class:`RuleAnalyzer` uses the rule the env's profile declares (``rule``, e.g.
``envs/<env>/rule.py``; :func:`generic_rule` for an env that declares none) and writes a skill for
every record that has a trajectory (``error`` records get None); a rule is a pure function
``(record, ground truth or None) -> (episode_summary, episode_skill)`` stating what worked
(success: the actual action order) or what went wrong (failure: the core mistake, its warning
signs and the correct workflow). :func:`ground_truth_from_env` gives a live env's ground-truth
lookup (:meth:`seed_gym.core.TextEnv.ground_truth`).

Modules: :mod:`.common`, the helpers env rules share.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from seed_gym.profile import resolve
from seed_gym.records import EpisodeRecord
from seed_gym.registry import profile
from seed_gym.training.rules.common import common_warnings, episode_ending
from seed_gym.training.skill_schema import Skill

#: What the rule analyzers may know beyond the record: task id -> the env's ground truth for it,
#: or None (each env documents its own; see :meth:`seed_gym.core.TextEnv.ground_truth`).
GroundTruth = Callable[[str], "Mapping[str, Any] | None"]
Rule = Callable[[EpisodeRecord, "Mapping[str, Any] | None"], tuple[str, str]]


def ground_truth_from_env(env: Any) -> GroundTruth | None:
    """The ground-truth lookup of a live env: its :meth:`~seed_gym.core.TextEnv.ground_truth`."""
    env = getattr(env, "unwrapped", env)
    lookup = getattr(env, "ground_truth", None)  # a gymnasium-wrapped or non-TextEnv env may lack it
    return lookup if callable(lookup) else None


def rule_for(env_id: str) -> Rule:
    """The rule the env's profile declares, else :func:`generic_rule`."""
    target = profile(env_id).rule
    return resolve(target) if target else generic_rule


class RuleAnalyzer:
    """Deterministic, model-free skills: the env's rule reads the trajectory (and the ground truth,
    when given) and states what worked (success: the actual action order) or what went wrong
    (failure: the core mistake, its warning signs and the correct workflow). It writes a skill for
    every record that has a trajectory; ``error`` records get None."""

    def __init__(self, env_id: str, *,
                 ground_truth: GroundTruth | Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.env_id = env_id
        self.rule: Rule = rule_for(env_id)
        self.name = f"rule:{env_id}"
        if isinstance(ground_truth, Mapping):
            ground_truth = ground_truth.get
        self.ground_truth = ground_truth

    def analyze(self, records: Sequence[EpisodeRecord]) -> list[Skill | None]:
        return [self.analyze_one(record) for record in records]

    def analyze_one(self, record: EpisodeRecord) -> Skill | None:
        if record.status == "error":
            return None
        truth = self.ground_truth(str(record.task.get("id", ""))) if self.ground_truth else None
        summary, skill = self.rule(record, truth)
        return Skill(summary, skill, backend=self.name)


# Generic -----------------------------------------------------------------------------------------
def generic_rule(record: EpisodeRecord, truth: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """Any env: the action order that worked, or how the episode went wrong."""
    instruction = str(record.task.get("instruction") or record.task.get("id") or "the task")
    actions = [s.action for s in record.steps if not s.invalid_action and s.action]
    order = " -> ".join(actions[:12]) + (" -> ..." if len(actions) > 12 else "")
    if record.won:
        return (f"Task '{instruction}' {episode_ending(record)} with the actions {order}.",
                f"Workflow for '{instruction}': {order}. Core rule: repeat this action order; every step was valid.")
    signs = common_warnings(record)
    mistake = "; ".join(signs) or f"the actions taken ({order or 'none'}) did not complete the task"
    return (f"Task '{instruction}' {episode_ending(record)}. {mistake[0].upper()}{mistake[1:]}.",
            f"Avoid on '{instruction}': {mistake}. Choose only admissible actions that move toward the goal and "
            "stop repeating actions that change nothing.")
