"""Episode records and run directories: the one format scoring, training and reports read.

A run directory holds one agent x env x split x config:

* ``manifest.json`` — written first: the run's identity (agent spec, env id/version/kwargs, data and
  split fingerprints, the planned episodes, max steps, group size, seed) plus provenance (package
  versions, git commit, host). Resuming checks the identity matches.
* ``episodes.jsonl`` — one JSON object per finished episode, appended and fsynced as each one
  ends, so a killed run loses at most the episodes that were in flight. A line that is not a
  whole record (torn by a kill mid-write, even inside a character) is ignored and that episode is
  run again; the first append of a resumed run moves such lines to ``episodes.jsonl.torn``
  (:mod:`seed_gym.jsonl`).
* ``summary.json`` — the scores, written at the end (and recomputable from the records).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from seed_gym import jsonl
from seed_gym.core import SeedGymError

RECORD_VERSION = 1
MANIFEST, EPISODES, SUMMARY = "manifest.json", "episodes.jsonl", "summary.json"


@dataclass
class StepRecord:
    """One env step: what the agent saw, what it said, what happened."""

    t: int
    observation: str
    action: str
    reward: float
    invalid_action: bool
    admissible_actions: list[str] | None = None
    response: str | None = None
    prompt: str | None = None
    valid_format: bool = True
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class EpisodeRecord:
    """One finished episode. ``status`` is ``completed`` (terminated), ``truncated`` (step cap) or
    ``error`` (the env failed; ``error`` says why)."""

    episode_id: str
    task: dict[str, str]
    agent: str
    group_index: int
    seed: int
    steps: list[StepRecord]
    final_observation: str
    won: bool
    score: float
    total_reward: float
    status: str
    wall_seconds: float
    error: str | None = None
    record_version: int = RECORD_VERSION

    @property
    def num_steps(self) -> int:
        return len(self.steps)

    @property
    def num_invalid(self) -> int:
        return sum(step.invalid_action for step in self.steps)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EpisodeRecord":
        fields = dict(data)
        fields["steps"] = [StepRecord(**step) for step in fields.get("steps", [])]
        return cls(**fields)


def episode_id(task_id: str, group_index: int) -> str:
    return f"{task_id}#{group_index}"


class RunMismatchError(SeedGymError, ValueError):
    """``--out`` points at a run with a different identity; resuming would mix results."""


#: Distributions every run records; an env adds its own engine's (its profile's ``packages``).
CORE_PACKAGES = ("seed-gym", "gymnasium", "numpy", "torch", "transformers")


def provenance(env_packages: Sequence[str] = ()) -> dict[str, Any]:
    """Package versions, git commit and host: what a reader needs to reproduce a row."""
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for package in (*CORE_PACKAGES[:2], *env_packages, *CORE_PACKAGES[2:]):
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            continue
    return {
        "packages": versions,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "git_commit": _git_commit(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "argv": sys.argv,
    }


def _git_commit() -> str | None:
    try:
        here = Path(__file__).resolve().parent
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5, check=False)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


class RunDir:
    """Reads and appends the files of one run directory."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._repaired = False

    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    @property
    def episodes_path(self) -> Path:
        return self.path / EPISODES

    @property
    def summary_path(self) -> Path:
        return self.path / SUMMARY

    def exists(self) -> bool:
        return self.manifest_path.exists()

    # -- manifest ------------------------------------------------------------------------
    def read_manifest(self) -> dict[str, Any]:
        if not self.exists():
            raise SeedGymError(f"{self.path} is not a run directory (no {MANIFEST})")
        return json.loads(self.manifest_path.read_text())

    def open(self, identity: Mapping[str, Any], extra: Mapping[str, Any]) -> None:
        """Create the run, or check that an existing one has the same ``identity``."""
        if self.exists():
            existing = self.read_manifest().get("identity", {})
            if _canonical(existing) != _canonical(identity):
                diff = sorted(k for k in set(existing) | set(identity) if existing.get(k) != identity.get(k))
                raise RunMismatchError(
                    f"{self.path} holds a different run (differs in: {', '.join(diff)}); "
                    "use another --out, or --overwrite to start it again")
            return
        self.path.mkdir(parents=True, exist_ok=True)
        manifest = {"record_version": RECORD_VERSION, "identity": dict(identity), **extra}
        _atomic_write(self.manifest_path, json.dumps(manifest, indent=2, default=str))

    # -- episodes ------------------------------------------------------------------------
    def iter_episodes(self) -> Iterator[EpisodeRecord]:
        """Every whole record in the file, in order; torn lines are skipped (their episodes re-run)."""
        return jsonl.read(self.episodes_path, EpisodeRecord.from_dict)

    def finished(self) -> dict[str, EpisodeRecord]:
        """Episode id -> its record; the first record wins if one was ever written twice."""
        done: dict[str, EpisodeRecord] = {}
        for record in self.iter_episodes():
            done.setdefault(record.episode_id, record)
        return done

    def append(self, records: Iterable[EpisodeRecord]) -> None:
        lines = [record.to_json() for record in records]
        if not lines:
            return
        if not self._repaired or not jsonl.ends_cleanly(self.episodes_path):
            # Once per process, and after any torn write: what a killed writer left is set aside.
            jsonl.repair(self.episodes_path, EpisodeRecord.from_dict)
            self._repaired = True
        jsonl.append(self.episodes_path, lines)

    # -- summary -------------------------------------------------------------------------
    def write_summary(self, summary: Mapping[str, Any]) -> None:
        _atomic_write(self.summary_path, json.dumps(summary, indent=2, default=str))

    def read_summary(self) -> dict[str, Any]:
        return json.loads(self.summary_path.read_text())


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _atomic_write(path: Path, text: str) -> None:
    jsonl.write_atomic(path, text.encode("utf-8"))
