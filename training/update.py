"""One RL update — GRPO, OPSD, GRPO+OPSD, SDAR, SEED, Skill-SD — read top to bottom.

Given the step samples of one round of rollouts (:mod:`.batch`) and, per sample, the privileged
prompt of its teacher (or None), :func:`rl_update`:

1. tokenises every student prompt and its teacher prompt; response tokens are the *identical*
   sampled tokens for both (seed-method.md §6);
2. computes, once and without gradients, the log-probs of θ_old (the weights that sampled), of the
   frozen reference (for the k3 KL) and of the teacher (θ_old with the skill in the prompt);
3. computes group-normalised advantages over all step samples of each task (§5);
4. takes ``mini_batches`` optimiser steps; each accumulates micro-batches whose losses are
   weighted by their share of the mini-batch's response tokens, so the mini-batch loss is the
   token-mean of :func:`~seed_gym.training.losses.total_loss` however it is chunked;
5. returns the statistics the metrics log keeps: loss terms, gate mean, share of gates > 0.5,
   mean teacher gap, clip fraction, advantage and reward summaries.

Where the teacher comes from is the only difference between SDAR (static skill bank), SEED (the
policy's own hindsight skill), OPSD (ground-truth skill) — that choice lives in the trainer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from seed_gym.training.batch import StepSample
from seed_gym.training.distributed import SINGLE, DataParallel
from seed_gym.training.losses import LossConfig, group_advantages, total_loss
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
                     extra_tokens: int = 1024) -> list[torch.Tensor]:
    """θ_old log-probs of the identical response tokens under each sample's privileged prompt;
    an empty tensor where the sample has no teacher (its trajectory's skill failed to parse)."""
    rows = [i for i, m in enumerate(teacher_messages) if m is not None]
    # a wider budget: left-truncation must never cut the skill near the top
    prompts = [policy.encode_prompt(teacher_messages[i], extra_tokens=extra_tokens) for i in rows]
    scored = policy.logprobs_chunked(prompts, [responses[i] for i in rows])
    out = [torch.zeros(0) for _ in responses]
    for index, values in zip(rows, scored):
        out[index] = values
    return out


def rl_update(policy: Policy, reference: Policy | None, samples: Sequence[StepSample],
              teacher_messages: Sequence[Any] | None, optimizer: torch.optim.Optimizer,
              loss_config: LossConfig, settings: UpdateSettings = UpdateSettings(), *, seed: int = 0,
              parallel: DataParallel = SINGLE) -> dict[str, float]:
    if not samples and not parallel.enabled:
        raise ValueError("no step samples: every episode of this update failed")
    # 1. tokens: student prompts and the identical sampled responses
    prompts = [policy.encode_prompt(s.messages) for s in samples]
    responses = [s.response_ids for s in samples]

    # 2. fixed log-probs (no gradient): θ_old, reference, teacher
    policy.model.eval()
    old = policy.logprobs_chunked(prompts, responses)
    ref = reference.logprobs_chunked(prompts, responses) if reference is not None and loss_config.kl_coef else None
    wants_teacher = bool(loss_config.opd_coef or loss_config.skill_sd_coef)
    teacher = (teacher_logprobs(policy, teacher_messages, responses, settings.teacher_extra_tokens)
               if wants_teacher and teacher_messages else None)
    has_teacher = torch.tensor([float(teacher is not None and len(teacher[i]) > 0) for i in range(len(samples))])

    # 3. advantages: R normalised over all step samples of the same task
    advantages = (group_advantages([s.reward for s in samples], [s.group_id for s in samples])
                  if samples else torch.zeros(0))

    # 4. optimiser steps over shuffled mini-batches of micro-batches
    policy.model.train()
    order = torch.randperm(len(samples), generator=torch.Generator().manual_seed(seed)).tolist()
    per_mini = max(1, -(-len(order) // settings.mini_batches))
    totals: dict[str, float] = {}
    grad_norms: list[float] = []
    tokens_seen = 0.0
    for number in range(settings.mini_batches):  # every rank takes the same number of steps
        mini = order[number * per_mini:(number + 1) * per_mini]
        # token-mean over the mini-batch of *all* ranks: weights use the global token count
        mini_tokens = parallel.sum(float(sum(len(responses[i]) for i in mini))) or 1.0
        optimizer.zero_grad(set_to_none=True)
        for m_start in range(0, len(mini), settings.micro_batch):
            idx = mini[m_start:m_start + settings.micro_batch]
            logprobs, mask = policy.logprobs([prompts[i] for i in idx], [responses[i] for i in idx], grad=True)
            width, device = logprobs.shape[1], logprobs.device
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
        grad_norms.append(float(grad_norm))  # identical on every rank after the all-reduce
    policy.model.eval()

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
        "rank_param_spread": parallel.parameter_spread(policy.model),
    })
    return result
