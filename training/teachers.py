"""Where each algorithm's teacher context comes from — the one thing that tells SDAR, SEED and
OPSD apart (their loss is shared; see :mod:`.losses`). Which source an algorithm uses is its
``teacher`` in the algorithm table (:mod:`.algorithms`):

* ``hindsight`` (seed, skill-sd): skills written per trajectory by an analyzer — by default the
  policy itself with its current weights (SEED's self-evolving analyzer), else a rule-based or an
  external OpenAI-compatible analyzer; inserted after the task line of every step prompt (H(h, s)).
* ``skill-bank`` (sdar): a static skill bank (general + per-family skills), prepended as
  ``[Privileged Skill Information]`` like SDAR's code.
* ``ground-truth`` (opsd, grpo-opsd): the rule analyzer with the env's answer key writes a true,
  specific skill per trajectory.
* ``offline-skills`` (seed-static): a library built once offline by an analyzer (``skill_bank``),
  looked up per task family, inserted after the task line like SEED's skill.
* ``none`` (grpo, gigpo): no teacher.

``analyzer="frozen"`` (SEED without self-evolution) is the policy analyzer on ``frozen_backend``:
the starting weights θ_sft, never updated.

A sample whose trajectory got no skill has teacher None: it carries no distillation signal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seed_gym import jsonl
from seed_gym.records import EpisodeRecord
from seed_gym.training.algorithms import algorithm
from seed_gym.training.analyzer import ANALYZER_TRAJECTORY_CHARS, ground_truth_from_env, make_analyzer
from seed_gym.training.batch import StepSample
from seed_gym.training.skills import SkillBank, insert_skill_messages, prepend_privileged_messages


class TeacherSource:
    """Builds, for one update's samples, the privileged prompt of each sample's teacher."""

    def __init__(self, algo: str, env_id: str, *, policy_backend: Any = None, env: Any = None,
                 analyzer: str = "policy", analyzer_url: str | None = None, analyzer_model: str | None = None,
                 skill_bank: str | None = None, analyzer_max_new_tokens: int = 768,
                 analyzer_max_chars: int = ANALYZER_TRAJECTORY_CHARS, frozen_backend: Any = None) -> None:
        self.algo = algo
        self.analyzer = None
        self.bank = None
        self.teacher = teacher = algorithm(algo).teacher
        #: episode id -> the skill text of its teacher, for the latest update (``save_context``).
        self.last_skills: dict[str, str] = {}
        truth = ground_truth_from_env(env) if env else None
        self.insert = teacher in ("hindsight", "ground-truth", "offline-skills")  # else prepended (SDAR)
        if teacher == "hindsight":
            if analyzer == "frozen":
                if frozen_backend is None:
                    raise ValueError("analyzer=frozen needs the starting weights' backend (frozen_backend=...)")
                analyzer, policy_backend = "policy", frozen_backend
            self.analyzer = make_analyzer(analyzer, env_id=env_id, backend=policy_backend, base_url=analyzer_url,
                                          model=analyzer_model, max_new_tokens=analyzer_max_new_tokens,
                                          max_chars=analyzer_max_chars, ground_truth=truth)
        elif teacher == "ground-truth":
            self.analyzer = make_analyzer("rule", env_id=env_id, ground_truth=truth)
        elif teacher == "skill-bank":
            self.bank = SkillBank.load(skill_bank, env_id) if skill_bank else SkillBank.for_env(env_id)
        elif teacher == "offline-skills":
            if not skill_bank:
                raise ValueError(f"{algo} needs skill_bank: the offline library (training.skills.offline_skill_bank)")
            self.bank = SkillBank.load(skill_bank, env_id)

    def teacher_messages(self, records: Sequence[EpisodeRecord],
                         samples: Sequence[StepSample]) -> tuple[list[Any] | None, dict[str, float]]:
        self.last_skills = {}
        if self.bank is not None:
            by_episode = {r.episode_id: self.bank.skills_for(r.task) for r in records}
            self.last_skills = by_episode
            place = insert_skill_messages if self.insert else prepend_privileged_messages
            # an offline library without a skill for the task gives no teacher; SDAR's bank always prepends
            return [place(s.messages, by_episode[s.episode_id]) if by_episode[s.episode_id] or not self.insert
                    else None for s in samples], {}
        if self.analyzer is None:
            return None, {}
        counts = getattr(self.analyzer, "stats", None)  # a model analyzer's replies, to report truncation
        before = (counts.replies, counts.cut) if counts else (0, 0)
        skills = dict(zip((r.episode_id for r in records), self.analyzer.analyze(records)))
        self.last_skills = {eid: skill.episode_skill for eid, skill in skills.items() if skill is not None}
        messages = [insert_skill_messages(s.messages, skills[s.episode_id].episode_skill)
                    if skills.get(s.episode_id) is not None else None for s in samples]
        parsed = sum(skill is not None for skill in skills.values())
        stats = {"skills_parsed": float(parsed), "skill_parse_rate": parsed / max(1, len(skills))}
        if counts and counts.replies > before[0]:
            stats["skill_cut_rate"] = (counts.cut - before[1]) / (counts.replies - before[0])
        return messages, stats

    def save_context(self, folder: Path) -> None:
        """Write the latest update's skills as ``teacher.jsonl`` into a rollout run directory, so
        ``seed-gym view`` shows each episode's teacher context (nothing for a teacherless algorithm)."""
        if not self.last_skills:
            return
        lines = [json.dumps({"episode_id": eid, "teacher": self.teacher, "skill": skill})
                 for eid, skill in sorted(self.last_skills.items())]
        jsonl.write_atomic(Path(folder) / "teacher.jsonl", "\n".join(lines) + "\n")
