"""Training configuration: one typed, validated object per run, from defaults, a file and overrides.

Precedence: the algorithm's defaults (seed-method.md §9: the paper's settings) < a TOML/JSON config
file (``--config``) < ``--set key=value`` overrides. The resolved config is written to
``OUT/config.json`` and a resumed run must match it, except for how long it runs (``updates``,
``sft_epochs``) and bookkeeping (evaluation and checkpoint cadence, worker count, the rollout
engine's memory settings and sync tolerance).
"""

from __future__ import annotations

import difflib
import json
import tomllib
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from seed_gym.pools import DEFAULT_CALL_TIMEOUT
from seed_gym.core import SeedGymError
from seed_gym.registry import profile
from seed_gym.training import algorithms


class ConfigError(SeedGymError, ValueError):
    pass


#: The prompt budget (left truncation) when neither the config nor the prompt template sets one.
DEFAULT_MAX_PROMPT_TOKENS = 2048


class TrainConfig(BaseModel):
    """Every setting of a training run. Each field's docstring is its one-line meaning, which
    ``seed-gym train --show-config`` lists (pydantic keeps it as the field's description)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)

    algo: str
    """Algorithm: "sft" or a name (or alias) in the algorithm table (training/algorithms.py)."""
    env: str
    """Environment id (see `seed-gym list`)."""
    model: str
    """Local model folder to start from (from_pretrained)."""
    out: str
    """Run folder: config.json, metrics.jsonl, checkpoints; the same folder resumes."""
    seed: int = 0
    """Run seed: rollouts, sampling and data order."""
    updates: int = 150
    """RL updates to run (the paper: 150)."""
    # -- rollouts
    tasks_per_update: Optional[int] = None
    """Train tasks rolled out per update (null: the env profile's rl_tasks)."""
    group: int = 8
    """Episodes per task (group size G), all from an identical start."""
    max_steps: Optional[int] = None
    """Step cap of a training episode (null: the env profile's rl_max_steps)."""
    train_split: str = "train"
    """Split the training tasks come from."""
    temperature: float = 1.0
    """Sampling temperature of the rollouts."""
    max_new_tokens: Optional[int] = None
    """Tokens per response (null: the prompt template's default)."""
    history: Optional[int] = None
    """Past steps shown in the prompt (null: the template's default; -1: all)."""
    projection: str = "exact"
    """How a response maps to an admissible action: exact, fuzzy or none."""
    rollout_choose: Literal["generate", "rank"] = "generate"
    """How rollouts act: generate, or sample among the admissible actions ranked by rollout_rank_by (hf)."""
    rollout_rank_by: Literal["sum", "mean", "prefix"] = "prefix"
    """The rule rollout_choose=rank samples by (prefix: the model's tokens constrained to admissible actions)."""
    env_args: dict[str, Any] = {}
    """Env constructor arguments (what --env-arg sets)."""
    env_backend: str = "process"
    """Where rollout envs live: process (worker processes), inline, or ray (Ray actors)."""
    ray_address: Optional[str] = None
    """Ray cluster the ray backend joins (host:port or auto; null: a local Ray instance)."""
    waves: int = 1
    """Waves of live episodes: envs of one step while the policy generates for another (1: lock-step)."""
    workers: int = 2
    """Env worker processes (or Ray actors)."""
    env_call_timeout: float = DEFAULT_CALL_TIMEOUT
    """Seconds an env call may take before its worker is replaced."""
    env_recycle_after: Optional[int] = None
    """Replace each env worker after this many episodes (null: never)."""
    live_episodes: int = 64
    """Env instances alive at once per rank; an update's episodes beyond it wait."""
    # -- rollout engine
    rollout_backend: Literal["hf", "vllm"] = "hf"
    """Generates rollouts, skills and evals: hf (the training weights) or vllm (an engine synced in place)."""
    engine_dtype: Optional[str] = None
    """Weights dtype of the vllm engine (null: dtype)."""
    engine_max_model_len: Optional[int] = None
    """Context length of the vllm engine (null: the model's, at most 8192)."""
    engine_memory_fraction: float = 0.3
    """Share of GPU memory the vllm engine takes while awake (GPUs only)."""
    engine_sleep: bool = True
    """Free the vllm engine's GPU memory while the trainer works (GPUs only)."""
    sync_tolerance: float = 1e-3
    """Probe log-prob gap allowed after a weight sync, beyond twice the gap at start-up."""
    # -- optimisation
    lr: float = 1e-6
    """Learning rate of the RL updates (AdamW)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Gradient-norm clip."""
    micro_batch: int = 16
    """Sequences per forward/backward pass (gradient accumulation beyond it)."""
    mini_batches: int = 1
    """Optimizer steps per update: the update's batch is split into this many."""
    dtype: str = "float32"
    """Weights dtype of the policy: float32 or bfloat16."""
    device: str = "auto"
    """cpu, cuda or auto."""
    parallel: Literal["ddp", "fsdp"] = "ddp"
    """Under torchrun: ddp (a replica per rank) or fsdp (weights, gradients, optimizer state sharded)."""
    max_prompt_tokens: Optional[int] = None
    """Prompt budget, cut from the left (null: the template's, else 2048)."""
    observation_tokens: Optional[int] = None
    """Cut of each observation in the prompt (null: the template's)."""
    # -- losses (LossConfig presets fill what is None)
    clip: float = 0.2
    """PPO clip range ε of the policy-gradient term."""
    kl_coef: Optional[float] = None
    """β_KL of the k3 KL to the frozen reference (null: the algorithm's preset)."""
    opd_coef: Optional[float] = None
    """λ of the gated on-policy distillation loss (null: the algorithm's preset)."""
    gate_beta: Optional[float] = None
    """β of the OPD gate σ(β·Δ) (null: the algorithm's preset)."""
    pg_coef: Optional[float] = None
    """Weight of the PPO clip term; 0 is pure distillation (null: the preset)."""
    step_adv_coef: Optional[float] = None
    """GiGPO's ω, weight of the step-level (anchor-state) advantage (null: the preset; gigpo 1)."""
    gamma: float = 0.95
    """GiGPO's discount of step returns."""
    adv_std: bool = True
    """GiGPO's F_norm: divide by the group's std ("w/ std") or by 1 ("w/o std")."""
    # -- skills
    analyzer: Literal["policy", "frozen", "rule", "openai"] = "policy"
    """Who writes skills: the policy, its frozen starting weights, the env's rule or an OpenAI-compatible server."""
    analyzer_url: Optional[str] = None
    """Base URL of the analyzer server (analyzer=openai)."""
    analyzer_model: Optional[str] = None
    """Model name sent to the analyzer server (analyzer=openai)."""
    analyzer_max_new_tokens: int = 768
    """Tokens per analyzer response; skill SFT drops longer labels."""
    # skill SFT's prompts use the same budget, so the analyzer is trained on what it will read
    analyzer_max_chars: int = Field(9000, ge=500)
    """Characters of trajectory an analyzer prompt shows (observations trimmed in the middle to fit)."""
    # The paper's labeller reads the serialised episode only; with the answer key a label names facts
    # (the target product, the gold answer) that the analyzer's prompt does not show.
    skill_labels: Literal["trajectory", "ground-truth"] = "trajectory"
    """What skill SFT's rule labeller reads: the trajectory, or also the env's answer key."""
    skill_bank: Optional[str] = None
    """Skill bank to load (null: the one the env profile declares); seed-static's offline library."""
    # -- SFT
    sft_data: Literal["expert", "skills"] = "expert"
    """SFT examples: expert demonstrations, or base-policy episodes labelled with hindsight skills."""
    sft_tasks: int = 400
    """Episodes collected for SFT (0: none; sft_runs only)."""
    sft_runs: list[str] = []
    """Run folders whose finished episodes are SFT data too (e.g. expert evals)."""
    # A small model has one set of weights for acting and for writing skills: measured on the 5M model,
    # skill SFT alone (lr 1e-3, 4 epochs) took the behaviour-cloned start from 10% to 0% on WebShop test.
    sft_replay_runs: list[str] = []
    """Skill SFT only: run folders of expert episodes whose cloning examples are mixed in (keeps the actor)."""
    sft_replay_examples: Optional[int] = Field(None, ge=1)
    """How many of those cloning examples, drawn with the run's seed (null: all of them)."""
    sft_epochs: int = 3
    """Passes over the SFT data."""
    sft_lr: float = 1e-5
    """Learning rate of SFT."""
    sft_batch: int = 16
    """Examples per SFT optimizer step."""
    sft_prompt_weight: float = 0.0
    """Weight of a next-token loss on the prompt too (0: responses only)."""
    autocast: Optional[Literal["auto", "bfloat16", "float16"]] = None
    """SFT forward passes under torch autocast in this dtype (null: off; auto: bf16 where native)."""
    # -- bookkeeping
    eval_every: int = 5
    """Evaluate every this many updates."""
    eval_splits: Optional[list[str]] = None
    """Splits evaluated (null: the env's seen + unseen, else test + unseen)."""
    eval_n: Optional[int] = 128
    """Tasks per evaluated split (null: all)."""
    eval_temperature: float = 0.4
    """Sampling temperature of evaluations."""
    eval_max_steps: Optional[int] = None
    """Step budget of evaluation episodes (null: the env's)."""
    eval_batch: int = 16
    """Evaluation episodes played in lock-step (one batched forward per tick)."""
    eval_choose: Literal["generate", "rank"] = "generate"
    """How evaluation acts: generate, or "rank" the admissible actions (agents/choice.py)."""
    eval_rank_by: Literal["sum", "mean", "prefix"] = "prefix"
    """The rule eval_choose=rank picks by."""
    eval_initial: bool = False
    """Also evaluate the starting model, as update 0."""
    save_every: int = 1
    """Write a checkpoint every this many updates."""
    keep_checkpoints: int = 2
    """Checkpoints kept on disk (older ones are deleted)."""
    loggers: list[Literal["tensorboard", "wandb"]] = []
    """Where metrics rows also go: "tensorboard" (OUT/tensorboard), "wandb" (WANDB_MODE=offline: no network)."""

    @field_validator("algo")
    @classmethod
    def _known_algo(cls, value: str) -> str:
        if value == algorithms.SFT:
            return value
        try:
            return algorithms.algorithm(value).name
        except algorithms.UnknownAlgorithmError:
            raise ValueError(f"unknown algo; choose from {', '.join(algorithms.names(with_sft=True))}") from None

    @field_validator("updates", "group", "live_episodes", "waves", "micro_batch", "mini_batches", "save_every", "sft_epochs",
                     "sft_batch")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value < 1:
            raise ValueError("must be >= 1")
        return value

    @field_validator("engine_memory_fraction")
    @classmethod
    def _fraction(cls, value: float) -> float:
        if not 0 < value <= 1:
            raise ValueError("must be in (0, 1]")
        return value

    @field_validator("sync_tolerance")
    @classmethod
    def _tolerance(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("must be > 0")
        return value

    @field_validator("sft_tasks")
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError("must be >= 0")
        return value

    @model_validator(mode="after")
    def _replay_is_for_skill_sft(self) -> "TrainConfig":
        if self.sft_replay_runs and self.sft_data != "skills":
            raise ValueError("sft_replay_runs mixes cloning examples into skill SFT (sft_data=skills); "
                             "for behaviour cloning, list the folders in sft_runs")
        return self

    @model_validator(mode="after")
    def _ranked_rollouts_need_scores(self) -> "TrainConfig":
        if self.rollout_choose == "rank" and self.rollout_backend != "hf":
            raise ValueError("rollout_choose=rank scores the admissible actions, which needs rollout_backend=hf")
        return self

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
                                            "env_recycle_after", "live_episodes", "engine_memory_fraction",
                                            "engine_sleep", "sync_tolerance", "loggers", "ray_address", "waves"})
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


