"""The skill record every analyzer returns (seed-method.md §4, §7): :class:`Skill`.

Rules: a skill is immutable; ``episode_summary`` and ``episode_skill`` are its required text,
``step_skills`` its optional per-step sentences. :meth:`Skill.label` is the JSON object an analyzer
is asked for (the stage-1 SFT target), :meth:`Skill.to_json` writes it compactly and
:func:`seed_gym.training.analyzer.parse_skill` reads it back unchanged; :meth:`Skill.to_dict` adds
who wrote it, for logs and run files.

This module imports nothing from the project, so the model analyzer
(:mod:`seed_gym.training.analyzer`) and the rule analyzers (:mod:`seed_gym.training.rules`) both
build skills without importing each other.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

#: The analyzer prompt version, stamped on every skill's :meth:`Skill.to_dict`.
PROMPT_VERSION = "seed-gym-analyzer-v1"


@dataclass(frozen=True)
class Skill:
    """One hindsight skill for one episode.

    ``episode_summary`` and ``episode_skill`` are required and non-empty. ``step_skills`` maps a step
    index (``StepRecord.t``) to one short imperative sentence; it is empty in SEED's paper setting.
    ``backend`` says who wrote it (``rule:<env>``, a model backend's name); ``error`` says why an
    earlier attempt failed when the skill came from the repair retry (None otherwise)."""

    episode_summary: str
    episode_skill: str
    step_skills: dict[int, str] = field(default_factory=dict)
    backend: str = ""
    error: str | None = None

    def label(self) -> dict[str, Any]:
        """The JSON object an analyzer is asked to produce (the stage-1 SFT target)."""
        data: dict[str, Any] = {"episode_summary": self.episode_summary, "episode_skill": self.episode_skill}
        if self.step_skills:
            data["step_skills"] = {str(k): v for k, v in sorted(self.step_skills.items())}
        return data

    def to_json(self) -> str:
        """:meth:`label` as compact JSON; :func:`~seed_gym.training.analyzer.parse_skill` reads it back unchanged."""
        return json.dumps(self.label(), ensure_ascii=False)

    def to_dict(self) -> dict[str, Any]:
        """Everything, for logs and run files (field names as in the official trainer's records)."""
        return {**self.label(), "step_skills": {str(k): v for k, v in sorted(self.step_skills.items())},
                "analysis_backend_used": self.backend, "analysis_error": self.error,
                "analysis_prompt_version": PROMPT_VERSION,
                "skill_mode": "episode_and_steps" if self.step_skills else "episode_only"}
