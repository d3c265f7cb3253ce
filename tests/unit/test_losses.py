"""Losses as specifications: every value and gradient below is worked out by hand in the comments.

Gradients are checked with autograd on a leaf tensor of student log-probs and compared with the
hand-derived formula of docs/seed-method.md (§5, §11).
"""

import dataclasses
import math

import pytest

torch = pytest.importorskip("torch", reason="the losses need torch (the [train] extra)")

from seed_gym.training.algorithms import ALGORITHMS
from seed_gym.training.losses import (
    LossConfig,
    episode_reward,
    group_advantages,
    k3_kl,
    masked_mean,
    opd_loss,
    ppo_clip_loss,
    skill_sd_loss,
    step_rewards,
    total_loss,
)

LN = math.log


def leaf(values):
    """Float64 leaf tensor that collects gradients (float64 keeps hand arithmetic exact enough)."""
    return torch.tensor(values, dtype=torch.float64, requires_grad=True)


def const(values):
    return torch.tensor(values, dtype=torch.float64)


def assert_close(actual, expected):
    """Element-wise comparison of a tensor with a nested list of hand-computed values."""
    torch.testing.assert_close(actual.detach().to(torch.float64), const(expected), rtol=1e-6, atol=1e-9)


def sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x))


# ---------------------------------------------------------------------------------------------
# Rewards and the invalid-action penalty (§3)
# ---------------------------------------------------------------------------------------------

def test_episode_reward_is_the_profile_scale_times_won():
    assert episode_reward(10.0, True) == 10.0 and episode_reward(10.0, False) == 0.0
    assert episode_reward(1.0, True) == 1.0  # Search: exact match


@pytest.mark.parametrize("env_id, scale, penalty", [
    ("alfworld", 10.0, 0.1), ("webshop", 10.0, 0.1), ("webshop-browser", 10.0, 0.1), ("searchqa", 1.0, 0.01)])
def test_built_in_profiles_carry_the_papers_reward_rule(env_id, scale, penalty):
    from seed_gym.registry import profile

    assert (profile(env_id).reward_scale, profile(env_id).invalid_penalty) == (scale, penalty)


def test_penalty_hits_only_the_invalid_step():
    # Won ALFWorld episode, step 1 invalid: 10 on every step, 10 − 0.1 on step 1 only.
    assert step_rewards(10.0, [False, True, False], 0.1) == pytest.approx([10.0, 9.9, 10.0])
    # Failed Search episode, both steps invalid: 0 − 0.01 each.
    assert step_rewards(0.0, [True, True], 0.01) == pytest.approx([-0.01, -0.01])
    assert step_rewards(1.0, [], 0.01) == []


# ---------------------------------------------------------------------------------------------
# Group advantages (§5)
# ---------------------------------------------------------------------------------------------

def test_group_advantage_uses_unbiased_std():
    # Group "a": scores 10, 0, 0, 10 → μ = 5, squared deviations 4·25 = 100,
    # unbiased σ = sqrt(100/3) = 5.7735 → A = ±5/5.7735 = ±0.8660 (a biased σ = 5 would give ±1).
    adv = group_advantages(torch.tensor([10.0, 0.0, 0.0, 10.0]), ["a"] * 4)
    expected = 5 / math.sqrt(100 / 3)
    assert adv.tolist() == pytest.approx([expected, -expected, -expected, expected], rel=1e-5)


def test_groups_are_separate_and_degenerate_groups_get_zero():
    # a: [1, 3] → μ 2, σ = sqrt(2/1) = 1.4142 → ∓0.7071; b: one member → 0; c: equal scores → σ 0 → 0.
    adv = group_advantages([1.0, 7.0, 3.0, 5.0, 5.0], [("t", 1), "b", ("t", 1), "c", "c"])
    assert adv.tolist() == pytest.approx([-1 / math.sqrt(2), 0.0, 1 / math.sqrt(2), 0.0, 0.0], rel=1e-5)


