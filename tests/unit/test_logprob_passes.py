"""The trainer's log-prob passes: rows that share a prompt run it once, with the same log-probs and
gradients as one row at a time; θ_old comes from the update's own forward when the batch gets one
optimizer step, giving the same step as a separate pass. On a small random Llama with the tiny
model's tokenizer and chat template (built in memory)."""

from __future__ import annotations

import copy

import pytest
import torch

from seed_gym.agents import corpus as C
from seed_gym.agents import tiny as T
from seed_gym.agents.backends.scoring import chunk_rows, forward_logprobs, pack_left, prompt_owners, \
    shared_prompt_logprobs, shares_prompts
from seed_gym.training import update as U
from seed_gym.training.batch import StepSample
from seed_gym.training.costs import PhaseCosts
from seed_gym.training.losses import LossConfig
from seed_gym.training.policy import Policy

PAD = 0
SHAPE = T.ModelShape(hidden=32, layers=2, heads=4, kv_heads=2, intermediate=64)


@pytest.fixture(scope="module")
def policy() -> Policy:
    texts = [*C.chat_frames(), *[f"look at item {i} then click[buy now] and search[red shoes {i}]" for i in range(300)]]
    tokenizer = T.wrap_tokenizer(T.train_tokenizer(texts, vocab_size=320))
    return Policy(T.init_model(SHAPE, 320, seed=0), tokenizer, path="in-memory")


def rows() -> tuple[list[list[int]], list[list[int]]]:
    """Three prompts of different lengths, two of them shared by several rows; responses of
    different lengths, one empty."""
    a, b, c = [5, 6, 7, 8, 9], [10, 11, 12], [13, 14, 15, 16, 17, 18, 19]
    prompts = [a, b, a, c, a, b]
    responses = [[20, 21, 22], [23], [24, 25], [26, 27, 28, 29], [], [30, 31, 32, 33, 34]]
    return prompts, responses


def test_shared_prompts_give_each_rows_own_logprobs_and_gradients(policy: Policy) -> None:
    prompts, responses = rows()
    model = policy.model
    plain = pack_left(prompts, responses, PAD)
    expected = forward_logprobs(model, plain)
    expected.sum().backward()
    expected_grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)

    shared, mask = shared_prompt_logprobs(model, prompts, responses, PAD)
    assert torch.equal(mask, plain.continuation_mask)
    torch.testing.assert_close(shared, expected, atol=1e-5, rtol=0)
    shared.sum().backward()
    for got, want in zip((p.grad for p in model.parameters()), expected_grads):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
    model.zero_grad(set_to_none=True)


def test_prompts_are_shared_only_when_one_repeats_and_has_a_token_before_its_last() -> None:
    assert shares_prompts([[1, 2], [3, 4], [1, 2]])
    assert not shares_prompts([[1, 2], [3, 4]])
    assert not shares_prompts([[1], [1]])
    with pytest.raises(ValueError, match="at least 2 tokens"):
        shared_prompt_logprobs(None, [[1], [1]], [[2], [3]], PAD)


def test_chunks_keep_a_prompts_rows_together() -> None:
    prompts = [[1, 2], [3, 4, 5, 6], [1, 2], [3, 4, 5, 6]]
    assert prompt_owners(prompts) == [0, 1, 0, 1]
    lengths = [3, 5, 9, 6]  # by length alone: rows 0, 1, 3 then 2
    assert chunk_rows(lengths, 18) == [[0, 1, 3], [2]]
    assert chunk_rows(lengths, 18, prompt_owners(prompts)) == [[0, 2], [1, 3]]


def test_dropout_anywhere_counts_and_the_tiny_llama_has_none(policy: Policy) -> None:
    assert not U.has_dropout(policy.model)
    with_config_dropout = T.init_model(SHAPE, 320, seed=0)
    with_config_dropout.config.attention_dropout = 0.1
    assert U.has_dropout(with_config_dropout)
    assert U.has_dropout(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.1)))
    assert not U.has_dropout(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.0)))


def samples() -> list[StepSample]:
    """Two groups of three completions, one prompt per group, with engine log-probs for the gap."""
    out = []
    for group, task in enumerate(("red shoes", "blue hat")):
        for k in range(3):
            response = [40 + group + k, 50 + k, 60][: 1 + k]
            out.append(StepSample(messages=[{"role": "user", "content": f"search[{task}] then click[buy now]"}],
                                  response_ids=response, episode_id=f"e{group}{k}", group_id=str(group),
                                  reward=float(k), extra={"sampling_logprobs": [-1.0] * len(response)}))
    return out


def one_update(policy: Policy, monkeypatch: pytest.MonkeyPatch, separate_old_pass: bool) -> tuple[Policy, dict, PhaseCosts]:
    trained = Policy(copy.deepcopy(policy.model), policy.tokenizer, path=policy.path)
    if separate_old_pass:  # what a model with dropout gets
        monkeypatch.setattr(U, "has_dropout", lambda model: True)
    optimizer = torch.optim.AdamW(trained.model.parameters(), lr=1e-2)
    costs = PhaseCosts()
    stats = U.rl_update(trained, None, samples(), None, optimizer, LossConfig.for_algo("grpo", kl_coef=0.0),
                        U.UpdateSettings(micro_batch=4, mini_batches=1), seed=3, costs=costs)
    monkeypatch.undo()
    return trained, stats, costs


def test_theta_old_from_the_updates_forward_takes_the_same_step_as_a_separate_pass(
        policy: Policy, monkeypatch: pytest.MonkeyPatch) -> None:
    reused, reused_stats, reused_costs = one_update(policy, monkeypatch, separate_old_pass=False)
    separate, separate_stats, separate_costs = one_update(policy, monkeypatch, separate_old_pass=True)
    assert reused_costs.counts["old_logprobs"] == 0 < separate_costs.counts["old_logprobs"]
    assert reused_stats["clip_frac"] == 0.0
    for key in ("loss", "pg_loss", "sampling_logprob_gap", "grad_norm", "response_tokens"):
        assert reused_stats[key] == pytest.approx(separate_stats[key], rel=1e-4, abs=1e-6), key
    for a, b in zip(reused.model.parameters(), separate.model.parameters()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    assert any(not torch.equal(a, b) for a, b in zip(reused.model.parameters(), policy.model.parameters()))
