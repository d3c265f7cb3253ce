"""recall@k and top-k agreement over batched results."""

from __future__ import annotations

import pytest

from seed_gym.retrieval import Hit
from seed_gym.retrieval.metrics import recall_at_k, topk_agreement


def hits(*ids: str) -> list[Hit]:
    return [Hit(i, 1.0 / (n + 1)) for n, i in enumerate(ids)]


def test_recall_at_k() -> None:
    results = [hits("a", "b", "c", "d"), hits("x"), []]
    assert recall_at_k(results, [["c"], ["y"], ["a"]], k=3) == pytest.approx(1 / 3)
    assert recall_at_k(results, [["d"], ["x"], []], k=3) == pytest.approx(1 / 3)  # d is 4th
    assert recall_at_k(results, [["d"], ["x"], []], k=4) == pytest.approx(2 / 3)
    assert recall_at_k([], [], k=3) == 0.0
    with pytest.raises(ValueError):
        recall_at_k(results, [["a"]], k=3)


def test_topk_agreement() -> None:
    a = [hits("a", "b", "c"), hits("a", "b"), hits(), hits("q")]
    b = [hits("a", "c", "b"), hits("b", "a"), hits(), hits("r")]
    agreement = topk_agreement(a, b, k=3)
    assert agreement["top1"] == pytest.approx(1 / 3)  # the empty pair is not counted
    assert agreement["overlap"] == pytest.approx((1 + 1 + 1 + 0) / 4)
    assert agreement["same_order"] == pytest.approx(1 / 4)