def test_statistics_cross_steps_or_per_trajectory():
    # One task: trajectory t0 won (3 steps, score 10 each), t1 lost (1 step, score 0).
    rewards, groups, trajs = [10.0, 10.0, 10.0, 0.0], ["q"] * 4, ["t0", "t0", "t0", "t1"]
    # Across steps: μ = 30/4 = 7.5; squares 3·2.5² + 7.5² = 18.75 + 56.25 = 75; σ = sqrt(75/3) = 5
    # → A = 2.5/5 = 0.5 for t0's steps, −7.5/5 = −1.5 for t1.
    assert group_advantages(rewards, groups).tolist() == pytest.approx([0.5, 0.5, 0.5, -1.5], rel=1e-5)
    # One score per trajectory: stats over [10, 0] → μ 5, σ = sqrt(50) = 7.0711 → ±0.7071.
    per_traj = group_advantages(rewards, groups, traj_ids=trajs)
    assert per_traj.tolist() == pytest.approx([1 / math.sqrt(2)] * 3 + [-1 / math.sqrt(2)], rel=1e-5)


def test_penalised_steps_get_a_lower_advantage_than_their_siblings():
    # Scores 10, 9.9 (invalid step), 0, 0: μ = 19.9/4 = 4.975; the invalid step is below its sibling.
    adv = group_advantages(step_rewards(10.0, [False, True], 0.1) + step_rewards(0.0, [False, False], 0.1),
                           ["q"] * 4)
    deviations = [10 - 4.975, 9.9 - 4.975, -4.975, -4.975]
    sigma = math.sqrt(sum(d * d for d in deviations) / 3)
    assert adv.tolist() == pytest.approx([d / sigma for d in deviations], rel=1e-5)
    assert adv[1] < adv[0]


# ---------------------------------------------------------------------------------------------
# Token-mean
# ---------------------------------------------------------------------------------------------

def test_masked_mean_is_a_token_mean():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    mask = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
    # (1 + 3 + 4) / 3 valid tokens = 8/3, not the mean of row means (1 + 3.5)/2 = 2.25.
    assert masked_mean(x, mask).item() == pytest.approx(8 / 3)
    assert masked_mean(x, torch.zeros(2, 2)).item() == 0.0  # empty batch: 0, not NaN


# ---------------------------------------------------------------------------------------------
# PPO clip
# ---------------------------------------------------------------------------------------------

RATIOS = [0.5, 1.0, 1.1, 1.5]


def ppo_inputs():
    """Two rows with ratios 0.5, 1, 1.1, 1.5 (old log-probs 0); row 0 has A = +2, row 1 A = −1."""
    logprobs = leaf([[LN(r) for r in RATIOS]] * 2)
    return logprobs, const([[0.0] * 4] * 2), const([2.0, -1.0]), torch.ones(2, 4, dtype=torch.float64)


def test_ppo_clip_value_and_stats():
    logprobs, old, adv, mask = ppo_inputs()
    loss, stats = ppo_clip_loss(logprobs, old, adv, mask, clip=0.2)
    # A = +2: −2·min(r, clip(r, 0.8, 1.2)) = −1.0, −2.0, −2.2, −2.4 (r = 1.5 clipped to 1.2)
    # A = −1: +max(r, clip(r))            =  0.8,  1.0,  1.1,  1.5 (r = 0.5 clipped to 0.8)
    # token-mean over 8: (−7.6 + 4.4)/8 = −0.4
    assert loss.item() == pytest.approx(-0.4)
    assert stats["pg_loss"] == pytest.approx(-0.4)
    assert stats["clip_frac"] == pytest.approx(2 / 8)  # (A>0, r=1.5) and (A<0, r=0.5)
    # approx_kl = mean(old − new) = −2·(ln 0.5 + ln 1 + ln 1.1 + ln 1.5)/8
    assert stats["approx_kl"] == pytest.approx(-2 * sum(LN(r) for r in RATIOS) / 8)
    assert all(isinstance(v, float) for v in stats.values())


