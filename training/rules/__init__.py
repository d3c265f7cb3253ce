"""Rule analyzers: true, specific skills from the trajectory and the env's ground truth, without a
model (ALFWorld, WebShop, Search-QA; a generic rule for other envs). They label the stage-1
hindsight-skill SFT data offline.

Rules: :class:`RuleAnalyzer` picks the env's rule from :data:`RULES` (:func:`generic_rule` for any
other env) and writes a skill for every record that has a trajectory (``error`` records get None);
a rule is a pure function ``(record, ground truth or None) -> (episode_summary, episode_skill)``
stating what worked (success: the actual action order) or what went wrong (failure: the core
mistake, its warning signs and the correct workflow). :func:`ground_truth_from_env` gives a live
env's ground-truth lookup.

Modules: :mod:`.common` (helpers several rules share), then one per env: :mod:`.alfworld`,
:mod:`.webshop`, :mod:`.searchqa`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from seed_gym.core import UnknownTaskError
from seed_gym.records import EpisodeRecord
from seed_gym.training.rules.alfworld import alfworld_rule
from seed_gym.training.rules.common import _common_warnings, _ending
from seed_gym.training.rules.searchqa import searchqa_rule
from seed_gym.training.rules.webshop import webshop_rule
from seed_gym.training.skill_schema import Skill

#: What the rule analyzers may know beyond the record: task id -> the env's ground truth for it
#: (Search-QA: the question with ``golden_answers`` and ``metadata.hops``; WebShop: the goal with
#: ``asin``, ``name``, ``attributes``, ``goal_options``, ``price_upper``). See :func:`ground_truth_from_env`.
GroundTruth = Callable[[str], "Mapping[str, Any] | None"]
Rule = Callable[[EpisodeRecord, "Mapping[str, Any] | None"], tuple[str, str]]


def ground_truth_from_env(env: Any) -> GroundTruth | None:
    """The ground-truth lookup of a live env (Search-QA questions, WebShop goals), else None.

    ALFWorld needs none: its family and instruction, which the record holds, say what to do."""
    env = getattr(env, "unwrapped", env)
    env_id = getattr(env, "env_id", "")
    if env_id == "searchqa":
        questions = env.data.questions
        return questions.get
    if env_id in ("webshop", "webshop-browser"):
        shop = env.shop

        def goal(task_id: str) -> Mapping[str, Any] | None:
            try:
                return shop.goal(task_id)
            except UnknownTaskError:  # no ground truth: the rule still writes a skill
                return None
        return goal
    return None


class RuleAnalyzer:
    """Deterministic, model-free skills: the env's rule reads the trajectory (and the ground truth,
    when given) and states what worked (success: the actual action order) or what went wrong
    (failure: the core mistake, its warning signs and the correct workflow). It writes a skill for
    every record that has a trajectory; ``error`` records get None."""

    def __init__(self, env_id: str, *,
                 ground_truth: GroundTruth | Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.env_id = env_id
        self.rule: Rule = RULES.get(env_id, generic_rule)
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
        return (f"Task '{instruction}' {_ending(record)} with the actions {order}.",
                f"Workflow for '{instruction}': {order}. Core rule: repeat this action order; every step was valid.")
    signs = _common_warnings(record)
    mistake = "; ".join(signs) or f"the actions taken ({order or 'none'}) did not complete the task"
    return (f"Task '{instruction}' {_ending(record)}. {mistake[0].upper()}{mistake[1:]}.",
            f"Avoid on '{instruction}': {mistake}. Choose only admissible actions that move toward the goal and "
            "stop repeating actions that change nothing.")


#: env id -> its rule; other envs use :func:`generic_rule`.
RULES: dict[str, Rule] = {"alfworld": alfworld_rule, "webshop": webshop_rule, "webshop-browser": webshop_rule,
                          "searchqa": searchqa_rule}
