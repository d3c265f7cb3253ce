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
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)
from rich.text import Text

from seed_gym import progress as progress_hooks

#: The entry-point group of command modules.
ENTRY_POINT_GROUP = "seed_gym.commands"

#: Results (tables, paths) go to stdout; progress bars, warnings and errors to stderr.
console = Console()
err_console = Console(stderr=True)

__all__ = ["ENTRY_POINT_GROUP", "console", "err_console", "library_progress", "new_progress", "parse_env_args"]


class RateColumn(ProgressColumn):
    """A task's ``rate`` field (e.g. steps and tokens per second), or nothing."""

    def render(self, task: Task) -> Text:
        return Text(str(task.fields.get("rate", "")), style="cyan")


def new_progress() -> Progress:
    """A progress display on stderr (description, bar, n/total, elapsed, remaining, and a task's
    ``rate`` field when it sets one: ``bar.update(task, rate="3.1 steps/s")``)."""
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(), RateColumn(), console=err_console, transient=False)


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


@contextmanager
def library_status(status: Any) -> Iterator[None]:
    """Show library progress reports (data generation, index builds) on a ``console.status``
    spinner, and print a line as each starts and as it ends, so that a log file shows a long first
    data build too (a spinner draws only on a terminal)."""
    def draw(description: str, done: int, total: int) -> None:
        status.update(f"{description}: {done}/{total}")

    with progress_hooks.installed(progress_hooks.milestones(console.print, then=draw)):
        yield


def parse_env_args(pairs: list[str], env_id: str | None = None) -> dict[str, Any]:
    """``key=value`` pairs; values are read as JSON when they parse (numbers, bools, lists), else as
    text, and one that starts like JSON (``[``, ``{``, ``"``) must parse. With ``env_id``, each key
    and value is checked against that env's constructor (:func:`seed_gym.registry.check_env_kwarg`)."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise typer.BadParameter(f"expects key=value, got {pair!r}", param_hint="'--env-arg'")
        try:
            value: Any = json.loads(raw)
        except json.JSONDecodeError as error:
            if raw.lstrip()[:1] in ("[", "{", '"'):
                raise typer.BadParameter(f"{key}={raw} is not valid JSON ({error})", param_hint="'--env-arg'") from None
            value = raw
        if env_id is not None:
            from seed_gym.registry import EnvArgError, check_env_kwarg

            try:
                value = check_env_kwarg(env_id, key, value, raw)
            except EnvArgError as error:
                raise typer.BadParameter(str(error), param_hint="'--env-arg'") from None
        kwargs[key] = value
    return kwargs
