"""Training curves where researchers look: TensorBoard and Weights & Biases, besides ``metrics.jsonl``.

``TrainConfig.loggers`` names the sinks (``["tensorboard", "wandb"]``); :class:`~seed_gym.training.runs.TrainRun`
feeds every metrics row it writes to each of them. Rules:

* Every numeric value of a row is logged, at step ``row["update"]`` (W&B: the ``update`` metric is
  the x axis of every chart); nested mappings are flattened
  with ``/`` (``{"time": {"rollout": 2.0}}`` -> ``time/rollout``); text, lists, booleans, None and
  non-finite numbers are skipped (they stay in ``metrics.jsonl``). A row with a ``split`` is an
  evaluation: its keys go under ``eval/<split>/``; every other row's under ``train/``.
* Both are extras imported when the run starts, so a missing one fails before any rollout, with a
  :class:`MissingLoggerError` naming the pip command.
* TensorBoard writes event files to ``OUT/tensorboard/``. Weights & Biases writes under ``OUT/wandb/``
  in whatever mode ``WANDB_MODE`` selects (``offline`` needs no network or account); the project is
  ``WANDB_PROJECT`` (default ``seed-gym``) and the run id is kept in ``OUT/wandb-run-id``, so a
  resumed training run continues the same W&B run.
* Each sink flushes after every row, so a killed run keeps its curve up to the last update.
"""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from seed_gym.core import SeedGymError

#: The logger names ``TrainConfig.loggers`` accepts, and the extra each needs.
EXTRAS = {"tensorboard": "tensorboard", "wandb": "wandb"}


class MissingLoggerError(SeedGymError, ImportError):
    """A logger was asked for but its package is not installed."""


class MetricsSink(Protocol):
    def log(self, scalars: Mapping[str, float], step: int) -> None: ...

    def close(self) -> None: ...


def scalars(row: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, float]]:
    """The ``(tag, value)`` pairs of one metrics row (see the module rules)."""
    if not prefix:
        split = row.get("split")
        prefix = f"eval/{split}/" if isinstance(split, str) and split else "train/"
    for key, value in row.items():
        if key in ("update", "split"):
            continue
        if isinstance(value, Mapping):
            yield from scalars(value, f"{prefix}{key}/")
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            yield f"{prefix}{key}", float(value)


class TensorBoardSink:
    def __init__(self, out: Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as error:
            raise MissingLoggerError(f"loggers=['tensorboard'] needs TensorBoard ({error}): "
                                     "pip install 'seed-gym[tensorboard]'") from None
        self.writer = SummaryWriter(log_dir=str(out / "tensorboard"))

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        for tag, value in scalars.items():
            self.writer.add_scalar(tag, value, global_step=step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbSink:
    def __init__(self, out: Path, config: Mapping[str, Any]) -> None:
        try:
            import wandb
        except ImportError as error:
            raise MissingLoggerError(f"loggers=['wandb'] needs Weights & Biases ({error}): "
                                     "pip install 'seed-gym[wandb]' (WANDB_MODE=offline works without "
                                     "network)") from None
        id_file = out / "wandb-run-id"
        run_id = id_file.read_text().strip() if id_file.exists() else uuid.uuid4().hex[:12]
        id_file.write_text(run_id + "\n")
        self.run = wandb.init(project=os.environ.get("WANDB_PROJECT", "seed-gym"), dir=str(out), id=run_id,
                              name=out.name, config=dict(config), resume="allow", reinit="create_new")
        # The update is the x axis; every row is committed as it is logged (rows that share W&B's own
        # step would wait in memory for the next step), so a killed run loses nothing it logged.
        self.run.define_metric("update")
        self.run.define_metric("*", step_metric="update")

    def log(self, scalars: Mapping[str, float], step: int) -> None:
        self.run.log({"update": step, **scalars})

    def close(self) -> None:
        self.run.finish()


def make_sinks(names: Sequence[str], out: Path, config: Mapping[str, Any]) -> list[MetricsSink]:
    """One sink per name (``"tensorboard"``, ``"wandb"``); raises on an unknown name or missing extra."""
    sinks: list[MetricsSink] = []
    try:
        for name in names:
            if name == "tensorboard":
                sinks.append(TensorBoardSink(out))
            elif name == "wandb":
                sinks.append(WandbSink(out, config))
            else:
                raise SeedGymError(f"unknown logger {name!r}; choose from {', '.join(EXTRAS)}")
    except BaseException:
        for sink in sinks:
            sink.close()
        raise
    return sinks


def log_row(sinks: Sequence[MetricsSink], row: Mapping[str, Any]) -> None:
    """Send one metrics row to every sink, at its update."""
    if not sinks:
        return
    values = dict(scalars(row))
    step = int(row.get("update", 0))
    for sink in sinks:
        sink.log(values, step)
