"""Episode records and run directories: the one format scoring, training and reports read.

A run directory holds one agent x env x split x config:

* ``manifest.json`` — written first: the run's identity (agent spec, env id/version/kwargs, data and
  split fingerprints, the planned episodes, max steps, group size, seed) plus provenance (package
  versions, git commit, host). Resuming checks the identity matches (:func:`identity_diff`, the
  rule training runs follow too).
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
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from seed_gym import jsonl
from seed_gym.core import SeedGymError

#: 2: what training reads back (system ... retokenize) became :class:`ActionTrace` fields; version-1
#: records kept them in ``meta`` and are migrated when read (:meth:`StepRecord.from_dict`).
RECORD_VERSION = 2
MANIFEST, EPISODES, SUMMARY = "manifest.json", "episodes.jsonl", "summary.json"


@dataclass(kw_only=True, slots=True)
class ActionTrace:
    """How an agent produced one action: what the agent returns (:class:`~seed_gym.agent.AgentAction`)
    and its step's record keep, field for field.

    ``response`` (what the model said), ``prompt`` (the user turn; None with ``record_prompt=hash``)
    and ``valid_format`` (the response parsed) serve every reader. The next fields are what training
    rebuilds a sample from (:mod:`seed_gym.training.batch`); agents that do not generate leave them
    at their defaults:

    * ``system`` — the prompt's system text, if it had one;
    * ``continuation`` — the segments (``{"text", "max_tokens"?}``) of the assistant turn the prompt
      continued (Search-R1's transcript), if it continued one;
    * ``token_ids`` / ``logprobs`` — the sampled tokens and their log-probs, when the agent ran
      with ``@tokens=1`` / ``@logprobs=1`` (and the backend returned them);
    * ``finish_reason`` — ``"stop"`` or ``"length"``: retokenised responses get EOS only after a stop;
    * ``retokenize`` — train on ``response`` re-tokenised, without EOS, not on ``token_ids``
      (Search-R1 keeps only the response as the env took it).

    ``meta`` holds diagnostics nothing reads back (template, prompt sha, token counts, latency,
    parse flags, ranked-choice scores, the raw response before a cut)."""

    response: str | None = None
    prompt: str | None = None
    valid_format: bool = True
    system: str | None = None
    continuation: list[dict[str, Any]] | None = None
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    finish_reason: str | None = None
    retokenize: bool = False
    meta: dict[str, Any] = field(default_factory=dict)

    def trace(self) -> dict[str, Any]:
        """These fields by name, values as they are (not copied): how an action's trace becomes its step's."""
        return {name: getattr(self, name) for name in _TRACE_FIELDS}


#: ActionTrace's field names, looked up once (the rollout engine asks for a trace every step).
_TRACE_FIELDS = tuple(f.name for f in fields(ActionTrace))


#: The trace fields version-1 records kept in ``meta``.
_FORMERLY_META = ("system", "continuation", "token_ids", "logprobs", "finish_reason", "retokenize")


@dataclass(slots=True)
class StepRecord(ActionTrace):
    """One env step: what the agent saw, what it said (its :class:`ActionTrace`), what happened."""

    t: int
    observation: str
    action: str
    reward: float
    invalid_action: bool
    admissible_actions: list[str] | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "StepRecord":
        """A step as written by any record version: keys a version-1 record kept in ``meta`` move
        to their fields (a field written as such wins), so no reader looks in two places."""
        step = dict(data)
        meta = dict(step.get("meta") or {})
        for name in _FORMERLY_META:
            if name in meta:
                step.setdefault(name, meta.pop(name))
        step["meta"] = meta
        return cls(**step)


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
        """One JSON line, UTF-8 as written. Text that is not valid Unicode (a lone surrogate, which
        an agent can send: JSON's ``"\\ud800"`` decodes to one) is written escaped, so the line
        still encodes and reads back as it was."""
        data = asdict(self)
        line = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:
            line = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
        return line

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EpisodeRecord":
        values = dict(data)
        values["steps"] = [StepRecord.from_dict(step) for step in values.get("steps", [])]
        return cls(**values)


def episode_id(task_id: str, group_index: int) -> str:
    return f"{task_id}#{group_index}"


class RunMismatchError(SeedGymError, ValueError):
    """``--out`` points at a run with a different identity; resuming would mix results."""


def identity_diff(recorded: Mapping[str, Any], current: Mapping[str, Any],
                  defaults: Mapping[str, Any] | None = None) -> list[str]:
    """The keys of ``current`` (today's identity) on which ``recorded`` (what a run folder wrote
    when it started) differs, sorted; empty when the run may be resumed.

    The one rule for resuming a run folder (evaluation runs, training runs):

    * only today's keys are compared: a key that left the identity no longer matters;
    * a key the recorded identity lacks counts as its ``defaults`` value (None when not given), so
      adding a key keeps older runs resumable as long as it holds its default. A nested key is
      named by its dotted path (``agent_config.choose``) and filled in wherever its parent exists;
    * values compare as the JSON text the run folder holds (tuples as lists, paths as strings;
      ``1``, ``1.0`` and ``true`` all differ)."""
    filled = _with_defaults(recorded, defaults or {})
    return sorted(key for key in current if _canonical(filled.get(key)) != _canonical(current[key]))


def _with_defaults(recorded: Mapping[str, Any], defaults: Mapping[str, Any]) -> dict[str, Any]:
    filled = json.loads(_canonical(recorded))  # a deep copy
    for path in sorted(defaults, key=lambda p: p.count(".")):  # parents before their children
        *parents, key = path.split(".")
        node: Any = filled
        for name in parents:
            node = node.get(name) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.setdefault(key, json.loads(_canonical(defaults[path])))  # a copy: defaults stay as given
    return filled


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
        "cpu": cpu_description(),
        "git_commit": _git_commit(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "argv": sys.argv,
    }


#: CPU features that pick torch's CPU kernels, and so how CPU training rounds: a start retrained on a
#: CPU with other features need not be the same weights.
KERNEL_FEATURES = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")


def cpu_description() -> dict[str, Any]:
    """The host CPU's model name, logical cores and :data:`KERNEL_FEATURES` (Linux ``/proc/cpuinfo``;
    elsewhere only what :mod:`platform` knows)."""
    model, flags = platform.processor(), set()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name":
                model = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
            if model and flags:
                break
    except OSError:
        pass
    return {"model": model, "cores": os.cpu_count(), "features": [f for f in KERNEL_FEATURES if f in flags]}


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
        self._episodes = jsonl.Appender(self.episodes_path, EpisodeRecord.from_dict)

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

    def open(self, identity: Mapping[str, Any], extra: Mapping[str, Any],
             defaults: Mapping[str, Any] | None = None) -> None:
        """Create the run, or check that an existing one has this ``identity`` by
        :func:`identity_diff`'s rule (``defaults``: what a run that never recorded a key used)."""
        if self.exists():
            diff = identity_diff(self.read_manifest().get("identity", {}), identity, defaults)
            if diff:
                raise RunMismatchError(
                    f"{self.path} holds a different run (differs in: {', '.join(diff)}); "
                    "use another --out, or --overwrite to start it again")
            return
        self.path.mkdir(parents=True, exist_ok=True)
        manifest = {"record_version": RECORD_VERSION, "identity": dict(identity), **extra}
        jsonl.write_atomic(self.manifest_path, json.dumps(manifest, indent=2, default=str))

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
        self._episodes.append(record.to_json() for record in records)

    # -- summary -------------------------------------------------------------------------
    def write_summary(self, summary: Mapping[str, Any]) -> None:
        jsonl.write_atomic(self.summary_path, json.dumps(summary, indent=2, default=str))

    def read_summary(self) -> dict[str, Any]:
        return json.loads(self.summary_path.read_text())


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)
