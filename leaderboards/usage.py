"""What a model agent spent per step, read from its step records (``meta``), for the board.

Rules: a run is a model run when its steps record ``completion_tokens`` (scripted agents record
none, and get no figures). Per step: the mean generated (completion) and prompt tokens, the mean
latency in seconds (batched backends record their batch's time for every row of the batch), and the
share of steps whose response parsed (``valid_format``). Steps of error episodes are not counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from seed_gym.records import EpisodeRecord


@dataclass(frozen=True)
class ModelUsage:
    steps: int
    completion_tokens: float   # per step
    prompt_tokens: float       # per step
    latency_s: float | None    # per step, where recorded
    format_valid_rate: float   # share of steps whose response parsed


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def model_usage(records: Sequence[EpisodeRecord]) -> ModelUsage | None:
    steps = [step for record in records if record.status != "error" for step in record.steps
             if (step.meta or {}).get("completion_tokens") is not None]
    if not steps:
        return None
    latencies = [float(step.meta["latency_s"]) for step in steps if step.meta.get("latency_s") is not None]
    return ModelUsage(
        steps=len(steps),
        completion_tokens=_mean([float(step.meta["completion_tokens"]) for step in steps]) or 0.0,
        prompt_tokens=_mean([float(step.meta.get("prompt_tokens") or 0) for step in steps]) or 0.0,
        latency_s=_mean(latencies),
        format_valid_rate=sum(step.valid_format for step in steps) / len(steps))
