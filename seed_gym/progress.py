"""Progress reporting without a UI dependency in library code.

Library code (data generation, index builds) calls :func:`report`; the CLI installs a reporter that
draws rich progress bars. With no reporter installed, reports are dropped. An evaluation reports an
:class:`EvalProgress` (episodes, and steps and tokens per second) to its caller instead.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

Reporter = Callable[[str, int, int], None]
_reporter: Reporter | None = None


def report(description: str, done: int, total: int) -> None:
    if _reporter is not None:
        _reporter(description, done, total)


def reporter_for(description: str) -> Callable[[int, int], None]:
    """A ``(done, total)`` callback bound to one description."""
    return lambda done, total: report(description, done, total)


def milestones(echo: Callable[[str], None], then: Reporter | None = None) -> Reporter:
    """A reporter that echoes a line as each description starts and as it ends, for logs (where a
    progress bar or spinner does not draw), and passes every report on to ``then``."""
    started: set[str] = set()
    ended: set[str] = set()

    def reporter(description: str, done: int, total: int) -> None:
        if description not in started:
            started.add(description)
            echo(f"{description}: {done}/{total} ...")
        if then is not None:
            then(description, done, total)
        if done >= total and description not in ended:
            ended.add(description)
            echo(f"{description}: {done}/{total} done")

    return reporter


@contextlib.contextmanager
def installed(reporter: Reporter) -> Iterator[None]:
    global _reporter
    previous, _reporter = _reporter, reporter
    try:
        yield
    finally:
        _reporter = previous


@dataclass
class EvalProgress:
    """Where one evaluation run stands: finished episodes out of the planned ones, plus the env steps
    and generated tokens of this session, so a run whose episodes are long still visibly moves.

    ``tokens`` counts the ``completion_tokens`` model agents record per step (scripted agents record
    none, and their runs show steps only). Rates are over this session's wall time, so a resumed run's
    episodes found on disk do not inflate them."""

    done: int
    total: int
    steps: int = 0
    tokens: int = 0
    started: float = field(default_factory=time.perf_counter)
    clock: Callable[[], float] = field(default=time.perf_counter, repr=False)

    def add_steps(self, steps: Sequence[Any]) -> None:
        """Count one tick's new steps (records with a ``meta`` mapping)."""
        self.steps += len(steps)
        self.tokens += sum(int(step.meta.get("completion_tokens") or 0) for step in steps)

    @property
    def seconds(self) -> float:
        return max(self.clock() - self.started, 1e-9)

    def rates(self) -> str:
        """``"412 steps · 3.1 steps/s · 96 tok/s"`` (tokens only once some were generated)."""
        if not self.steps:
            return ""
        text = f"{self.steps} steps · {self.steps / self.seconds:.1f} steps/s"
        return text + (f" · {self.tokens / self.seconds:.0f} tok/s" if self.tokens else "")
