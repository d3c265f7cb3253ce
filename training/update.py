"""One RL update — GRPO, OPSD, GRPO+OPSD, SDAR, SEED, Skill-SD — read top to bottom.

Given the step samples of one round of rollouts (:mod:`.batch`) and, per sample, the privileged
prompt of its teacher (or None), :func:`rl_update`:

1. tokenises every student prompt and its teacher prompt; response tokens are the *identical*
   sampled tokens for both (seed-method.md §6);
2. computes, once and without gradients, the log-probs of θ_old (the weights that sampled), of the
   frozen reference (for the k3 KL) and of the teacher (θ_old with the skill in the prompt). When
   the batch gets one optimiser step (``mini_batches`` 1) and the model has no dropout, θ_old is
   the weights of that step's forward passes, so its log-probs are those passes' own, detached
   (as TRL does with one iteration per generation), and no separate pass runs;
3. computes group-normalised advantages over all step samples of each task (§5);
4. takes ``mini_batches`` optimiser steps; each accumulates micro-batches whose losses are
   weighted by their share of the mini-batch's response tokens, so the mini-batch loss is the
   token-mean of :func:`~seed_gym.training.losses.total_loss` however it is chunked;
5. returns the statistics the metrics log keeps: loss terms, gate mean, share of gates > 0.5,
   mean teacher gap, clip fraction, advantage and reward summaries, and — where the rollout engine
   recorded its own log-probs of the sampled tokens (``sample.extra["sampling_logprobs"]``) —
   ``sampling_logprob_gap``, their mean absolute difference from θ_old's, token-weighted: the
   mismatch between the engine that sampled and the trainer that scores, which breaks RL runs when
   it grows.

``costs`` (a :class:`~seed_gym.training.costs.PhaseCosts`) gets the seconds and tokens of steps 2
(``old_logprobs``, ``ref_logprobs``, ``teacher_logprobs``) and 4 (``update``).

Where the teacher comes from is the only difference between SDAR (static skill bank), SEED (the
policy's own hindsight skill), OPSD (ground-truth skill) — that choice lives in the trainer.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from seed_gym.agents.backends.scoring import prompt_owners
from seed_gym.training.batch import StepSample
from seed_gym.training.costs import PhaseCosts, forward_tokens
from seed_gym.training.distributed import SINGLE, DataParallel
from seed_gym.training.losses import LossConfig, gigpo_advantages, group_advantages, total_loss
from seed_gym.training.policy import Policy


#: Loss statistics summed across ranks (a fixed order keeps the all-reduces aligned).
STAT_KEYS = ("loss", "pg_loss", "clip_frac", "dual_clip_frac", "approx_kl", "kl_loss", "opd_loss", "gate_mean",
             "gate_active_ratio", "teacher_gap_mean", "skill_sd_loss", "skill_sd_k3_mean", "skill_sd_ratio_mean",
             "entropy")


@dataclass
class UpdateSettings:
    micro_batch: int = 16
    mini_batches: int = 1
    grad_clip: float = 1.0
    teacher_extra_tokens: int = 1024  # the teacher prompt may exceed the student budget by the skill


def right_align(rows: Sequence[torch.Tensor], width: int) -> torch.Tensor:
    """1-D per-sample tensors -> ``[B, width]``, right-aligned like :func:`pack_left`'s responses."""
    out = torch.zeros(len(rows), width)
    for i, row in enumerate(rows):
        if len(row):
            out[i, width - len(row):] = row
    return out


def teacher_logprobs(policy: Policy, teacher_messages: Sequence[Any], responses: Sequence[list[int]],
                     extra_tokens: int = 1024, costs: PhaseCosts | None = None) -> list[torch.Tensor]:
    """θ_old log-probs of the identical response tokens under each sample's privileged prompt;
    an empty tensor where the sample has no teacher (its trajectory's skill failed to parse)."""
    rows = [i for i, m in enumerate(teacher_messages) if m is not None]
    # a wider budget: left-truncation must never cut the skill near the top
    prompts = [policy.encode_prompt(teacher_messages[i], extra_tokens=extra_tokens) for i in rows]
    scored = policy.logprobs_chunked(prompts, [responses[i] for i in rows])
    if costs is not None:
        costs.add("teacher_logprobs", count=forward_tokens(prompts, [responses[i] for i in rows]))
    out = [torch.zeros(0) for _ in responses]
    for index, values in zip(rows, scored):
        out[index] = values
    return out


