"""The files of a training run, and resuming it.

``OUT/`` holds:

* ``config.json`` — the resolved :class:`~seed_gym.training.config.TrainConfig`; a resumed run
  must match its identity by the rule every run folder follows
  (:func:`~seed_gym.records.identity_diff`; how long it runs may change);
* ``metrics.jsonl`` — one JSON object per update (and per periodic eval), appended as they happen;
* ``rollouts/update-NNNNNN/`` — each update's episodes as an ordinary run directory (the records
  training reads), so a run killed after its rollouts resumes without replaying them;
* ``checkpoints/update-NNNNNN/`` — ``save_pretrained`` model + tokenizer (a model folder any agent
  loads), ``optimizer.pt`` and ``trainer_state.json``; ``checkpoints/LATEST`` names the newest.
  Only the newest ``keep_checkpoints`` are kept. A checkpoint is written atomically: into a hidden
  staging folder (:meth:`TrainRun.staged_checkpoint`), fsynced and renamed into place whole, and
  only then named by ``LATEST`` (the commit point), so a kill at any byte leaves no half checkpoint
  where an agent would load it, and a resume takes the last complete one (:meth:`TrainRun.latest`);
* ``evals/update-NNNNNN/<split>/`` — periodic evaluation run directories (seen / unseen), played
  after the update's checkpoint is written and before it becomes LATEST; a resumed run deletes
  those of updates after LATEST and redoes them.
* ``tensorboard/``, ``wandb/`` — the same metrics rows, when ``loggers`` asks for them
  (:mod:`seed_gym.training.loggers`).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from seed_gym import jsonl
from seed_gym.core import SeedGymError
from seed_gym.records import identity_diff


class TrainRunMismatch(SeedGymError, ValueError):
    pass


def _complete(folder: Path) -> bool:
    """A checkpoint folder whose ``trainer_state.json`` (written last) holds its update number."""
    try:
        return isinstance(json.loads((folder / "trainer_state.json").read_text()).get("update"), int)
    except (OSError, ValueError, AttributeError):
        return False


def _fsync(path: Path) -> None:
    """Flush a file's or a folder's entry to disk (a rename is durable only once its folder is)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class TrainRun:
    def __init__(self, out: str | os.PathLike[str], loggers: Sequence[str] = ()) -> None:
        self.out = Path(out)
        self.checkpoints = self.out / "checkpoints"
        self.metrics_path = self.out / "metrics.jsonl"
        self._metrics = jsonl.Appender(self.metrics_path)
        self.loggers = tuple(loggers)
        self._sinks: list[Any] = []

    def open(self, identity: dict[str, Any], config: dict[str, Any], defaults: dict[str, Any] | None = None) -> None:
        """Start the run, or check that the run already in ``OUT`` has this identity.

        Only the keys of today's identity are compared; a key an older run never recorded counts
        as its ``defaults`` value, so adding a config field with a default keeps old runs resumable
        (:func:`~seed_gym.records.identity_diff`, as evaluation runs)."""
        path = self.out / "config.json"
        if path.exists():
            diff = identity_diff(json.loads(path.read_text()).get("identity", {}), identity, defaults)
            if diff:
                raise TrainRunMismatch(f"{self.out} holds a training run with another config (differs in: "
                                       f"{', '.join(diff)}); use another --out")
        jsonl.write_atomic(path, json.dumps({"identity": identity, "config": config}, indent=2, default=str))
        if self.loggers:  # only the process that opens the run (rank 0) logs
            from seed_gym.training.loggers import make_sinks

            self._sinks = make_sinks(self.loggers, self.out, config)

    def close(self) -> None:
        """Flush and close the loggers (metrics.jsonl needs nothing: every row is fsync'd)."""
        sinks, self._sinks = self._sinks, []
        for sink in sinks:
            sink.close()

    # -- checkpoints -------------------------------------------------------------------------
    def checkpoint_dir(self, update: int) -> Path:
        return self.checkpoints / f"update-{update:06d}"

    def latest(self) -> Path | None:
        """The checkpoint to resume from: the one ``LATEST`` names, or, when that one is gone or
        incomplete (removed by hand, say), the newest complete ``update-*``; None when there is none."""
        marker = self.checkpoints / "LATEST"
        if marker.exists():
            named = self.checkpoints / marker.read_text().strip()
            if named.name.startswith("update-") and _complete(named):
                return named
        done = sorted(p for p in self.checkpoints.glob("update-*") if _complete(p))
        return done[-1] if done else None

    @contextmanager
    def staged_checkpoint(self, update: int) -> Iterator[Path]:
        """A folder to write checkpoint ``update`` into; when the block ends without an error it is
        fsynced and renamed to :meth:`checkpoint_dir` (a leftover of an uncommitted earlier try at
        the same update is replaced). Commit it with :meth:`commit_checkpoint`."""
        final = self.checkpoint_dir(update)
        staging = self.checkpoints / f".{final.name}.staging"
        shutil.rmtree(staging, ignore_errors=True)  # what a killed writer left
        staging.mkdir(parents=True)
        yield staging
        for path in staging.iterdir():
            if path.is_file():
                _fsync(path)
        _fsync(staging)
        if final.exists():  # never the committed one: a resumed run only writes updates after LATEST
            self._discard(final)
        os.replace(staging, final)
        _fsync(self.checkpoints)

    def commit_checkpoint(self, update: int, keep: int) -> None:
        """Point LATEST at a fully written checkpoint (the marker moves last, atomically), then prune."""
        jsonl.write_atomic(self.checkpoints / "LATEST", self.checkpoint_dir(update).name)
        done = sorted(p for p in self.checkpoints.glob("update-*") if _complete(p))
        for old in done[:-keep]:
            self._discard(old)

    def _discard(self, folder: Path) -> None:
        """Remove a checkpoint folder: renamed away first, so a kill mid-removal leaves no
        ``update-*`` with part of its files."""
        trash = self.checkpoints / f".{folder.name}.discarded"
        shutil.rmtree(trash, ignore_errors=True)
        os.replace(folder, trash)
        shutil.rmtree(trash, ignore_errors=True)

    # -- metrics -----------------------------------------------------------------------------
    def log(self, row: dict[str, Any]) -> None:
        """Append one metrics row, and send its numbers to the loggers."""
        self._metrics.append([json.dumps(row, default=float)])
        if self._sinks:
            from seed_gym.training.loggers import log_row

            log_row(self._sinks, row)

    def metrics(self) -> list[dict[str, Any]]:
        """The metric rows, in order; lines torn by a kill are skipped."""
        return list(jsonl.read(self.metrics_path))

    def truncate_metrics(self, after_update: int) -> None:
        """Drop metric rows of updates the resumed run will redo (they were never checkpointed)."""
        rows = [r for r in self.metrics() if r.get("update", 0) <= after_update]
        jsonl.write_atomic(self.metrics_path, "".join(json.dumps(r, default=float) + "\n" for r in rows))

    def drop_evals_after(self, update: int) -> None:
        """Delete the evaluations of updates a resumed run will redo: they evaluated weights that
        were never committed (the update is evaluated before its checkpoint becomes LATEST)."""
        for folder in (self.out / "evals").glob("update-*"):
            if int(folder.name.split("-")[1]) > update:
                shutil.rmtree(folder, ignore_errors=True)

    def rollout_dir(self, update: int) -> Path:
        return self.out / "rollouts" / f"update-{update:06d}"

    def eval_dir(self, update: int, split: str) -> Path:
        return self.out / "evals" / f"update-{update:06d}" / split
