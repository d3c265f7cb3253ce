"""Append-only JSON-lines files that survive a kill at any byte.

A run appends one JSON object per line and fsyncs. A kill mid-write can leave a last line cut
anywhere, even inside a multi-byte character; a disk or a hand can leave worse. Readers therefore
take a line only when it is valid UTF-8 holding one JSON *object* that the caller accepts, and skip
anything else. :func:`repair` makes the file whole again before the next append: it keeps the good
lines, in order, and moves every other line to ``<file>.torn`` (nothing is thrown away). Writers
append through an :class:`Appender`, which repairs when needed.

:func:`write_atomic` is the one way run files (manifests, summaries, configs, markers) are
rewritten: a reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def parse_object(raw: bytes) -> dict[str, Any] | None:
    """The JSON object on one line, or None when the line is not one (torn, not UTF-8, not an object)."""
    try:
        value = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def read(path: Path, build: Callable[[dict[str, Any]], T] = lambda row: row) -> Iterator[T]:
    """The lines of ``path`` that ``build`` turns into an item; the rest are skipped.

    ``build`` raising ``TypeError``, ``ValueError`` or ``KeyError`` means "not a whole record"."""
    if not path.exists():
        return
    with path.open("rb") as handle:
        for raw in handle:
            item = _build(raw, build)
            if item is not None:
                yield item


def _build(raw: bytes, build: Callable[[dict[str, Any]], T]) -> T | None:
    row = parse_object(raw)
    if row is None:
        return None
    try:
        return build(row)
    except (TypeError, ValueError, KeyError):
        return None


def repair(path: Path, build: Callable[[dict[str, Any]], Any] = lambda row: row) -> int:
    """Rewrite ``path`` with its good lines only (atomically); the others go to ``<path>.torn``.

    Returns the number of lines moved. A good last line without its newline gets one."""
    if not path.exists():
        return 0
    good: list[bytes] = []
    torn: list[bytes] = []
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            (good if _build(raw, build) is not None else torn).append(raw.rstrip(b"\r\n") + b"\n")
    if torn:
        with path.with_name(path.name + ".torn").open("ab") as handle:
            handle.writelines(torn)
        write_atomic(path, b"".join(good))
    elif good and not path.read_bytes().endswith(b"\n"):
        with path.open("ab") as handle:
            handle.write(b"\n")
    return len(torn)


def ends_cleanly(path: Path) -> bool:
    """True when ``path`` is missing, empty or ends with a newline (a cheap check before appending)."""
    if not path.exists() or not path.stat().st_size:
        return True
    with path.open("rb") as handle:
        handle.seek(-1, os.SEEK_END)
        return handle.read(1) == b"\n"


class Appender:
    """The writer of one JSON-lines file in this process.

    Before its first append, and after any append that left the file without a final newline (a
    write cut short), the file is repaired (:func:`repair`, with ``build``): what a killed writer
    left is set aside, so a new line never joins a fragment."""

    def __init__(self, path: Path, build: Callable[[dict[str, Any]], Any] = lambda row: row) -> None:
        self.path = path
        self.build = build
        self._repaired = False

    def append(self, rows: Iterable[str]) -> None:
        """Append serialised objects, one per line, and fsync; nothing to append touches nothing."""
        text = "".join(row + "\n" for row in rows)
        if not text:
            return
        if not self._repaired or not ends_cleanly(self.path):
            repair(self.path, self.build)
            self._repaired = True
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write ``data`` (text as UTF-8) to a temporary sibling, fsync, and rename it over ``path``;
    the folder is made if missing."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
