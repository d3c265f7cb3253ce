"""QA answer metrics (Search-R1 / FlashRAG definitions, docs/benchmarks.md 3.3).

* ``normalize_answer``: lower-case -> drop ``string.punctuation`` -> drop the words a/an/the ->
  collapse whitespace.
* ``exact_match``: the normalised prediction equals any normalised gold answer (1.0 or 0.0).
* ``sub_exact_match``: some normalised gold answer is a substring of the normalised prediction.
* ``f1``: token-multiset F1 of normalised texts, the max over gold answers; 0 when either side is
  one of yes/no/noanswer and the two differ.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_SPECIAL = frozenset({"yes", "no", "noanswer"})


def normalize_answer(text: str) -> str:
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str | None, golds: Sequence[str]) -> float:
    if prediction is None:
        return 0.0
    pred = normalize_answer(prediction)
    return float(any(pred == normalize_answer(g) for g in golds))


def sub_exact_match(prediction: str | None, golds: Sequence[str]) -> float:
    if prediction is None:
        return 0.0
    pred = normalize_answer(prediction)
    return float(any(normalize_answer(g) in pred for g in golds))


def _f1_one(pred: str, gold: str) -> float:
    if (pred in _SPECIAL or gold in _SPECIAL) and pred != gold:
        return 0.0
    pred_tokens, gold_tokens = pred.split(), gold.split()
    common = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred_tokens), common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1(prediction: str | None, golds: Sequence[str]) -> float:
    if prediction is None:
        return 0.0
    pred = normalize_answer(prediction)
    return max((_f1_one(pred, normalize_answer(g)) for g in golds), default=0.0)
