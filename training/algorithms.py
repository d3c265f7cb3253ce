"""The algorithm table: every RL algorithm is a loss preset plus a teacher source, in one place.

The config validates ``algo`` against this table, :class:`~seed_gym.training.losses.LossConfig`
reads the preset, :class:`~seed_gym.training.teachers.TeacherSource` the teacher, and the CLI
its help. Adding an algorithm is one entry here (plus its loss term, if it needs a new one).

* ``loss``: the loss coefficients that differ from SEED's (seed-method.md §9, §11); a term a
  preset switches off stays off, one it switches on stays on (see ``LossConfig``).
* ``teacher``: where the privileged prompt of the distillation teacher comes from:

  - ``"none"``: no teacher (GRPO, GiGPO);
  - ``"hindsight"``: a skill written per trajectory by the configured analyzer (by default the
    policy itself, SEED's self-evolving analyzer), inserted after the task line;
  - ``"ground-truth"``: the rule analyzer with the env's answer key writes a true, specific skill
    per trajectory (OPSD);
  - ``"skill-bank"``: a static bank of general and per-family skills, prepended as
    ``[Privileged Skill Information]`` (SDAR);
  - ``"offline-skills"``: a static library computed once offline by an analyzer
    (:func:`~seed_gym.training.skills.offline_skill_bank`, loaded from ``skill_bank``), looked up per
    task family and inserted where SEED inserts its hindsight skill (the ablation of SEED's Table 2).

SEED's other two ablations are settings, not entries: "w/o hindsight-skill SFT" starts RL from the
plain SFT checkpoint (``model``), "w/o self-evolution" sets ``analyzer = "frozen"`` (skills written by
the starting weights θ_sft for the whole run).

SFT is not in the table: it is behaviour cloning, with no loss preset and no teacher.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from seed_gym.core import SeedGymError

Teacher = Literal["none", "hindsight", "ground-truth", "skill-bank", "offline-skills"]
SFT = "sft"


class UnknownAlgorithmError(SeedGymError, ValueError):
    pass


@dataclass(frozen=True)
class Algorithm:
    name: str
    loss: dict[str, float]
    teacher: Teacher
    summary: str
    aliases: tuple[str, ...] = field(default=())


ALGORITHMS: dict[str, Algorithm] = {a.name: a for a in (
    Algorithm("grpo", {"opd_coef": 0.0}, "none", "GRPO across steps (verl-agent)"),
    # SDAR code's OPSD: the SDAR loss without the PG term, taught by the ground truth.
    Algorithm("opsd", {"pg_coef": 0.0}, "ground-truth", "on-policy self-distillation from ground truth"),
    # g ≡ 0.5, so the effective OPD weight is 0.005.
    Algorithm("grpo-opsd", {"gate_beta": 0.0}, "ground-truth", "GRPO plus ungated OPSD", aliases=("grpo+opsd",)),
    # ω = 1 adds the step-level advantage of anchor-state groups (seed-method.md §11).
    Algorithm("gigpo", {"opd_coef": 0.0, "step_adv_coef": 1.0}, "none",
              "GRPO plus step-level advantages from groups of identical states (GiGPO)"),
    Algorithm("sdar", {}, "skill-bank", "GRPO plus gated distillation from a static skill bank"),
    Algorithm("seed", {}, "hindsight", "GRPO plus gated distillation from the policy's own hindsight skills"),
    Algorithm("skill-sd", {"opd_coef": 0.0, "skill_sd_coef": 0.001}, "hindsight",
              "GRPO plus Skill-SD's k3 distillation term from hindsight skills"),
    Algorithm("seed-static", {}, "offline-skills",
              "SEED with static offline skills (a library built once) instead of on-policy ones"),
)}
_BY_ALIAS = {alias: a for a in ALGORITHMS.values() for alias in a.aliases}


def algorithm(name: str) -> Algorithm:
    """The table entry of ``name`` or one of its aliases."""
    found = ALGORITHMS.get(name) or _BY_ALIAS.get(name)
    if found is None:
        raise UnknownAlgorithmError(f"unknown algo {name!r}; choose from {', '.join(names())}")
    return found


def names(with_sft: bool = False) -> tuple[str, ...]:
    """The algorithms' names in table order (``sft`` first when asked)."""
    return ((SFT,) if with_sft else ()) + tuple(ALGORITHMS)
