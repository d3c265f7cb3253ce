"""Env profiles: what agents, training, the tiny model and reports know about an env, declared once.

An env passes its :class:`EnvProfile` to :func:`seed_gym.registry.register`; everything outside
``envs/`` reads per-env facts from :func:`seed_gym.registry.profile` and nowhere else, so a plugin
env gets prompts, training defaults, a rule analyzer, a skill bank, tiny-model text and paper
columns without a line of seed-gym changing. Every field has a default that works for any env.

Rules:

* Code is named by ``"package.module:attribute"`` strings and imported on first use
  (:func:`resolve`), so declaring a profile at registration stays cheap.
* Two env ids that are one benchmark (a text and a browser view of one shop, say) share one profile
  object; consumers that collect per-benchmark things (corpus text, skill banks) de-duplicate by
  the target string, not by env id.
* Ground truth is not here: it belongs to a live env, :meth:`seed_gym.core.TextEnv.ground_truth`.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class EnvProfile:
    """Per-env facts. Fields (``target`` = ``"package.module:attribute"``):

    * ``prompt_template``: the TOML prompt template model agents use (None: seed-gym's generic one).
    * ``prompt_views`` / ``response_parsers``: names a template may use in ``view`` / ``parser``,
      each mapped to the target implementing it (see :mod:`seed_gym.agents.prompts` and
      :mod:`seed_gym.agents.parsing`).
    * ``rl_max_steps``: step cap of RL rollouts (seed-method.md §9); None leaves the env's own budget.
    * ``rl_tasks``: tasks per RL update.
    * ``reward_scale``: R(τ) = ``reward_scale`` · won (§3); ``invalid_penalty`` is subtracted from
      each step whose response was format-invalid.
    * ``rule``: target of the rule analyzer, ``(record, ground_truth | None) -> (summary, skill)``;
      None: the generic rule.
    * ``skill_bank``: target of a static skill bank (a mapping with ``general``, ``families`` and
      optionally ``aliases``), SDAR's teacher; None: the env has no built-in bank.
    * ``corpus``: target of ``(seed: int) -> list[str]``, sample texts (observations, prompts,
      responses) for the tiny model's tokenizer; None: the env adds no text.
    * ``reported``: target of a sequence of :class:`seed_gym.leaderboards.reference.ReferenceRow`,
      the numbers papers report on this env; ``family_columns``: paper column name -> family name.
    * ``checks``: target of ``() -> list[seed_gym.doctor.Check]``, what ``seed-gym doctor`` reports
      for this env (its engine, where its data is found); None: nothing env-specific.
    * ``packages``: distributions whose versions every run's provenance records.
    """

    prompt_template: str | Path | None = None
    prompt_views: Mapping[str, str] = field(default_factory=dict)
    response_parsers: Mapping[str, str] = field(default_factory=dict)
    rl_max_steps: int | None = 30
    rl_tasks: int = 16
    reward_scale: float = 1.0
    invalid_penalty: float = 0.1
    rule: str | None = None
    skill_bank: str | None = None
    corpus: str | None = None
    reported: str | None = None
    family_columns: Mapping[str, str] = field(default_factory=dict)
    checks: str | None = None
    packages: tuple[str, ...] = ()


#: The profile of an env that declares none.
DEFAULT_PROFILE = EnvProfile()


def resolve(target: str) -> Any:
    """Import ``"package.module:attribute"`` and return the attribute."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{target!r} is not 'package.module:attribute'")
    return getattr(importlib.import_module(module_name), attribute)
