"""Losses for GRPO, SEED and their baselines: pure torch functions, no model code.

Everything below follows docs/seed-method.md (the "brief"); section numbers (§) refer to it.
Token tensors are shaped [B, L]: B step samples (one per env step, §5 "verl-agent GRPO details"),
L response tokens, with ``mask`` [B, L] = 1 on valid response tokens and 0 elsewhere.

Read top to bottom:

1. rewards      ``episode_reward``, ``step_rewards``        (§3)
2. advantages   ``group_advantages`` (§5, GRPO across steps), ``gigpo_advantages`` (§11)
3. aggregation  ``masked_mean``                              (verl "token-mean")
4. RL terms     ``ppo_clip_loss``, ``k3_kl``                 (§5 L_rl)
5. distillation ``opd_loss`` (SEED / SDAR / OPSD), ``skill_sd_loss`` (Skill-SD)   (§5, §11)
6. wiring       ``LossConfig`` presets and ``total_loss``    (§9, §11)

Gradient conventions: the teacher, the reference policy and the rollout policy (old) are always
treated as constants (stop-gradient); only ``logprobs`` / ``student_logprobs`` (the policy being
updated, π_θ) carry gradient, and each docstring states through which terms.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from seed_gym.training.algorithms import algorithm

__all__ = [
    "episode_reward", "step_rewards",
    "group_advantages", "discounted_returns", "gigpo_advantages", "masked_mean", "ppo_clip_loss", "k3_kl", "opd_loss", "skill_sd_loss",
    "LossConfig", "total_loss",
]

# ---------------------------------------------------------------------------------------------
# 1. Rewards (§3)
# ---------------------------------------------------------------------------------------------

def episode_reward(scale: float, won: bool) -> float:
    """The episode reward R(τ) of §3: ``scale * won``.

    ``scale`` is the env profile's ``reward_scale`` (seed-method.md §3 gives each benchmark's) and
    ``won`` the episode's success flag as the env records it (the raw env score, where it is not
    0/1, is kept elsewhere as ``task_score``).

    >>> episode_reward(10.0, True), episode_reward(10.0, False)
    (10.0, 0.0)
    """
    return scale * float(won)


def step_rewards(episode_reward: float, invalid_flags: Sequence[bool], penalty: float) -> list[float]:
    """Score of every step sample of one trajectory (§3).

    Rule: every step sample carries the *episode* reward (it sits on the last response token of
    each step sample), and a step whose action was invalid has ``penalty`` subtracted from its own
    score only; other steps are untouched. ``penalty`` is the env profile's ``invalid_penalty``
    (a step is invalid for missing tags or CJK characters).

    >>> step_rewards(10.0, [False, True, False], 0.1)
    [10.0, 9.9, 10.0]
    """
    return [episode_reward - penalty * float(invalid) for invalid in invalid_flags]


# ---------------------------------------------------------------------------------------------
# 2. Group-normalised advantages (§5)
# ---------------------------------------------------------------------------------------------

def group_advantages(rewards: Tensor | Sequence[float], group_ids: Sequence[Hashable],
                     traj_ids: Sequence[Hashable] | None = None, eps: float = 1e-6) -> Tensor:
    """GRPO advantage per step sample: A = (R − μ_g) / (σ_g + eps)   (§5, verl-agent).

    ``rewards[i]`` is the score of step sample i (``step_rewards``) and ``group_ids[i]`` its task
    (the group of N rollouts of one task). Rules:

    * μ_g, σ_g are taken over all step samples of the group (verl-agent
      ``compute_mean_std_cross_steps=True``, the setting of the brief), so long trajectories weigh
      more in the statistics. With ``traj_ids`` given, each trajectory instead contributes once
      (its first step sample in batch order), which is ``compute_mean_std_cross_steps=False``;
      every sample is still normalised with its own score.
    * σ is the unbiased (Bessel-corrected, n − 1) standard deviation, as verl-agent's
      ``torch.std`` call. Equal scores give σ = 0 and hence A = 0.
    * A group with a single member gets A = 0: nothing to compare with. (verl-agent instead uses
      μ = 0, σ = 1 there, i.e. A = R; it never occurs with N = 8.)

    Returns a float32 tensor [N_samples]; broadcast it over tokens with the mask downstream.
    """
    # float64: float32 means of equal scores can miss the score by an ulp, and dividing that by
    # (0 + eps) would turn rounding noise into advantages of order 1e-2.
    rewards = torch.as_tensor(rewards, dtype=torch.float64)
    if rewards.ndim != 1 or len(group_ids) != rewards.numel():
        raise ValueError("rewards must be 1-D with one group id per sample")
    if traj_ids is not None and len(traj_ids) != len(group_ids):
        raise ValueError("need one trajectory id per sample")

    members: dict[Hashable, list[int]] = {}  # group -> sample indices
    counted: dict[Hashable, list[int]] = {}  # group -> samples that enter μ, σ
    seen_trajs: set[tuple[Hashable, Hashable]] = set()
    for i, group in enumerate(group_ids):
        members.setdefault(group, []).append(i)
        if traj_ids is None or (group, traj_ids[i]) not in seen_trajs:
            counted.setdefault(group, []).append(i)
            if traj_ids is not None:
                seen_trajs.add((group, traj_ids[i]))

    advantages = torch.zeros_like(rewards)
    for group, indices in members.items():
        stats = rewards[counted[group]]
        if stats.numel() < 2 or bool(stats.min() == stats.max()):
            continue  # a singleton group or equal scores: nothing to prefer, advantage stays 0
        mu, sigma = stats.mean(), stats.std(unbiased=True)
        advantages[indices] = (rewards[indices] - mu) / (sigma + eps)
    return advantages.float()


def discounted_returns(rewards: Sequence[float], gamma: float) -> list[float]:
    """R_t = Σ_{k≥t} γ^{k−t}·r_k for the step rewards of one trajectory, in step order (§11 GiGPO).

    >>> discounted_returns([0.0, 0.0, 10.0], 0.5)
    [2.5, 5.0, 10.0]
    """
    returns, running = [0.0] * len(rewards), 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        returns[t] = running
    return returns


def _normalise(values: Tensor, members: dict[Hashable, list[int]], use_std: bool, eps: float) -> Tensor:
    """(v − mean_g)/F_norm within each group g; F_norm = σ_g + eps (unbiased σ) or 1. A group with one
    member, or equal values, gives 0."""
    out = torch.zeros_like(values)
    for indices in members.values():
        group = values[indices]
        if group.numel() < 2 or bool(group.min() == group.max()):
            continue
        scale = group.std(unbiased=True) + eps if use_std else 1.0
        out[indices] = (group - group.mean()) / scale
    return out


def gigpo_advantages(episode_rewards: Sequence[float], step_rewards: Sequence[float],
                     group_ids: Sequence[Hashable], traj_ids: Sequence[Hashable], steps: Sequence[int],
                     anchors: Sequence[Hashable], *, omega: float = 1.0, gamma: float = 0.95,
                     use_std: bool = True, eps: float = 1e-6) -> Tensor:
    """GiGPO advantage per step sample: A = A^E + ω·A^S  (arXiv 2505.10978; §11).

    One entry per step sample i: ``episode_rewards[i]`` is R(τ) of its trajectory, ``step_rewards[i]``
    the reward r_t of its own step, ``traj_ids[i]`` / ``steps[i]`` say which trajectory and step it is,
    ``anchors[i]`` the state it acted in (the env observation text; identical text = identical state).

    * A^E (episode level): (R(τ_i) − mean_j R(τ_j)) / F_norm over the trajectories of the task group,
      each trajectory counted once (unlike ``group_advantages``' cross-step statistics), given to
      every step of the trajectory.
    * A^S (step level): R_t = Σ_{k≥t} γ^{k−t} r_k within the trajectory; the anchor group G^S is every
      step of the same task group whose anchor is identical, across all its trajectories (and within
      one, when a state recurs); A^S = (R_t − mean_{G^S} R) / F_norm.
    * F_norm = σ + eps (unbiased σ, "w/ std", ``use_std``) or 1 ("w/o std"). A group of one, or of
      equal values, gives 0, as the formula's R − mean does for a single member (verl-agent instead
      uses mean 0 and σ 1 for a singleton step group, i.e. A^S = R_t).

    Returns a float32 tensor [N_samples].
    """
    n = len(group_ids)
    if not (len(episode_rewards) == len(step_rewards) == len(traj_ids) == len(steps) == len(anchors) == n):
        raise ValueError("need one episode reward, step reward, trajectory id, step and anchor per sample")
    trajectories: dict[tuple[Hashable, Hashable], list[int]] = {}
    for i in range(n):
        trajectories.setdefault((group_ids[i], traj_ids[i]), []).append(i)

    returns = torch.zeros(n, dtype=torch.float64)
    for indices in trajectories.values():
        indices = sorted(indices, key=lambda i: steps[i])
        returns[indices] = torch.tensor(discounted_returns([step_rewards[i] for i in indices], gamma),
                                        dtype=torch.float64)

    # episode level: one value per trajectory, normalised within its task group
    keys = list(trajectories)
    per_traj = torch.tensor([float(episode_rewards[trajectories[k][0]]) for k in keys], dtype=torch.float64)
    by_task: dict[Hashable, list[int]] = {}
    for index, (group, _) in enumerate(keys):
        by_task.setdefault(group, []).append(index)
    episode_adv = _normalise(per_traj, by_task, use_std, eps)
    advantages = torch.zeros(n, dtype=torch.float64)
    for index, key in enumerate(keys):
        advantages[trajectories[key]] = episode_adv[index]

    # step level: anchor groups of identical states within a task group
    anchor_groups: dict[Hashable, list[int]] = {}
    for i in range(n):
        anchor_groups.setdefault((group_ids[i], anchors[i]), []).append(i)
    return (advantages + omega * _normalise(returns, anchor_groups, use_std, eps)).float()


# ---------------------------------------------------------------------------------------------
# 3. Aggregation
# ---------------------------------------------------------------------------------------------

def masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    """Token-mean: Σ mask·x / Σ mask over *all* valid tokens of the batch (verl "token-mean").

    Every valid token weighs the same, so long responses count more than short ones (unlike a mean
    of per-sequence means). An all-zero mask gives 0, not NaN. With gradient accumulation, weight
    each micro-batch's loss by its share of the mini-batch's valid tokens to keep this a token-mean.
    """
    mask = mask.to(x.dtype)
    return (x * mask).sum() / mask.sum().clamp_min(1.0)


def _row_to_tokens(values: Tensor, like: Tensor) -> Tensor:
    """Broadcast a per-sample tensor [B] to [B, L]; a [B, L] tensor passes unchanged."""
    return values.unsqueeze(-1).expand_as(like) if values.ndim == 1 else values


# ---------------------------------------------------------------------------------------------
# 4. RL terms: PPO clip and k3 KL (§5 L_rl)
# ---------------------------------------------------------------------------------------------

def ppo_clip_loss(logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor, mask: Tensor,
                  clip: float = 0.2, dual_clip: float | None = None) -> tuple[Tensor, dict[str, float]]:
    """Clipped surrogate  L = −token-mean[min(ρA, clip(ρ, 1 ± clip)·A)],  ρ = exp(ℓ^θ − ℓ^old)  (§5).

    ``advantages`` is [B] (one per step sample, broadcast to its tokens) or [B, L].
    ``dual_clip`` = c > 1 (dual-clip PPO, c = 3 in the SDAR/verl scripts) additionally caps the
    loss of a token with A < 0 at −c·A, so a huge ratio on a bad token cannot blow up the step.

    Gradient: −A·ρ·∇ℓ^θ / Σm on tokens where the unclipped term is the active one, and exactly 0
    where clipping is active: A > 0 with ρ > 1 + clip, A < 0 with ρ < 1 − clip, and (dual clip)
    A < 0 with ρ > c.

    Stats: ``pg_loss``; ``clip_frac``, the share of valid tokens where the clipped term is the
    active one; ``dual_clip_frac``, the share where the dual cap is active; ``approx_kl`` =
    token-mean(ℓ^old − ℓ^θ), the k1 estimate of KL(π_old‖π_θ) (verl's ``ppo_kl``).
    """
    advantages = _row_to_tokens(advantages.detach(), logprobs)
    # exp of a clamped log-ratio: a stale token cannot overflow (verl clamps at ±20 too).
    log_ratio = (logprobs - old_logprobs.detach()).clamp(-20.0, 20.0)
    ratio = torch.exp(log_ratio)

    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1.0 - clip, 1.0 + clip)
    per_token = torch.maximum(unclipped, clipped)  # max of losses = min of objectives
    dual_active = torch.zeros_like(per_token, dtype=torch.bool)
    if dual_clip is not None:
        if dual_clip <= 1.0:
            raise ValueError("dual_clip must be > 1")
        cap = -advantages * dual_clip
        dual_active = (advantages < 0) & (per_token > cap)
        per_token = torch.where(dual_active, cap, per_token)

    loss = masked_mean(per_token, mask)
    stats = {
        "pg_loss": loss.item(),
        "clip_frac": masked_mean((clipped > unclipped).float(), mask).item(),
        "dual_clip_frac": masked_mean(dual_active.float(), mask).item(),
        "approx_kl": masked_mean(-log_ratio.detach(), mask).item(),
    }
    return loss, stats


def k3_kl(logprobs: Tensor, ref_logprobs: Tensor, mask: Tensor) -> Tensor:
    """k3 ("low_var_kl") estimate of KL(π_θ‖π_ref): token-mean of e^r − r − 1, r = ℓ^ref − ℓ^θ.

    Clamped as verl's ``low_var_kl``: r to [−20, 20] before the exp, and the per-token value to
    [−10, 10] (the lower bound never binds, k3 ≥ 0). A clamped token gets zero gradient.

    Gradient per valid token: (1 − e^r)·∇ℓ^θ / Σm = (1 − π_ref/π_θ)·∇ℓ^θ / Σm. Used as a loss, this
    is, in expectation, the gradient of KL(π_ref‖π_θ) rather than of KL(π_θ‖π_ref); it is what
    verl (and so every code in the brief) optimises, so we keep it.
    """
    r = (ref_logprobs.detach() - logprobs).clamp(-20.0, 20.0)
    per_token = (torch.exp(r) - r - 1.0).clamp(-10.0, 10.0)
    return masked_mean(per_token, mask)


# ---------------------------------------------------------------------------------------------
# 5. Distillation terms (§5, §6, §11)
# ---------------------------------------------------------------------------------------------

def _apply_row_mask(mask: Tensor, row_mask: Tensor | None) -> Tensor:
    """Zero the tokens of samples whose ``row_mask`` is 0 (e.g. the skill failed to parse)."""
    if row_mask is None:
        return mask
    return mask * _row_to_tokens(row_mask.to(mask.dtype), mask)


def opd_loss(student_logprobs: Tensor, teacher_logprobs: Tensor, mask: Tensor, beta: float = 5.0,
             gate: str = "gap", row_mask: Tensor | None = None) -> tuple[Tensor, dict[str, float]]:
    """SEED / SDAR gated on-policy distillation (§5, §6, §11 SDAR):

        Δ = sg[ℓ^skill − ℓ^θ],   g = σ(β·Δ) (detached),   L = Σ m·g·(sg[ℓ^skill] − ℓ^θ) / Σ m

    ``student_logprobs`` = ℓ^θ, the current policy on the plain prompt (carries gradient);
    ``teacher_logprobs`` = ℓ^skill, the θ_old policy re-scoring the *same* tokens with the skill in
    the prompt (constant). ``gate="gap"`` is the default gate of SDAR (the only one implemented:
    the entropy and soft-OR gates need per-token entropies).

    Gradient: ∇L = −Σ m·g·∇ℓ^θ / Σ m, a gate-weighted NLL of the sampled tokens. Tokens the
    teacher endorses (Δ > 0) get g → 1; rejected ones (Δ < 0) get g → 0, i.e. they are attenuated,
    never pushed down. β = 0 gives g ≡ 0.5 exactly (the GRPO+OPSD baseline).

    ``row_mask`` [B] (or fold it into ``mask`` yourself) removes samples with no teacher signal, for
    instance trajectories whose skill failed to parse: their tokens leave both the numerator and the
    denominator Σ m.

    Stats (§6 step 5): ``opd_loss``; ``gate_mean`` (mean g); ``gate_active_ratio`` (share of valid
    tokens with g > 0.5, i.e. Δ > 0 when β > 0); ``teacher_gap_mean`` (mean Δ), all over valid tokens.
    """
    if gate != "gap":
        raise ValueError(f"unknown gate {gate!r}; only 'gap' (σ(β·Δ)) is implemented")
    mask = _apply_row_mask(mask, row_mask)
    teacher = teacher_logprobs.detach()
    gap = (teacher - student_logprobs).detach()  # Δ, uses the *current* student
    g = torch.sigmoid(beta * gap)  # detached because Δ is
    loss = masked_mean(g * (teacher - student_logprobs), mask)
    stats = {
        "opd_loss": loss.item(),
        "gate_mean": masked_mean(g, mask).item(),
        "gate_active_ratio": masked_mean((g > 0.5).float(), mask).item(),
        "teacher_gap_mean": masked_mean(gap, mask).item(),
    }
    return loss, stats


def skill_sd_loss(student_logprobs: Tensor, teacher_logprobs: Tensor, old_logprobs: Tensor,
                  mask: Tensor, row_mask: Tensor | None = None) -> tuple[Tensor, dict[str, float]]:
    """Skill-SD importance-weighted k3 reverse KL (§11 Skill-SD, SDAR ``skillsd_utils.py``):

        ℓ = ℓ^θ − ℓ^skill,  k3 = e^{−ℓ} − 1 + ℓ,  ρ_on = exp(ℓ^θ − ℓ^old),  L = token-mean(ρ_on·k3)

    with −ℓ clamped to ≤ 20 (before both uses, so a clamped token's k3 is constant) and the log
    of ρ_on clamped to ≤ 10. The coefficient (0.001) is applied by the caller.

    Which terms carry gradient: ℓ^θ does, in *both* places, k3 and ρ_on; the teacher ℓ^skill and
    the rollout policy ℓ^old are constants. ρ_on must not be detached: then
    ∇(ρ·k3) = ρ·(k3 + 1 − e^{−ℓ})·∇ℓ^θ = ρ·ℓ·∇ℓ^θ, and since the tokens were sampled from
    π_old, E_old[ρ·ℓ·∇ℓ^θ] = E_θ[(ℓ^θ − ℓ^skill)·∇ℓ^θ] = ∇KL(π_θ‖π_skill): the exact gradient of the
    reverse KL (the paper's "gradient-correct" loss). Detaching ρ would leave ρ·(1 − e^{−ℓ})·∇ℓ^θ,
    whose expectation is the *forward* KL gradient. Where a clamp binds, that factor is constant
    and passes no gradient.

    Stats: ``skill_sd_loss``, ``skill_sd_k3_mean`` (mean k3), ``skill_sd_ratio_mean`` (mean ρ_on).
    """
    mask = _apply_row_mask(mask, row_mask)
    neg_ell = (teacher_logprobs.detach() - student_logprobs).clamp(max=20.0)  # −ℓ
    k3 = torch.exp(neg_ell) - 1.0 - neg_ell
    ratio = torch.exp((student_logprobs - old_logprobs.detach()).clamp(max=10.0))
    loss = masked_mean(ratio * k3, mask)
    stats = {
        "skill_sd_loss": loss.item(),
        "skill_sd_k3_mean": masked_mean(k3.detach(), mask).item(),
        "skill_sd_ratio_mean": masked_mean(ratio.detach(), mask).item(),
    }
    return loss, stats


# ---------------------------------------------------------------------------------------------
# 6. Configuration and the total loss (§9, §11)
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LossConfig:
    """Coefficients of the actor loss. The defaults are SEED's (§9); each algorithm's preset is its
    diff in :data:`~seed_gym.training.algorithms.ALGORITHMS`, so build configs with
    ``LossConfig.for_algo(name, **overrides)``.

    * ``dual_clip`` = 3: verl's ``clip_ratio_c`` default, active in all the verl-based codes of
      the brief (SDAR scripts state it; the SEED paper is silent).
    * ``entropy_coef``: the SDAR actor subtracts 0.001·entropy; whether SEED does is [U], so every
      preset leaves it at 0 (override it to match the SDAR scripts).
    * ``kl_coef``: 0.01; the SDAR Search scripts use 0.001 (override per env).
    * ``step_adv_coef`` (ω), ``gamma``, ``adv_std``: GiGPO's advantage (:func:`gigpo_advantages`);
      with ω = 0 the advantage is GRPO's (:func:`group_advantages`).
    """

    algo: str = "seed"
    pg_coef: float = 1.0  # weight of the PPO clip term (0 = pure distillation, "opsd")
    clip: float = 0.2
    dual_clip: float | None = 3.0
    kl_coef: float = 0.01  # β_KL of the k3 KL to the frozen reference
    opd_coef: float = 0.01  # λ of the gated OPD loss
    gate_beta: float = 5.0  # β of the gate σ(β·Δ); 0 gives g ≡ 0.5
    skill_sd_coef: float = 0.0  # weight of the Skill-SD k3 term
    entropy_coef: float = 0.0
    step_adv_coef: float = 0.0  # ω of GiGPO's step-level advantage (0: GRPO's advantage)
    gamma: float = 0.95  # GiGPO's discount of step returns
    adv_std: bool = True  # GiGPO's F_norm: σ ("w/ std") or 1 ("w/o std")

    @classmethod
    def for_algo(cls, algo: str, **overrides: float | None) -> LossConfig:
        """The preset of ``algo`` (a name in the algorithm table, or an alias such as "grpo+opsd"),
        with ``overrides`` (sweeps) on top. An override of None is kept (``dual_clip=None`` = off)."""
        entry = algorithm(algo)
        return cls(algo=entry.name, **{**entry.loss, **overrides})

    def __post_init__(self) -> None:
        # What defines an algorithm cannot be overridden: a term its preset switches off stays
        # off, one it switches on stays on (LossConfig("grpo") would otherwise silently carry
        # SEED's OPD coefficient). Other values, e.g. β or λ in a sweep, are free.
        for name, value in algorithm(self.algo).loss.items():
            if (getattr(self, name) == 0.0) != (value == 0.0):
                raise ValueError(f"{self.algo} needs {name} {'= 0' if value == 0.0 else '!= 0'}; "
                                 f"use LossConfig.for_algo({self.algo!r})")


def _require(tensor: Tensor | None, name: str, term: str) -> Tensor:
    if tensor is None:
        raise ValueError(f"{term} is on but {name} was not given")
    return tensor


def total_loss(logprobs: Tensor, old_logprobs: Tensor, advantages: Tensor, mask: Tensor,
               config: LossConfig, *, ref_logprobs: Tensor | None = None,
               teacher_logprobs: Tensor | None = None, teacher_mask: Tensor | None = None,
               entropy: Tensor | None = None) -> tuple[Tensor, dict[str, float]]:
    """The actor loss of one mini-batch (§5 box, §11 SDAR actor total):

        L = pg_coef·L_ppo + kl_coef·KL_k3 + opd_coef·L_opd + skill_sd_coef·L_skill_sd − entropy_coef·H

    A term with coefficient 0 is skipped and its inputs may be None. ``teacher_mask`` ([B] or
    [B, L]) is 1 for samples with a teacher signal (their trajectory's skill parsed). Stats are
    plain floats: ``loss`` plus those of each active term (``kl_loss``, ``entropy``).
    """
    loss = logprobs.new_zeros(())
    stats: dict[str, float] = {}
    if config.pg_coef:
        pg, pg_stats = ppo_clip_loss(logprobs, old_logprobs, advantages, mask, config.clip, config.dual_clip)
        loss, stats = loss + config.pg_coef * pg, stats | pg_stats
    if config.kl_coef:
        kl = k3_kl(logprobs, _require(ref_logprobs, "ref_logprobs", "the KL term"), mask)
        loss, stats = loss + config.kl_coef * kl, stats | {"kl_loss": kl.item()}
    if config.opd_coef:
        teacher = _require(teacher_logprobs, "teacher_logprobs", "the OPD term")
        opd, opd_stats = opd_loss(logprobs, teacher, mask, config.gate_beta, row_mask=teacher_mask)
        loss, stats = loss + config.opd_coef * opd, stats | opd_stats
    if config.skill_sd_coef:
        teacher = _require(teacher_logprobs, "teacher_logprobs", "the Skill-SD term")
        sd, sd_stats = skill_sd_loss(logprobs, teacher, old_logprobs, mask, row_mask=teacher_mask)
        loss, stats = loss + config.skill_sd_coef * sd, stats | sd_stats
    if config.entropy_coef:
        ent = masked_mean(_require(entropy, "entropy", "the entropy bonus"), mask)
        loss, stats = loss - config.entropy_coef * ent, stats | {"entropy": ent.item()}
    stats["loss"] = loss.item()
    return loss, stats
