"""The hf backend's sampler: every row draws from its own seeded stream (issue #22, item 3)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from seed_gym.agents.backends.base import SamplingParams  # noqa: E402
from seed_gym.agents.backends.hf import RowSampler  # noqa: E402


def draws(sampler: RowSampler, scores, n: int) -> list[list[int]]:
    return [sampler(None, scores.clone()).argmax(dim=-1).tolist() for _ in range(n)]


def test_greedy_over_the_processed_scores_is_a_draw_from_the_tempered_softmax():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    params = SamplingParams(temperature=0.7, seed=0)
    counts = torch.zeros(4)
    for [token] in draws(RowSampler([123], params, "cpu"), logits, 6000):
        counts[token] += 1
    expected = torch.softmax(logits[0] / 0.7, dim=-1)
    assert torch.allclose(counts / counts.sum(), expected, atol=0.02)


def test_a_rows_samples_do_not_depend_on_the_rows_beside_it():
    params = SamplingParams(temperature=1.0)
    alone = draws(RowSampler([7], params, "cpu"), torch.zeros(1, 50), 20)
    beside = draws(RowSampler([7, 8, 9], params, "cpu"), torch.zeros(3, 50), 20)
    assert [row[0] for row in alone] == [row[0] for row in beside]
    assert [row[1] for row in beside] != [row[0] for row in beside]  # another seed, another stream


def test_top_k_and_top_p_never_let_a_filtered_token_through():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    top_k = {t for [t] in draws(RowSampler([1], SamplingParams(temperature=1.0, top_k=2), "cpu"), logits, 400)}
    assert top_k == {0, 1}
    top_p = {t for [t] in draws(RowSampler([1], SamplingParams(temperature=1.0, top_p=0.7), "cpu"), logits, 400)}
    assert top_p == {0, 1}  # 0.5 < 0.7 <= 0.5 + 0.3: the smallest set reaching top_p


@pytest.mark.parametrize("temperature", [5e-324, 1e-300, 1e-40])
def test_a_tiny_temperature_samples_the_best_token_not_nan(temperature):
    """Found by the server fuzz suite: scores / 1e-40 overflowed to inf, the log-softmax was NaN,
    and the policy server answered empty text, or a 500 with logprobs."""
    logits = torch.tensor([[2.0, 1.0, 3.0, -1.0], [0.0, 5.0, 1.0, 1.0]])
    processed = RowSampler([1, 2], SamplingParams(temperature=temperature), "cpu")(None, logits.clone())
    assert not processed.isnan().any()
    assert processed.argmax(dim=-1).tolist() == [2, 1]
