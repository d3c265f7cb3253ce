"""Retrieval recall of the gold chains: recall@k per hop (and per source) for one backend.

A hop is found when any of its supporting passages is in the top ``k`` for the hop's oracle query.
Hop ``i`` pools the ``i``-th hop of every question (hop 1 of a comparison is the first item).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from seed_gym.retrieval.metrics import recall_at_k


def hop_queries(questions: Iterable[Mapping[str, Any]]) -> list[tuple[str, int, str, list[str]]]:
    """(source, hop number from 1, query, supporting ids) for every hop of every question."""
    out = []
    for q in questions:
        for number, hop in enumerate(q.get("metadata", {}).get("hops") or [], 1):
            out.append((q["data_source"], number, hop["query"], list(hop["support"])))
    return out


def recall_per_hop(retriever: Any, questions: Iterable[Mapping[str, Any]], k: int = 3) -> dict[str, dict[str, float]]:
    """``{"all": {"hop1": r, ...}, "<source>": {...}}``: recall@k per hop, overall and per source."""
    rows = hop_queries(questions)
    results = retriever.search([query for _, _, query, _ in rows], k) if rows else []
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for index, (source, number, _, _) in enumerate(rows):
        for name in ("all", source):
            groups[(name, f"hop{number}")].append(index)
            groups[(name, "any")].append(index)
    out: dict[str, dict[str, float]] = defaultdict(dict)
    for (name, hop), indices in sorted(groups.items()):
        out[name][hop] = recall_at_k([results[i] for i in indices], [rows[i][3] for i in indices], k)
    return dict(out)