def test_ppo_clip_gradient_is_zero_outside_the_clip_range_for_the_sign_of_a():
    logprobs, old, adv, mask = ppo_inputs()
    loss, _ = ppo_clip_loss(logprobs, old, adv, mask, clip=0.2)
    loss.backward()
    # Unclipped token: ∂/∂ℓ (−A·e^{ℓ−ℓold}) / 8 = −A·r/8. Clipped token: 0.
    # A = +2: −0.125, −0.25, −0.275, 0 (r = 1.5 > 1.2 clipped)
    # A = −1:  0 (r = 0.5 < 0.8 clipped), 0.125, 0.1375, 0.1875 (r = 1.5 is NOT clipped for A < 0)
    expected = [[-2 * 0.5 / 8, -2 * 1.0 / 8, -2 * 1.1 / 8, 0.0], [0.0, 1.0 / 8, 1.1 / 8, 1.5 / 8]]
    assert logprobs.grad.tolist()[0] == pytest.approx(expected[0])
    assert logprobs.grad.tolist()[1] == pytest.approx(expected[1])


def test_ppo_per_token_advantages_match_broadcast_ones():
    logprobs, old, adv, mask = ppo_inputs()
    per_sample, _ = ppo_clip_loss(logprobs, old, adv, mask)
    per_token, _ = ppo_clip_loss(logprobs, old, adv[:, None].expand(2, 4), mask)
    assert per_token.item() == pytest.approx(per_sample.item())


def test_ppo_dual_clip_caps_negative_advantage_tokens():
    # A = −1, ratios 4 and 2, c = 3. Standard: max(4, 1.2) = 4 and max(2, 1.2) = 2.
    # Dual clip: min(4, 3) = 3 (capped, zero gradient) and min(2, 3) = 2 (gradient 2/2 = 1).
    logprobs = leaf([[LN(4.0), LN(2.0)]])
    loss, stats = ppo_clip_loss(logprobs, const([[0.0, 0.0]]), const([-1.0]), torch.ones(1, 2), dual_clip=3.0)
    assert loss.item() == pytest.approx((3 + 2) / 2)
    assert stats["dual_clip_frac"] == pytest.approx(0.5)
    loss.backward()
    assert_close(logprobs.grad, [[0.0, 1.0]])
    # Without the dual clip the ratio-4 token keeps its gradient 4/2 = 2.
    logprobs = leaf([[LN(4.0), LN(2.0)]])
    loss, _ = ppo_clip_loss(logprobs, const([[0.0, 0.0]]), const([-1.0]), torch.ones(1, 2))
    loss.backward()
    assert loss.item() == pytest.approx(3.0)
    assert_close(logprobs.grad, [[2.0, 1.0]])


def test_ppo_masked_tokens_have_no_value_and_no_gradient():
    # Token 1 is padding with an absurd ratio e^15; the loss is token 0 alone: −1·1 = −1.
    logprobs = leaf([[0.0, 15.0]])
    loss, _ = ppo_clip_loss(logprobs, const([[0.0, 0.0]]), const([1.0]), const([[1.0, 0.0]]))
    loss.backward()
    assert loss.item() == pytest.approx(-1.0)
    assert_close(logprobs.grad, [[-1.0, 0.0]])


# ---------------------------------------------------------------------------------------------
# k3 KL to the reference
# ---------------------------------------------------------------------------------------------