def sample_advantages(samples: Sequence[StepSample], loss_config: LossConfig) -> torch.Tensor:
    """One advantage per step sample: GRPO's (§5), or GiGPO's A^E + ω·A^S when ω (``step_adv_coef``) is set."""
    if not samples:
        return torch.zeros(0)
    groups = [s.group_id for s in samples]
    if not loss_config.step_adv_coef:
        return group_advantages([s.reward for s in samples], groups)
    return gigpo_advantages([s.episode_reward for s in samples], [s.step_reward for s in samples], groups,
                            [s.episode_id for s in samples], [s.step for s in samples], [s.anchor for s in samples],
                            omega=loss_config.step_adv_coef, gamma=loss_config.gamma, use_std=loss_config.adv_std)


def has_dropout(model: torch.nn.Module) -> bool:
    """Whether a training-mode forward is random: a dropout module or a config dropout above 0
    (transformers' attention applies ``attention_dropout`` functionally, without a module)."""
    config = getattr(model, "config", None)
    rates = [value for key, value in (vars(config) if config is not None else {}).items()
             if ("dropout" in key or "pdrop" in key) and isinstance(value, (int, float)) and not isinstance(value, bool)]
    return any(rate > 0 for rate in rates) or any(
        isinstance(module, torch.nn.modules.dropout._DropoutNd) and module.p > 0 for module in model.modules())


def sampling_gap(samples: Sequence[StepSample], old: Sequence[torch.Tensor]) -> tuple[float, float]:
    """(sum of |engine - θ_old| log-prob over tokens, tokens) for samples whose rollout engine kept
    its log-probs of exactly these tokens."""
    total, tokens = 0.0, 0.0
    for sample, row in zip(samples, old):
        engine = sample.extra.get("sampling_logprobs")
        if engine is not None and len(engine) == len(row) > 0:
            total += float((torch.tensor(engine, dtype=torch.float64) - row.double()).abs().sum())
            tokens += len(row)
    return total, tokens


