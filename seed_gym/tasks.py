"""Task sets and named splits: explicit, ordered task-id lists with content fingerprints.

A split is never "whatever the loader found this time": it is an ordered tuple of task ids plus a
fingerprint of the tasks' *content*. Two results are comparable only when their split
fingerprints (and the env version) match; the fingerprint goes into every run manifest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property


def fingerprint(parts: Iterable[str | bytes]) -> str:
    """A short stable hash of a sequence of parts (``sha256:`` + 16 hex digits)."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return "sha256:" + digest.hexdigest()[:16]


def fingerprint_json(value: object) -> str:
    return fingerprint([json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)])


def hashed_order(task_ids: Iterable[str]) -> tuple[str, ...]:
    """A fixed order that mixes families: by a hash of each id, the same on every machine.

    Ids usually sort by family (``pick_and_place-...``, ``syn_nq-...``), so an alphabetical
    prefix (``-n 20``) would be all one family; every prefix of this order is a fair sample.
    Use it where the benchmark itself fixes no order (a benchmark whose goal file order is the protocol keeps it).
    """
    return tuple(sorted(task_ids, key=lambda tid: (hashlib.sha256(tid.encode()).hexdigest(), tid)))


@dataclass(frozen=True)
class Split:
    """An ordered list of task ids with a fingerprint of their content.

    ``content_hash(task_id)`` returns a hash of one task's content (its game files, goal, ...); the
    split fingerprint covers the ordered (id, content hash) pairs, so renaming, reordering or editing
    a task all change it. It is computed lazily and cached.
    """

    name: str
    task_ids: tuple[str, ...]
    content_hash: Callable[[str], str] = field(repr=False, compare=False)
    families: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.task_ids)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._id_set

    @cached_property
    def _id_set(self) -> frozenset[str]:
        return frozenset(self.task_ids)

    @cached_property
    def fingerprint(self) -> str:
        return fingerprint(f"{tid}\0{self.content_hash(tid)}" for tid in self.task_ids)

    def select(self, n: int | None = None) -> list[str]:
        """The first ``n`` tasks (all when ``n`` is None): evaluation panels are prefixes."""
        if n is None or n >= len(self.task_ids):
            return list(self.task_ids)
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        return list(self.task_ids[:n])


@dataclass(frozen=True)
class TaskSet:
    """The named splits of one env's data, plus a fingerprint of the data as a whole."""

    splits: Mapping[str, Split]
    data_fingerprint: str
    default_split: str = "train"
    aliases: Mapping[str, str] = field(default_factory=dict)

    def split(self, name: str) -> Split:
        key = self.aliases.get(name, name)
        if key not in self.splits:
            known = sorted(set(self.splits) | set(self.aliases))
            raise KeyError(f"unknown split {name!r}; known: {', '.join(known)}")
        return self.splits[key]

    def names(self) -> list[str]:
        return list(self.splits)


def disjoint(splits: Sequence[Split]) -> bool:
    """True when no task id appears in two of the splits."""
    seen: set[str] = set()
    for split in splits:
        ids = set(split.task_ids)
        if ids & seen:
            return False
        seen |= ids
    return True