def test_k3_kl_value_and_gradient():
    # r = ℓref − ℓ: token 0 r = ln 0.5 → 0.5 − ln 0.5 − 1 = 0.19315; token 1 r = ln 2 → 2 − ln 2 − 1
    # = 0.30685; token 2 r = 0 → 0; token 3 masked. Mean over 3 = 0.5/3.
    logprobs = leaf([[LN(0.5), LN(0.25), LN(0.3), 0.0]])
    ref = const([[LN(0.25), LN(0.5), LN(0.3), -5.0]])
    kl = k3_kl(logprobs, ref, const([[1.0, 1.0, 1.0, 0.0]]))
    assert kl.item() == pytest.approx((0.5 - LN(0.5) - 1 + 2 - LN(2) - 1) / 3)
    kl.backward()
    # ∂/∂ℓ (e^r − r − 1) = 1 − e^r: 1 − 0.5 = 0.5, 1 − 2 = −1, 0; divided by 3; masked token 0.
    assert_close(logprobs.grad, [[0.5 / 3, -1 / 3, 0.0, 0.0]])


def test_k3_kl_clamps_like_verl():
    # r = 30 → clamped to 20 → e^20 − 21 ≫ 10 → value clamped to 10, gradient 0.
    logprobs = leaf([[-31.0]])
    kl = k3_kl(logprobs, const([[-1.0]]), torch.ones(1, 1))
    kl.backward()
    assert kl.item() == 10.0 and logprobs.grad.item() == 0.0


# ---------------------------------------------------------------------------------------------
# Gated OPD (SEED / SDAR / OPSD)
# ---------------------------------------------------------------------------------------------

STUDENT = [[-1.0, -2.0, -3.0, -0.5]]
TEACHER = [[-0.5, -2.0, -4.0, -9.0]]
OPD_MASK = [[1.0, 1.0, 1.0, 0.0]]


def test_opd_value_stats_and_gradient():
    student, teacher = leaf(STUDENT), leaf(TEACHER)
    loss, stats = opd_loss(student, teacher, const(OPD_MASK), beta=5.0)
    # Δ = teacher − student = 0.5, 0, −1 (token 3 masked); g = σ(2.5), σ(0) = 0.5, σ(−5).
    g = [sigmoid(2.5), 0.5, sigmoid(-5.0)]  # 0.924142, 0.5, 0.006693
    # L = (0.924142·0.5 + 0.5·0 + 0.006693·(−1)) / 3 = 0.151793
    assert loss.item() == pytest.approx((g[0] * 0.5 - g[2]) / 3)
    assert stats["opd_loss"] == pytest.approx(loss.item())
    assert stats["gate_mean"] == pytest.approx(sum(g) / 3)
    assert stats["gate_active_ratio"] == pytest.approx(1 / 3)  # only Δ = 0.5; g = 0.5 is not > 0.5
    assert stats["teacher_gap_mean"] == pytest.approx((0.5 + 0 - 1) / 3)
    loss.backward()
    # ∇L = −Σ m·g·∇ℓθ / Σ m: the gate is a constant weight, the masked token gets 0.
    assert_close(student.grad, [[-g[0] / 3, -0.5 / 3, -g[2] / 3, 0.0]])
    assert teacher.grad is None  # the teacher is a constant


def test_opd_beta_zero_is_a_uniform_half_gate():
    student = leaf(STUDENT)
    loss, stats = opd_loss(student, const(TEACHER), const(OPD_MASK), beta=0.0)
    assert stats["gate_mean"] == 0.5 and stats["gate_active_ratio"] == 0.0
    # L = 0.5·(0.5 + 0 − 1)/3 = −1/12
    assert loss.item() == pytest.approx(-1 / 12)
    loss.backward()
    assert student.grad.tolist() == [[-0.5 / 3, -0.5 / 3, -0.5 / 3, 0.0]]


