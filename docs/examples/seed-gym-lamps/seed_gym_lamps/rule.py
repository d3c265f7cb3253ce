"""The rule analyzer and the sample texts the profile names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Ground truths the rule was given, in call order (the tests read it to see the rule ran).
SEEN_TRUTHS: list[Mapping[str, Any] | None] = []


def lamps_rule(record: Any, truth: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """(summary, skill) for one finished episode record; ``truth`` is ``env.ground_truth(task_id)``."""
    SEEN_TRUTHS.append(truth)
    order = list((truth or {}).get("order", []))
    switched = [s.action for s in record.steps if s.action.startswith("switch on lamp")]
    if record.won:
        return (f"Lamps switched on in the order {order}.",
                "Lamps rule: switch each lamp on exactly in the order the task names, one per step.")
    return (f"Lamps episode failed after {switched or 'no switches'}; the order was {order}.",
            f"Lamps rule: the next lamp is always the first of {order} not yet on; a wrong lamp puts all out.")


def sample_texts(seed: int) -> list[str]:
    """Texts the tiny model's tokenizer trains on, so it can spell this env's words."""
    return [f"Your task is to: switch on lamps 3, 1, 2 in this order. (sample {seed})",
            "Lamp 3 is on.", "<think>Lamp 1 is next.</think><action>switch on lamp 1</action>"]
