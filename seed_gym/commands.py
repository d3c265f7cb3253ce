"""What command modules share: the consoles, progress bars and ``--env-arg`` parsing.

This is the only module an env or feature CLI imports from seed-gym's command-line side; it never
imports :mod:`seed_gym.cli`, so a command module can be imported (and tested) on its own.

Plugin contract. A distribution adds commands to ``seed-gym`` by declaring an entry point in the
``seed_gym.commands`` group whose value is a **module** (``name = "package.module"``, no
``:attribute``); ``entry_point.load()`` returns that module, and the module exposes::

    def register(app, data_app, bench_app, serve_app) -> None: ...

``app`` is the root ``typer.Typer``; ``data_app``, ``bench_app`` and ``serve_app`` are the
``seed-gym data``, ``seed-gym bench`` and ``seed-gym serve`` groups. ``register`` adds commands
(or sub-groups) to them and should keep heavy imports inside the commands, so ``seed-gym --help``
stays fast. Modules are registered in the order of their entry-point names; one that fails to
import or to register is reported as a warning on stderr and the rest of the CLI still works.
For example, in ``pyproject.toml``::

    [project.entry-points."seed_gym.commands"]
    myenv = "myenv_package.cli"
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from seed_gym import progress as progress_hooks

#: The entry-point group of command modules.
ENTRY_POINT_GROUP = "seed_gym.commands"

#: Results (tables, paths) go to stdout; progress bars, warnings and errors to stderr.
console = Console()
err_console = Console(stderr=True)

__all__ = ["ENTRY_POINT_GROUP", "console", "err_console", "library_progress", "new_progress", "parse_env_args"]


def new_progress() -> Progress:
    """A progress display on stderr (description, bar, n/total, elapsed, remaining)."""
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(), console=err_console, transient=False)


@contextmanager
def library_progress(bar: Progress) -> Iterator[None]:
    """Show library progress reports (data generation, index builds) as bars on ``bar``."""
    tasks: dict[str, Any] = {}

    def draw(description: str, done: int, total: int) -> None:
        if description not in tasks:
            tasks[description] = bar.add_task(description, total=total)
        bar.update(tasks[description], completed=done, total=total)

    with progress_hooks.installed(draw):
        yield


def parse_env_args(pairs: list[str]) -> dict[str, Any]:
    """``key=value`` pairs; values are read as JSON when they parse (numbers, bools, lists)."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise typer.BadParameter(f"--env-arg expects key=value, got {pair!r}")
        try:
            kwargs[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key.strip()] = value
    return kwargs