def test_opd_row_mask_drops_trajectories_without_a_skill():
    # Row 1's skill failed to parse: it leaves numerator and denominator, so the loss equals row 0's.
    student = leaf([STUDENT[0], [-1.0, -1.0, -1.0, -1.0]])
    teacher = const([TEACHER[0], [0.0, 0.0, 0.0, 0.0]])
    mask = const([OPD_MASK[0], [1.0, 1.0, 1.0, 1.0]])
    loss, stats = opd_loss(student, teacher, mask, row_mask=const([1.0, 0.0]))
    g = [sigmoid(2.5), 0.5, sigmoid(-5.0)]
    assert loss.item() == pytest.approx((g[0] * 0.5 - g[2]) / 3)
    assert stats["teacher_gap_mean"] == pytest.approx(-0.5 / 3)
    loss.backward()
    assert student.grad[1].tolist() == [0.0] * 4
    # Folding the row mask into the mask is the same thing.
    folded, _ = opd_loss(student, teacher, mask * const([[1.0], [0.0]]))
    assert folded.item() == pytest.approx(loss.item())


def test_opd_rejects_unknown_gates():
    with pytest.raises(ValueError):
        opd_loss(leaf(STUDENT), const(TEACHER), const(OPD_MASK), gate="entropy")


# ---------------------------------------------------------------------------------------------
# Skill-SD importance-weighted k3
# ---------------------------------------------------------------------------------------------

def test_skill_sd_value_and_reverse_kl_gradient():
    # Token 0: ℓθ = ln 0.5, ℓT = ln 0.25, ℓold = ln 0.5 → ρ = 1, ℓ = ln 2,
    #          k3 = e^{−ln 2} − 1 + ln 2 = 0.5 − 1 + 0.693147 = 0.193147.
    # Token 1: ℓθ = ln 0.4, ℓT = ln 0.8, ℓold = ln 0.5 → ρ = 0.8, ℓ = ln 0.5,
    #          k3 = 2 − 1 − 0.693147 = 0.306853, ρ·k3 = 0.245482.
    # Token 2: masked.
    student = leaf([[LN(0.5), LN(0.4), -0.1]])
    teacher = const([[LN(0.25), LN(0.8), -7.0]])
    old = const([[LN(0.5), LN(0.5), -3.0]])
    loss, stats = skill_sd_loss(student, teacher, old, const([[1.0, 1.0, 0.0]]))
    k3 = [0.5 - 1 + LN(2), 2 - 1 + LN(0.5)]
    assert loss.item() == pytest.approx((k3[0] + 0.8 * k3[1]) / 2)
    assert stats["skill_sd_k3_mean"] == pytest.approx(sum(k3) / 2)
    assert stats["skill_sd_ratio_mean"] == pytest.approx((1 + 0.8) / 2)
    loss.backward()
    # ρ carries gradient, so ∂(ρ·k3)/∂ℓθ = ρ·k3 + ρ·(1 − e^{−ℓ}) = ρ·ℓ:
    #   token 0: 1·ln 2 / 2 = 0.346574; token 1: 0.8·ln 0.5 / 2 = −0.277259.
    # (A detached ρ would give ρ·(1 − e^{−ℓ}) / 2 = 0.25 and −0.4 instead.)
    assert_close(student.grad, [[LN(2) / 2, 0.8 * LN(0.5) / 2, 0.0]])


def test_skill_sd_clamps():
    # Log-ratio 12 > 10: ρ = e^10 is a constant. ℓ = ln 2 → k3 = 0.193147, gradient ρ·(1 − 0.5).
    student = leaf([[-1.0]])
    loss, _ = skill_sd_loss(student, const([[-1.0 - LN(2)]]), const([[-13.0]]), torch.ones(1, 1))
    loss.backward()
    assert loss.item() == pytest.approx(math.exp(10) * (0.5 - 1 + LN(2)))
    assert student.grad.item() == pytest.approx(math.exp(10) * 0.5)
    # −ℓ = 25 > 20: clamped in both places, k3 = e^20 − 1 − 20 is a constant; only ρ (= 1 here)
    # passes gradient: ρ·k3. (Clamping inside the exp only would give e^20 − 1 − 25 and a gradient
    # one larger, hence the absolute tolerance: these numbers are ≈ 4.85e8.)
    student = leaf([[-26.0]])
    loss, _ = skill_sd_loss(student, const([[-1.0]]), const([[-26.0]]), torch.ones(1, 1))
    loss.backward()
    assert loss.item() == pytest.approx(math.exp(20) - 21, rel=0, abs=0.1)
    assert student.grad.item() == pytest.approx(math.exp(20) - 21, rel=0, abs=0.1)