def rl_update(policy: Policy, reference: Policy | None, samples: Sequence[StepSample],
              teacher_messages: Sequence[Any] | None, optimizer: torch.optim.Optimizer,
              loss_config: LossConfig, settings: UpdateSettings = UpdateSettings(), *, seed: int = 0,
              parallel: DataParallel = SINGLE, costs: PhaseCosts | None = None) -> dict[str, float]:
    if not samples and not parallel.enabled:
        raise ValueError("no step samples: every episode of this update failed")
    costs = costs or PhaseCosts()
    # 1. tokens: student prompts and the identical sampled responses
    prompts = [policy.encode_prompt(s.messages) for s in samples]
    responses = [s.response_ids for s in samples]
    fed = forward_tokens(prompts, responses)

    # 2. fixed log-probs (no gradient): θ_old (unless the update's own forward gives them), reference, teacher
    policy.model.eval()
    old_from_update = settings.mini_batches == 1 and not has_dropout(policy.model)
    old: list[torch.Tensor] = [torch.zeros(0) for _ in samples]
    if not old_from_update:
        with costs.phase("old_logprobs"):
            old = policy.logprobs_chunked(prompts, responses)
        costs.add("old_logprobs", count=fed)
    ref = None
    if reference is not None and loss_config.kl_coef:
        with costs.phase("ref_logprobs"):
            ref = reference.logprobs_chunked(prompts, responses)
        costs.add("ref_logprobs", count=fed)
    wants_teacher = bool(loss_config.opd_coef or loss_config.skill_sd_coef)
    teacher = None
    if wants_teacher and teacher_messages is not None:
        with costs.phase("teacher_logprobs"):
            teacher = teacher_logprobs(policy, teacher_messages, responses, settings.teacher_extra_tokens, costs)
    has_teacher = torch.tensor([float(teacher is not None and len(teacher[i]) > 0) for i in range(len(samples))])

    # 3. advantages: R normalised over all step samples of the same task (GiGPO: plus step level)
    advantages = sample_advantages(samples, loss_config)

    # 4. optimiser steps over shuffled mini-batches of micro-batches
    updating = time.perf_counter()
    policy.model.train()
    order = torch.randperm(len(samples), generator=torch.Generator().manual_seed(seed)).tolist()
    owners = prompt_owners(prompts)
    per_mini = max(1, -(-len(order) // settings.mini_batches))
    totals: dict[str, float] = {}
    grad_norms: list[float] = []
    tokens_seen = 0.0
    for number in range(settings.mini_batches):  # every rank takes the same number of steps
        mini = order[number * per_mini:(number + 1) * per_mini]
        mini.sort(key=lambda i: owners[i])  # a prompt's rows share micro-batches: its pass runs once
        # token-mean over the mini-batch of *all* ranks: weights use the global token count
        mini_tokens = parallel.sum(float(sum(len(responses[i]) for i in mini))) or 1.0
        optimizer.zero_grad(set_to_none=True)
        starts = range(0, len(mini), settings.micro_batch)
        for _ in range(policy.lockstep(len(starts)) - len(starts)):  # sharded weights: as many passes as any rank
            policy.idle_pass(grad=True).backward()
        for m_start in starts:
            idx = mini[m_start:m_start + settings.micro_batch]
            logprobs, mask = policy.logprobs([prompts[i] for i in idx], [responses[i] for i in idx], grad=True)
            width, device = logprobs.shape[1], logprobs.device
            if old_from_update:
                for row, i in enumerate(idx):
                    old[i] = logprobs[row, width - len(responses[i]):].detach().cpu()
            loss, stats = total_loss(
                logprobs, right_align([old[i] for i in idx], width).to(device), advantages[idx].to(device), mask,
                loss_config,
                ref_logprobs=right_align([ref[i] for i in idx], width).to(device) if ref is not None else None,
                teacher_logprobs=right_align([teacher[i] for i in idx], width).to(device) if teacher is not None else None,
                teacher_mask=has_teacher[idx].to(device) if teacher is not None else None)
            share = float(mask.sum().item()) / mini_tokens
            (loss * share).backward()
            tokens_seen += float(mask.sum().item())
            for key, value in stats.items():
                totals[key] = totals.get(key, 0.0) + value * float(mask.sum().item())
        parallel.sum_gradients(policy.model)
        grad_norm = torch.nn.utils.clip_grad_norm_(policy.model.parameters(), settings.grad_clip)
        optimizer.step()
        grad_norm = grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm  # fsdp: a DTensor
        grad_norms.append(float(grad_norm))  # identical on every rank after the all-reduce
    policy.model.eval()
    costs.add("update", time.perf_counter() - updating, fed)

    # 5. statistics, token-weighted over the whole update and all ranks
    global_tokens = parallel.sum(tokens_seen)
    result = {key: parallel.sum(totals.get(key, 0.0)) / max(global_tokens, 1.0) for key in STAT_KEYS
              if parallel.sum(float(key in totals)) > 0}  # a term some rank computed
    result["grad_norm"] = sum(grad_norms) / len(grad_norms)
    count = parallel.sum(float(len(samples))) or 1.0
    result.update({
        "samples": count, "response_tokens": global_tokens,
        "reward_mean": parallel.sum(sum(s.reward for s in samples)) / count,
        "advantage_abs_mean": parallel.sum(float(advantages.abs().sum())) / count,
        "teacher_coverage": parallel.sum(float(has_teacher.sum())) / count if teacher is not None else 0.0,
        "format_valid_rate": parallel.sum(float(sum(s.valid_format for s in samples))) / count,
    })
    if parallel.sharded:
        result["rank_param_share"] = parallel.parameter_share(policy.model)
    else:
        result["rank_param_spread"] = parallel.parameter_spread(policy.model)
    gap, gap_tokens = (parallel.sum(value) for value in sampling_gap(samples, old))
    if gap_tokens:
        result["sampling_logprob_gap"] = gap / gap_tokens
    return result
