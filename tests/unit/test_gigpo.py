"""GiGPO's advantage (arXiv 2505.10978; seed-method.md §11) on groups worked out by hand.

One task, three trajectories, γ = 0.5 (round numbers), anchors are observation texts:

    τa (won, R = 10):  s0 -> s1 -> win          step rewards 0, 10     returns 5, 10
    τb (lost, R = 0):  s0 -> s2 -> s1           step rewards 0, 0, 0   returns 0, 0, 0
    τc (lost, R = 0):  s0, format-invalid       step reward −0.1       return −0.1

Episode level over (10, 0, 0): mean 10/3, unbiased σ = √(100/3).
Anchor groups: s0 = {τa: 5, τb: 0, τc: −0.1}, s1 = {τa: 10, τb: 0}, s2 = {τb: 0} (a singleton: 0).
"""

import math
import statistics

import pytest

torch = pytest.importorskip("torch", reason="the losses need torch (the [train] extra)")

from seed_gym.records import EpisodeRecord, StepRecord
from seed_gym.training.algorithms import ALGORITHMS
from seed_gym.training.batch import samples_from_records
from seed_gym.training.config import build_config
from seed_gym.training.losses import LossConfig, discounted_returns, gigpo_advantages
from seed_gym.training.trainer import loss_config_of
from seed_gym.training.update import sample_advantages

#            a0    a1    b0    b1    b2    c0
GROUPS = ["t"] * 6
TRAJS = ["a", "a", "b", "b", "b", "c"]
STEPS = [0, 1, 0, 1, 2, 0]
ANCHORS = ["s0", "s1", "s0", "s2", "s1", "s0"]
EPISODE = [10.0, 10.0, 0.0, 0.0, 0.0, 0.0]
STEP_REWARDS = [0.0, 10.0, 0.0, 0.0, 0.0, -0.1]


def normalised(values, use_std):
    mean = sum(values) / len(values)
    scale = statistics.stdev(values) if use_std else 1.0
    return [(v - mean) / scale for v in values]


def expected(use_std, omega=1.0):
    (ea, eb, ec) = normalised([10.0, 0.0, 0.0], use_std)
    s0a, s0b, s0c = normalised([5.0, 0.0, -0.1], use_std)
    s1a, s1b = normalised([10.0, 0.0], use_std)
    return [ea + omega * s0a, ea + omega * s1a, eb + omega * s0b, eb, eb + omega * s1b, ec + omega * s0c]


def advantages(**options):
    return gigpo_advantages(EPISODE, STEP_REWARDS, GROUPS, TRAJS, STEPS, ANCHORS, gamma=0.5, **options)


def test_discounted_returns_run_backwards_from_the_last_step():
    assert discounted_returns([0.0, 10.0], 0.5) == [5.0, 10.0]
    assert discounted_returns([1.0, 1.0, 1.0], 0.95) == pytest.approx([1 + 0.95 + 0.95 ** 2, 1.95, 1.0])
    assert discounted_returns([], 0.95) == []


def test_with_std_episode_and_anchor_advantages_add_up_by_hand():
    got = advantages(use_std=True)
    assert got.tolist() == pytest.approx(expected(True), rel=1e-5)
    # the numbers themselves, for a reader: a0 = (20/3)/√(100/3) + (5 − 49/30)/σ(5, 0, −0.1)
    assert got[0].item() == pytest.approx(1.154700 + 1.154538, rel=1e-5)
    assert got[3].item() == pytest.approx(-10 / 3 / math.sqrt(100 / 3), rel=1e-5)  # s2 is a singleton: A^S = 0


def test_without_std_the_advantages_are_plain_differences_from_the_means():
    got = advantages(use_std=False)
    assert got.tolist() == pytest.approx([20 / 3 + 5 - 4.9 / 3, 20 / 3 + 5, -10 / 3 - 4.9 / 3, -10 / 3,
                                          -10 / 3 - 5, -10 / 3 - 0.1 - 4.9 / 3], rel=1e-5)