# ---------------------------------------------------------------------------------------------
# Presets and the total loss
# ---------------------------------------------------------------------------------------------

def test_presets_follow_the_brief():
    seed = LossConfig.for_algo("seed")
    assert (seed.pg_coef, seed.clip, seed.dual_clip) == (1.0, 0.2, 3.0)
    assert (seed.kl_coef, seed.opd_coef, seed.gate_beta) == (0.01, 0.01, 5.0)
    assert seed.skill_sd_coef == 0.0 and seed.entropy_coef == 0.0
    assert LossConfig.for_algo("sdar") == dataclasses.replace(seed, algo="sdar")  # same loss, other skills
    assert LossConfig.for_algo("grpo").opd_coef == 0.0
    opsd = LossConfig.for_algo("opsd")
    assert (opsd.pg_coef, opsd.gate_beta, opsd.opd_coef) == (0.0, 5.0, 0.01)
    assert LossConfig.for_algo("grpo+opsd").gate_beta == 0.0
    assert LossConfig.for_algo("grpo-opsd") == LossConfig.for_algo("grpo+opsd")  # alias
    skill_sd = LossConfig.for_algo("skill-sd")
    assert (skill_sd.opd_coef, skill_sd.skill_sd_coef) == (0.0, 0.001)
    gigpo = LossConfig.for_algo("gigpo")
    assert (gigpo.opd_coef, gigpo.step_adv_coef, gigpo.gamma, gigpo.adv_std) == (0.0, 1.0, 0.95, True)
    assert LossConfig.for_algo("seed-static") == dataclasses.replace(seed, algo="seed-static")  # SEED's loss
    assert set(ALGORITHMS) == {"grpo", "gigpo", "opsd", "grpo-opsd", "sdar", "seed", "skill-sd", "seed-static"}


def test_configs_keep_what_defines_the_algorithm():
    assert LossConfig.for_algo("seed", gate_beta=1.0, opd_coef=0.1).gate_beta == 1.0  # sweeps are free
    with pytest.raises(ValueError):
        LossConfig(algo="grpo")  # would carry SEED's opd_coef 0.01
    with pytest.raises(ValueError):
        LossConfig.for_algo("grpo+opsd", gate_beta=5.0)
    with pytest.raises(ValueError):
        LossConfig.for_algo("nope")


def total_inputs():
    logprobs = leaf([[LN(0.5), LN(0.4), LN(0.9)], [LN(0.7), LN(0.2), 0.0]])
    return dict(old_logprobs=const([[LN(0.5), LN(0.5), LN(0.8)], [LN(0.6), LN(0.3), -1.0]]),
                advantages=const([1.0, -0.5]), mask=const([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]]),
                ref_logprobs=const([[LN(0.4), LN(0.4), LN(0.7)], [LN(0.7), LN(0.1), -2.0]]),
                teacher_logprobs=const([[LN(0.9), LN(0.1), LN(0.9)], [LN(0.5), LN(0.6), -3.0]])), logprobs


