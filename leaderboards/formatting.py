"""Number and label formatting shared by the HTML and Markdown renderers.

Rules: rates are shown as percentages with one decimal; a 95% interval follows as ``[lo, hi]``;
steps use one decimal; fingerprints are shown short (the first 8 hex digits, without ``sha256:``)
with the full value kept for tooltips; missing values are an en dash; long labels (agent specs with
model paths) are shortened for cells, the full text kept for tooltips.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

_PATH = re.compile(r"(?<=:)[^@\s()]*/([^/@\s()]+)")

DASH = "–"

#: (summary key, column heading, is a rate) for the measured metrics, in table order.
METRIC_COLUMNS: tuple[tuple[str, str, bool], ...] = (
    ("success_rate", "Success %", True),
    ("mean_score", "Score %", True),
    ("mean_steps", "Steps", False),
    ("invalid_action_rate", "Invalid %", True),
)


def pct(value: float | None) -> str:
    """A fraction as a percentage with one decimal."""
    return DASH if value is None else f"{100 * value:.1f}"


def number(value: float | None) -> str:
    return DASH if value is None else f"{value:.1f}"


def metric_value(value: float | None, is_rate: bool) -> str:
    return pct(value) if is_rate else number(value)


def interval(ci: Sequence[float] | None, is_rate: bool) -> str:
    """``[lo, hi]`` in the metric's unit, or an empty string without an interval."""
    if not ci:
        return ""
    return f"[{metric_value(ci[0], is_rate)}, {metric_value(ci[1], is_rate)}]"


def signed_pct(value: float) -> str:
    return f"{100 * value:+.1f}"


def short_fp(value: Any) -> str:
    """``sha256:0123456789abcdef`` -> ``01234567``; anything else as text."""
    text = DASH if value is None else str(value)
    return text.split(":", 1)[1][:8] if text.startswith("sha256:") else text


def short_family(family: str) -> str:
    """A family by the paper column name an env's profile declares for it (``family_columns``);
    families without one unchanged."""
    from seed_gym.leaderboards.reference import family_columns

    return family_columns().get(family, family)


def p_value(value: float) -> str:
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def reported(value: float | None) -> str:
    """A reported percentage as printed by its source."""
    return DASH if value is None else f"{value:.1f}"


def short_label(text: str, limit: int = 40) -> str:
    """``text`` to fit a cell: a model path keeps its last folder (``hf:/a/b/tiny@k=v`` ->
    ``hf:…/tiny@k=v``), then the middle is elided to ``limit`` characters."""
    short = _PATH.sub(r"…/\1", text)
    if len(short) <= limit:
        return short
    tail = limit // 3
    return short[: limit - tail - 1] + "…" + short[-tail:]


def count(n: int) -> str:
    return f"n={n}"
