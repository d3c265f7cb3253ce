"""Ranked choice among admissible actions: which scored candidate a model agent takes.

A backend scores every candidate response token by token (``score_choices``); a *rule* turns
those per-token log-probabilities into one choice:

* ``sum`` — the candidate's sequence log-likelihood (the classic "rank the admissible commands").
  It favours short candidates: ``click[next >]`` can beat every product id whose ten characters
  each cost a little probability.
* ``mean`` — the per-token average, which removes most of that length bias.
* ``prefix`` — constrained greedy decoding: walk the candidates' token tree from the root and at
  every fork take the most likely next token. It is what greedy generation would write if it could
  only spell admissible actions, so a model that means "click a product" clicks a product.

``temperature == 0`` is greedy (ties go to the earlier candidate); above 0 the rule samples from the
softmax of its scores (``prefix``: at every fork) divided by the temperature.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

RANK_RULES = ("sum", "mean", "prefix")


def pick_choice(scores: Sequence[float], temperature: float, rng: random.Random) -> int:
    """Index of the best score (greedy; ties go to the first), or a draw from softmax(scores / T)."""
    if temperature <= 0:
        return max(range(len(scores)), key=lambda i: (scores[i], -i))
    top = max(scores)
    weights = [math.exp((score - top) / temperature) for score in scores]
    return rng.choices(range(len(scores)), weights=weights)[0]


def choose(token_ids: Sequence[Sequence[int]], logprobs: Sequence[Sequence[float]], rule: str,
           temperature: float, rng: random.Random) -> int:
    """The chosen candidate's index under ``rule`` (see the module rules)."""
    if rule == "prefix":
        return prefix_choice(token_ids, logprobs, temperature, rng)
    if rule == "mean":
        return pick_choice([sum(lp) / max(1, len(lp)) for lp in logprobs], temperature, rng)
    if rule == "sum":
        return pick_choice([sum(lp) for lp in logprobs], temperature, rng)
    raise ValueError(f"rank rule must be one of {RANK_RULES}, got {rule!r}")


def prefix_choice(token_ids: Sequence[Sequence[int]], logprobs: Sequence[Sequence[float]],
                  temperature: float, rng: random.Random) -> int:
    """Constrained greedy decoding over the candidates' token tree.

    The log-probability of a candidate's token at depth d depends only on the tokens before it, so
    candidates that share a prefix share it, and every fork is decided by the scores already
    computed: no extra forward pass."""
    alive = list(range(len(token_ids)))
    depth = 0
    while len(alive) > 1 and any(depth < len(token_ids[i]) for i in alive):
        branches: dict[int | None, list[int]] = {}
        for i in alive:
            branches.setdefault(token_ids[i][depth] if depth < len(token_ids[i]) else None, []).append(i)
        if len(branches) > 1:
            heads = list(branches.values())
            scores = [logprobs[h[0]][depth] if depth < len(logprobs[h[0]]) else 0.0 for h in heads]
            alive = heads[pick_choice(scores, temperature, rng)]
        depth += 1
    return alive[0]