def test_total_seed_loss_is_the_weighted_sum_of_its_terms():
    batch, logprobs = total_inputs()
    loss, stats = total_loss(logprobs, batch["old_logprobs"], batch["advantages"], batch["mask"],
                             LossConfig.for_algo("seed"), ref_logprobs=batch["ref_logprobs"],
                             teacher_logprobs=batch["teacher_logprobs"])
    pg, _ = ppo_clip_loss(logprobs, batch["old_logprobs"], batch["advantages"], batch["mask"], 0.2, 3.0)
    kl = k3_kl(logprobs, batch["ref_logprobs"], batch["mask"])
    opd, _ = opd_loss(logprobs, batch["teacher_logprobs"], batch["mask"], beta=5.0)
    expected = pg + 0.01 * kl + 0.01 * opd
    assert loss.item() == pytest.approx(expected.item())
    (grad,) = torch.autograd.grad(loss, logprobs)
    (expected_grad,) = torch.autograd.grad(expected, logprobs)
    assert torch.allclose(grad, expected_grad)
    assert grad[1, 2] == 0.0  # padding
    assert stats["loss"] == pytest.approx(loss.item()) and stats["kl_loss"] == pytest.approx(kl.item())
    assert {"pg_loss", "clip_frac", "approx_kl", "opd_loss", "gate_mean", "gate_active_ratio",
            "teacher_gap_mean"} <= set(stats)
    assert all(type(v) is float for v in stats.values())


def test_total_grpo_needs_no_teacher_and_opsd_has_no_pg_term():
    batch, logprobs = total_inputs()
    args = (logprobs, batch["old_logprobs"], batch["advantages"], batch["mask"])
    grpo, stats = total_loss(*args, LossConfig.for_algo("grpo"), ref_logprobs=batch["ref_logprobs"])
    assert "opd_loss" not in stats
    assert grpo.item() == pytest.approx(stats["pg_loss"] + 0.01 * stats["kl_loss"])
    opsd, stats = total_loss(*args, LossConfig.for_algo("opsd"), ref_logprobs=batch["ref_logprobs"],
                             teacher_logprobs=batch["teacher_logprobs"])
    assert "pg_loss" not in stats
    assert opsd.item() == pytest.approx(0.01 * stats["kl_loss"] + 0.01 * stats["opd_loss"])
    with pytest.raises(ValueError, match="teacher_logprobs"):
        total_loss(*args, LossConfig.for_algo("seed"), ref_logprobs=batch["ref_logprobs"])


def test_total_skill_sd_and_teacher_mask():
    batch, logprobs = total_inputs()
    args = (logprobs, batch["old_logprobs"], batch["advantages"], batch["mask"])
    loss, stats = total_loss(*args, LossConfig.for_algo("skill-sd"), ref_logprobs=batch["ref_logprobs"],
                             teacher_logprobs=batch["teacher_logprobs"], teacher_mask=const([1.0, 0.0]))
    sd, _ = skill_sd_loss(logprobs, batch["teacher_logprobs"], batch["old_logprobs"],
                          batch["mask"] * const([[1.0], [0.0]]))
    assert stats["skill_sd_loss"] == pytest.approx(sd.item())
    assert loss.item() == pytest.approx(stats["pg_loss"] + 0.01 * stats["kl_loss"] + 0.001 * sd.item())


def test_total_entropy_bonus_is_subtracted():
    batch, logprobs = total_inputs()
    config = LossConfig.for_algo("grpo", entropy_coef=0.001, kl_coef=0.0)
    entropy = const([[1.0, 2.0, 3.0], [4.0, 5.0, 100.0]])  # token-mean over valid tokens = 15/5 = 3
    loss, stats = total_loss(logprobs, batch["old_logprobs"], batch["advantages"], batch["mask"], config,
                             entropy=entropy)
    assert stats["entropy"] == pytest.approx(3.0)
    assert loss.item() == pytest.approx(stats["pg_loss"] - 0.001 * 3.0)


def test_groups_whose_scores_are_all_equal_get_exactly_zero_advantage():
    # 16 failed steps of -0.1: a float32 mean misses -0.1 by an ulp, which divided by (0 + eps)
    # used to leak advantages of order 1e-2 into GRPO.
    advantages = group_advantages([-0.1] * 16 + [0.3] * 3 + [0.2, 0.4], ["a"] * 16 + ["b"] * 3 + ["c"] * 2)
    assert torch.equal(advantages[:19], torch.zeros(19))
    assert advantages.dtype == torch.float32 and advantages[19] < 0 < advantages[20]
