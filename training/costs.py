"""Where an update's time goes: seconds and tokens per phase, for the metrics row and console line.

Phases, in the order an RL update runs them (the keys every update row carries):

=================  ==============================================  ===============================
phase              seconds (``time/<phase>_s``)                    count
=================  ==============================================  ===============================
env                env resets and steps in the rollouts            ``env/steps``
generate           the agent's calls in the rollouts (prompts,     ``tokens/generate``: tokens
                   generation, parsing)                            generated
analyzer           hindsight skills written by the policy          ``tokens/analyzer``: generated
old_logprobs       θ_old log-probs of the sampled tokens           ``tokens/old_logprobs``: tokens
ref_logprobs       the frozen reference's log-probs (KL)           fed through the model (prompt
teacher_logprobs   the teacher's log-probs (skill in the prompt)   + response), likewise
update             forward, backward and optimizer steps           ``tokens/update``: likewise
sync               loading the new weights into the rollout        ``sync/bytes``
                   engine and checking them
eval               periodic evaluation after the update            ``tokens/eval``: generated
=================  ==============================================  ===============================

``old_logprobs`` stays 0 when the batch gets one optimizer step (``mini_batches`` 1, no dropout):
θ_old's log-probs are then the update's own forward (:mod:`.update`), counted in ``update``.

Under ``torchrun`` the figures are rank 0's (its share of the rollouts and of the batch).

An update's wall time is its row's ``seconds`` (rollouts through the weight sync) plus
``time/eval_s``; what no phase covers (building samples, writing the checkpoint) is ``other``.

``python -m seed_gym.training.costs RUN [RUN ...]`` prints the per-phase table of training runs
(mean per update over their ``metrics.jsonl``); ``seed-gym leaderboard build`` shows the same table
for every training run it is given.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import Any

PHASES = ("env", "generate", "analyzer", "old_logprobs", "ref_logprobs", "teacher_logprobs", "update", "sync",
          "eval")
#: The wall time of an update that no phase covers (:func:`phase_table`).
OTHER = "other"
#: What each phase counts besides seconds (module table).
COUNTS = {"env": "env/steps", "sync": "sync/bytes", **{p: f"tokens/{p}" for p in PHASES if p not in ("env", "sync")}}


class PhaseCosts:
    """Seconds and counts per phase of one update (module rules)."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(PHASES, 0.0)
        self.counts = dict.fromkeys(PHASES, 0.0)

    @contextlib.contextmanager
    def phase(self, name: str, meter: "TokenMeter | None" = None) -> Iterator[None]:
        """Time a block as ``name``; with ``meter``, what it generated meanwhile is the count."""
        if name not in self.seconds:
            raise KeyError(f"unknown phase {name!r}; phases: {', '.join(PHASES)}")
        started, generated = time.perf_counter(), meter.tokens if meter else 0
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - started
            if meter:
                self.counts[name] += meter.tokens - generated

    def add(self, name: str, seconds: float = 0.0, count: float = 0.0) -> None:
        self.seconds[name] += seconds
        self.counts[name] += count

    def row(self) -> dict[str, float]:
        """``time/<phase>_s`` and the phase's count, for every phase."""
        row: dict[str, float] = {}
        for name in PHASES:
            row[f"time/{name}_s"] = round(self.seconds[name], 4)
            row[COUNTS[name]] = self.counts[name]
        return row


def console_summary(row: dict[str, Any]) -> str:
    """The phases of a metrics row in one line: ``env 1.2s | generate 3.4s 812tok | ...``."""
    parts = []
    for name in PHASES:
        seconds, count = row.get(f"time/{name}_s"), row.get(COUNTS[name])
        if not seconds:
            continue
        unit = {"env": " steps", "sync": " B"}.get(name, " tok")
        parts.append(f"{name} {seconds:.2f}s" + (f" {count:.0f}{unit}" if count else ""))
    return " | ".join(parts)


def forward_tokens(prompts: Sequence[Sequence[int]], responses: Sequence[Sequence[int]]) -> int:
    """Tokens a teacher-forced pass feeds the model: each prompt and its response."""
    return sum(len(p) + len(r) for p, r in zip(prompts, responses))


class TokenMeter:
    """A generation backend that counts the tokens it generates (``tokens``) and otherwise is the
    backend it wraps: the rollouts, the analyzer and evaluations share one, and a
    :meth:`PhaseCosts.phase` reads its count before and after."""

    def __init__(self, backend: Any) -> None:
        self.inner = backend
        self.tokens = 0

    def generate(self, prompts: Sequence[Any], params: Any) -> list[Any]:
        generations = self.inner.generate(prompts, params)
        self.tokens += sum(g.completion_tokens for g in generations)
        return generations

    def close(self) -> None:
        """The wrapped backend belongs to the rollout engine, which closes it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def count_unit(phase: str) -> str:
    """What a phase's count counts: ``steps``, ``bytes`` or ``tokens`` (nothing for ``other``)."""
    return {"env": "steps", "sync": "bytes", OTHER: ""}.get(phase, "tokens")


def update_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The RL update rows of a ``metrics.jsonl`` (not evaluations, not SFT epochs)."""
    return [row for row in rows if "split" not in row and "time/env_s" in row]


def phase_table(rows: Sequence[dict[str, Any]]) -> list[tuple[str, float, float, float]]:
    """(phase, mean seconds per update, share of the update's wall time, mean count per update) over
    the update rows of a ``metrics.jsonl``, then ``other`` (wall time no phase covers) when the rows
    carry their wall time; without it the shares are of the phases' summed time."""
    updates = update_rows(rows)
    if not updates:
        return []
    seconds = {p: sum(row.get(f"time/{p}_s", 0.0) for row in updates) / len(updates) for p in PHASES}
    counts = {p: sum(row.get(COUNTS[p], 0.0) for row in updates) / len(updates) for p in PHASES}
    if all("seconds" in row for row in updates):
        wall = sum(row["seconds"] + row.get("time/eval_s", 0.0) for row in updates) / len(updates)
        seconds[OTHER], counts[OTHER] = max(0.0, wall - sum(seconds.values())), 0.0
    total = sum(seconds.values()) or 1.0
    return [(p, seconds[p], seconds[p] / total, counts[p]) for p in seconds]


def main(argv: Sequence[str]) -> None:
    import json
    from pathlib import Path

    for run in argv:
        rows = [json.loads(line) for line in (Path(run) / "metrics.jsonl").read_text().splitlines() if line.strip()]
        table = phase_table(rows)
        updates = update_rows(rows)
        engines = sorted({str(row.get("rollout_backend", "hf")) for row in updates})
        print(f"{run}: {len(updates)} updates, rollout backend {', '.join(engines) or '?'}")
        print(f"  {'phase':<17}{'s/update':>10}{'share':>8}{'count/update':>16}")
        for phase, secs, share, count in table:
            counted = f"{count:>10.0f} {count_unit(phase)}" if count_unit(phase) else ""
            print(f"  {phase:<17}{secs:>10.2f}{100 * share:>7.1f}%{counted}")


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