def test_omega_weighs_the_step_level_term_and_zero_leaves_the_episode_level_alone():
    assert advantages(omega=0.5).tolist() == pytest.approx(expected(True, 0.5), rel=1e-5)
    episode_only = advantages(omega=0.0).tolist()
    assert episode_only == pytest.approx([1.154700, 1.154700, -0.577350, -0.577350, -0.577350, -0.577350], rel=1e-5)


def test_anchor_groups_never_cross_tasks_and_the_step_order_comes_from_steps_not_batch_order():
    # the same three trajectories again under task "u", shuffled: "t"'s values do not change
    order = [5, 2, 4, 0, 3, 1]
    got = gigpo_advantages(EPISODE + [EPISODE[i] for i in order], STEP_REWARDS + [STEP_REWARDS[i] for i in order],
                           GROUPS + ["u"] * 6, TRAJS + [TRAJS[i] for i in order], STEPS + [STEPS[i] for i in order],
                           ANCHORS + [ANCHORS[i] for i in order], gamma=0.5).tolist()
    assert got[:6] == pytest.approx(expected(True), rel=1e-5)
    assert got[6:] == pytest.approx([expected(True)[i] for i in order], rel=1e-5)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="one episode reward"):
        gigpo_advantages([1.0], [1.0, 0.0], ["t"], ["a"], [0], ["s"])


class WordTokenizer:
    eos_token_id = 99

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [len(word) for word in text.split()]}


def record(episode, observations, won, valid):
    steps = [StepRecord(t=i, observation=obs, action="look", reward=0.0, invalid_action=False,
                        response="<think>x</think><action>look</action>", prompt=f"p {i}", valid_format=ok,
                        token_ids=[i], finish_reason="stop") for i, (obs, ok) in enumerate(zip(observations, valid))]
    return EpisodeRecord(episode_id=episode, task={"id": "t"}, agent="hf:x", group_index=0, seed=0, steps=steps,
                         final_observation="", won=won, score=float(won), total_reward=float(won),
                         status="completed", wall_seconds=0.0)


def test_step_samples_carry_gigpos_inputs_and_the_update_uses_them_for_gigpo_only():
    # ALFWorld's rule: R = 10·won, penalty 0.1 on the format-invalid step only
    records = [record("t#a", ["s0", "s1"], True, [True, True]), record("t#b", ["s0", "s2", " s1 "], False, [True] * 3),
               record("t#c", ["s0"], False, [False])]
    samples = samples_from_records(records, WordTokenizer(), "alfworld")
    assert [s.anchor for s in samples] == ["s0", "s1", "s0", "s2", "s1", "s0"]  # whitespace-normalised
    assert [s.step_reward for s in samples] == pytest.approx(STEP_REWARDS)
    assert [s.episode_reward for s in samples] == EPISODE
    gigpo = sample_advantages(samples, LossConfig.for_algo("gigpo", gamma=0.5))
    assert gigpo.tolist() == pytest.approx(expected(True), rel=1e-5)
    grpo = sample_advantages(samples, LossConfig.for_algo("grpo"))
    assert grpo.tolist() != pytest.approx(gigpo.tolist(), rel=1e-3)


def test_gigpo_is_in_the_table_and_its_options_reach_the_loss_config():
    assert ALGORITHMS["gigpo"].teacher == "none" and ALGORITHMS["gigpo"].loss["step_adv_coef"] == 1.0
    config = build_config({"algo": "gigpo", "env": "alfworld", "model": "m", "out": "o"},
                          overrides=["adv_std=false", "gamma=0.9"])
    loss = loss_config_of(config)
    assert (loss.step_adv_coef, loss.gamma, loss.adv_std, loss.opd_coef) == (1.0, 0.9, False, 0.0)
    with pytest.raises(ValueError, match="step_adv_coef"):
        LossConfig.for_algo("gigpo", step_adv_coef=0.0)  # ω = 0 would be GRPO under another name