def field_table() -> list[tuple[str, str, str, str]]:
    """(name, type, default, meaning) of every :class:`TrainConfig` field, in declaration order;
    a required field's default is ``required``."""
    rows = []
    for name, info in TrainConfig.model_fields.items():
        kind = getattr(info.annotation, "__name__", None) if info.annotation in (int, float, str, bool) else None
        kind = kind or str(info.annotation).replace("typing.", "")
        default = "required" if info.is_required() else json.dumps(info.default)
        rows.append((name, kind, default, info.description or ""))
    return rows


def check_keys(keys: list[str], where: str) -> None:
    """Every key must be a :class:`TrainConfig` field; an unknown one names the nearest."""
    for key in keys:
        if key not in TrainConfig.model_fields:
            close = difflib.get_close_matches(key, list(TrainConfig.model_fields), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ConfigError(f"unknown config field {key!r} in {where}{hint} "
                              "(every field: `seed-gym train --show-config`)")


def build_config(base: dict[str, Any], file: str | Path | None = None, overrides: list[str] = ()) -> TrainConfig:
    data = dict(base)
    if file:
        loaded = load_config_file(file)
        check_keys(list(loaded), str(file))
        data.update(loaded)
    for text in overrides:
        key, value = parse_override(text)
        check_keys([key], "--set")
        data[key] = value
    try:
        return TrainConfig(**data)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise ConfigError(f"bad training config: {problems}") from None
