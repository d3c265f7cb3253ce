"""Training configuration: one typed, validated object per run, from defaults, a file and overrides.

Precedence: the algorithm's defaults (seed-method.md §9: the paper's settings) < a TOML/JSON config
file (``--config``) < ``--set key=value`` overrides. The resolved config is written to
``OUT/config.json`` and a resumed run must match it, except for how long it runs (``updates``,
``sft_epochs``) and bookkeeping (evaluation and checkpoint cadence, worker count).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from seed_gym.pools import DEFAULT_CALL_TIMEOUT
from seed_gym.core import SeedGymError
from seed_gym.registry import profile
from seed_gym.training import algorithms


class ConfigError(SeedGymError, ValueError):
    pass


#: The prompt budget (left truncation) when neither the config nor the prompt template sets one.
DEFAULT_MAX_PROMPT_TOKENS = 2048


class TrainConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    algo: str  # "sft" or a name (or alias) in the algorithm table (training/algorithms.py)
    env: str
    model: str
    out: str
    seed: int = 0
    updates: int = 150
    # -- rollouts
    tasks_per_update: Optional[int] = None  # the env profile's rl_tasks
    group: int = 8
    max_steps: Optional[int] = None         # the env profile's rl_max_steps
    train_split: str = "train"
    temperature: float = 1.0
    max_new_tokens: Optional[int] = None    # the prompt template's default
    history: Optional[int] = None           # the prompt template's default
    projection: str = "exact"
    env_args: dict[str, Any] = {}
    env_backend: str = "process"
    workers: int = 2
    env_call_timeout: float = DEFAULT_CALL_TIMEOUT  # seconds per env call before its worker is replaced
    env_recycle_after: Optional[int] = None         # replace each env worker after this many episodes
    live_episodes: int = 64  # env instances alive at once per rank; an update's episodes beyond it wait
    # -- optimisation
    lr: float = 1e-6
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    micro_batch: int = 16
    mini_batches: int = 1
    dtype: str = "float32"
    device: str = "auto"
    max_prompt_tokens: Optional[int] = None  # the template's (Search-QA 4096), else 2048
    observation_tokens: Optional[int] = None  # the template's cut of observations (Search-QA 500)
    # -- losses (LossConfig presets fill what is None)
    clip: float = 0.2
    kl_coef: Optional[float] = None
    opd_coef: Optional[float] = None
    gate_beta: Optional[float] = None
    pg_coef: Optional[float] = None
    # -- skills
    analyzer: Literal["policy", "rule", "openai"] = "policy"
    analyzer_url: Optional[str] = None
    analyzer_model: Optional[str] = None
    analyzer_max_new_tokens: int = 768
    skill_bank: Optional[str] = None
    # -- SFT
    sft_data: Literal["expert", "skills"] = "expert"
    sft_tasks: int = 400             # episodes collected for SFT (0: none; sft_runs only)
    sft_runs: list[str] = []         # run folders whose finished episodes are SFT data too (e.g. expert evals)
    sft_epochs: int = 3
    sft_lr: float = 1e-5
    sft_batch: int = 16
    sft_prompt_weight: float = 0.0   # > 0: also next-token loss on the prompt, at this weight
    autocast: Optional[Literal["bfloat16", "float16"]] = None  # SFT forward passes under torch autocast
    # -- bookkeeping
    eval_every: int = 5
    eval_splits: Optional[list[str]] = None  # the env's: seen + unseen, else test + unseen
    eval_n: Optional[int] = 128
    eval_temperature: float = 0.4
    eval_max_steps: Optional[int] = None
    eval_batch: int = 16          # episodes played in lock-step (one batched forward per tick)
    eval_choose: Literal["generate", "rank"] = "generate"  # "rank": score the admissible actions (agents/choice.py)
    eval_rank_by: Literal["sum", "mean", "prefix"] = "prefix"  # the rule eval_choose="rank" picks by
    eval_initial: bool = False    # also evaluate the starting model, as update 0
    save_every: int = 1
    keep_checkpoints: int = 2

    @field_validator("algo")
    @classmethod
    def _known_algo(cls, value: str) -> str:
        if value == algorithms.SFT:
            return value
        try:
            return algorithms.algorithm(value).name
        except algorithms.UnknownAlgorithmError:
            raise ValueError(f"unknown algo; choose from {', '.join(algorithms.names(with_sft=True))}") from None

    @field_validator("updates", "group", "live_episodes", "micro_batch", "mini_batches", "save_every", "sft_epochs",
                     "sft_batch")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value < 1:
            raise ValueError("must be >= 1")
        return value

    @field_validator("sft_tasks")
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError("must be >= 0")
        return value

    def rl_max_steps(self) -> int | None:
        """The RL step cap; None leaves the env's own budget."""
        return self.max_steps or profile(self.env).rl_max_steps

    def rl_tasks(self) -> int:
        """Tasks per RL update."""
        return self.tasks_per_update or profile(self.env).rl_tasks

    def template(self) -> Any:
        from seed_gym.agents.prompts import template_for_env

        return template_for_env(self.env)

    def new_tokens(self) -> int:
        return self.max_new_tokens or self.template().max_new_tokens

    def prompt_tokens(self) -> int:
        return self.max_prompt_tokens or self.template().prompt_tokens or DEFAULT_MAX_PROMPT_TOKENS

    @classmethod
    def identity_defaults(cls) -> dict[str, Any]:
        """Field defaults: what a run recorded before a field existed is taken to have used."""
        return {name: field.default for name, field in cls.model_fields.items() if not field.is_required()}

    def identity(self) -> dict[str, Any]:
        """What a resumed run must share with the run it resumes. Budgets left to the template are
        recorded as the values in force, so a run that wrote them explicitly still matches."""
        identity = self.model_dump(exclude={"updates", "sft_epochs", "eval_every", "save_every", "keep_checkpoints",
                                            "workers", "observation_tokens", "env_call_timeout",
                                            "env_recycle_after", "live_episodes"})
        identity.update(max_new_tokens=self.new_tokens(), max_prompt_tokens=self.prompt_tokens())
        if self.observation_tokens is not None:
            identity["observation_tokens"] = self.observation_tokens
        return identity


def parse_override(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"bad override {text!r}; use key=value")
    try:
        parsed: Any = json.loads(value)
    except json.JSONDecodeError:
        parsed = value  # a bare string
    return key.strip(), parsed


def load_config_file(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    try:
        return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as error:
        raise ConfigError(f"config file {path} does not parse: {error}") from None


def build_config(base: dict[str, Any], file: str | Path | None = None, overrides: list[str] = ()) -> TrainConfig:
    data = dict(base)
    if file:
        data.update(load_config_file(file))
    for text in overrides:
        key, value = parse_override(text)
        data[key] = value
    try:
        return TrainConfig(**data)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise ConfigError(f"bad training config: {problems}") from None
