"""Progress reporting without a UI dependency in library code.

Library code (data generation, index builds) calls :func:`report`; the CLI installs a reporter that
draws rich progress bars. With no reporter installed, reports are dropped.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

Reporter = Callable[[str, int, int], None]
_reporter: Reporter | None = None


def report(description: str, done: int, total: int) -> None:
    if _reporter is not None:
        _reporter(description, done, total)


def reporter_for(description: str) -> Callable[[int, int], None]:
    """A ``(done, total)`` callback bound to one description."""
    return lambda done, total: report(description, done, total)


@contextlib.contextmanager
def installed(reporter: Reporter) -> Iterator[None]:
    global _reporter
    previous, _reporter = _reporter, reporter
    try:
        yield
    finally:
        _reporter = previous
