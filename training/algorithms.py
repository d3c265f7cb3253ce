"""The algorithm table: every RL algorithm is a loss preset plus a teacher source, in one place.

The config validates ``algo`` against this table, :class:`~seed_gym.training.losses.LossConfig`
reads the preset, :class:`~seed_gym.training.teachers.TeacherSource` the teacher, and the CLI
its help. Adding an algorithm is one entry here (plus its loss term, if it needs a new one).

* ``loss``: the loss coefficients that differ from SEED's (seed-method.md §9, §11); a term a
  preset switches off stays off, one it switches on stays on (see ``LossConfig``).
* ``teacher``: where the privileged prompt of the distillation teacher comes from:

  - ``"none"``: no teacher (plain GRPO);
  - ``"hindsight"``: a skill written per trajectory by the configured analyzer (by default the
    policy itself, SEED's self-evolving analyzer), inserted after the task line;
  - ``"ground-truth"``: the rule analyzer with the env's answer key writes a true, specific skill
    per trajectory (OPSD);
  - ``"skill-bank"``: a static bank of general and per-family skills, prepended as
    ``[Privileged Skill Information]`` (SDAR).

SFT is not in the table: it is behaviour cloning, with no loss preset and no teacher.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from seed_gym.core import SeedGymError

Teacher = Literal["none", "hindsight", "ground-truth", "skill-bank"]
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
    Algorithm("sdar", {}, "skill-bank", "GRPO plus gated distillation from a static skill bank"),
    Algorithm("seed", {}, "hindsight", "GRPO plus gated distillation from the policy's own hindsight skills"),
    Algorithm("skill-sd", {"opd_coef": 0.0, "skill_sd_coef": 0.001}, "hindsight",
              "GRPO plus Skill-SD's k3 distillation term from hindsight skills"),
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
