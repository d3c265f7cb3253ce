"""Retrieval quality measures over batched results (lists of :class:`Hit` lists).

* ``recall_at_k``: share of queries whose top ``k`` contains at least one relevant id.
* ``topk_agreement``: how two backends agree on the same queries: ``top1`` (same first id, over
  queries where both return something), ``overlap`` (mean |A_k ∩ B_k| / max(|A_k|, |B_k|)) and
  ``same_order`` (identical top-k id lists).
"""

from __future__ import annotations

from collections.abc import Sequence

from seed_gym.retrieval.base import Hit


def recall_at_k(results: Sequence[Sequence[Hit]], relevant: Sequence[Sequence[str]], k: int) -> float:
    if len(results) != len(relevant):
        raise ValueError("results and relevant must have one entry per query")
    if not results:
        return 0.0
    found = sum(1 for hits, gold in zip(results, relevant) if {h.doc_id for h in hits[:k]} & set(gold))
    return found / len(results)


def topk_agreement(a: Sequence[Sequence[Hit]], b: Sequence[Sequence[Hit]], k: int) -> dict[str, float]:
    if len(a) != len(b):
        raise ValueError("both result lists must cover the same queries")
    top1 = [x[0].doc_id == y[0].doc_id for x, y in zip(a, b) if x and y]
    overlaps, same = [], []
    for x, y in zip(a, b):
        ids_x, ids_y = [h.doc_id for h in x[:k]], [h.doc_id for h in y[:k]]
        denominator = max(len(ids_x), len(ids_y))
        overlaps.append(len(set(ids_x) & set(ids_y)) / denominator if denominator else 1.0)
        same.append(ids_x == ids_y)
    n = max(1, len(a))
    return {"top1": sum(top1) / max(1, len(top1)), "overlap": sum(overlaps) / n, "same_order": sum(same) / n,
            "queries": float(len(a))}
