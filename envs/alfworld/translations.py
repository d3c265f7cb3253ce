"""fast-downward's translation of an ALFWorld game, computed once per game and kept.

TextWorld's ``PddlState`` runs ``pddl2sas`` twice on every load and reset (the plain task, and an
optimised one for the planner), although both are functions of the (domain, problem) texts alone.
Here they are kept by content:

* in memory, per process: an LRU of ``SEED_GYM_ALFWORLD_CACHE`` games (default 64);
* on disk, shared by every process and run: ``<SEED_GYM_HOME>/alfworld/translations/<version>/``,
  one zlib-compressed file per SAS text (about 25 kB a game), named by the sha256 of (domain,
  problem) and versioned by the translator's package version and :data:`STORE_TAG`, so a new
  translator never reads an old entry. Files are written atomically (a temporary file, then a
  rename), so concurrent workers and a killed run never leave a torn entry; an unreadable entry is
  recomputed. ``SEED_GYM_ALFWORLD_DISK_CACHE`` = ``0`` turns the disk store off (the bench's cold
  rows); a folder path puts it there.

The parsed task itself is not stored: parsing and normalising the two texts takes milliseconds and
gives the same task object the translation would have returned (the engine checker compares every
state either way). The optimised translation is computed only when the planner is first asked to
replan in a state (:meth:`Translations.replan_sas`): ALFWorld's text game never needs it, and it
costs as much as the plain one.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import sys
import tempfile
import zlib
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from seed_gym.cache import env_cache

#: Bumped when what is stored, or how it is computed, changes.
STORE_TAG = "sas1"
_T = TypeVar("_T")


def _int_env(name: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(name, default)))
    except ValueError:
        return default


def content_key(*parts: str) -> str:
    """sha256 of ``parts`` (NUL-separated)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\0")
    return digest.hexdigest()


class LRU:
    """A small least-recently-used map that builds what it misses and counts hits and misses."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[str, Any] = OrderedDict()
        self.hits = self.misses = 0

    def get(self, key: str, build: Callable[[], _T]) -> _T:
        if key in self.items:
            self.hits += 1
            self.items.move_to_end(key)
            return self.items[key]
        self.misses += 1
        value = build()
        self.items[key] = value
        while len(self.items) > self.size:
            self.items.popitem(last=False)
        return value


def parse_task(domain: str, problem: str) -> Any:
    """The normalised PDDL task of (domain, problem), as ``pddl2sas`` builds it before grounding."""
    sys.argv = ["translate.py", "domain", "task"]  # fast-downward's option parser reads it on import
    from fast_downward.translate import normalize
    from fast_downward.translate.pddl_parser import lisp_parser, parsing_functions

    with contextlib.redirect_stdout(io.StringIO()):  # its warnings, which pddl2sas swallows too
        task = parsing_functions.parse_task(lisp_parser.parse_nested_list(domain.split("\n")),
                                            lisp_parser.parse_nested_list(problem.split("\n")))
        normalize.normalize(task)
    return task


def _translate(domain: str, problem: str, optimize: bool) -> str:
    import fast_downward

    _, sas = fast_downward.pddl2sas(domain, problem, verbose=False, optimize=optimize)
    return sas


def translator_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"fast-downward-textworld-{version('fast-downward-textworld')}"
    except PackageNotFoundError:
        return "fast-downward-unknown"


DISK_CACHE_VARIABLE = "SEED_GYM_ALFWORLD_DISK_CACHE"


def disk_store_root() -> Path | None:
    """Where the disk store lives: ``$SEED_GYM_ALFWORLD_DISK_CACHE`` if it names a folder, None if
    it says ``0``/``off``, else under the env's cache folder."""
    setting = os.environ.get(DISK_CACHE_VARIABLE, "").strip()
    if setting.lower() in {"0", "false", "no", "off"}:
        return None
    if setting and setting.lower() not in {"1", "true", "yes", "on"}:
        return Path(setting).expanduser() / f"{translator_version()}+{STORE_TAG}"
    return env_cache("alfworld") / "translations" / f"{translator_version()}+{STORE_TAG}"


class DiskStore:
    """Compressed SAS texts on disk, one file per (key, kind); misses and bad files return None."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.hits = self.misses = self.writes = 0

    def _path(self, key: str, kind: str) -> Path:
        return self.root / key[:2] / f"{key}.{kind}.z"

    def read(self, key: str, kind: str) -> str | None:
        try:
            text = zlib.decompress(self._path(key, kind).read_bytes()).decode("utf-8")
        except (OSError, zlib.error, UnicodeDecodeError):
            self.misses += 1
            return None
        self.hits += 1
        return text

    def write(self, key: str, kind: str, text: str) -> None:
        path = self._path(key, kind)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".tmp-", delete=False) as handle:
                handle.write(zlib.compress(text.encode("utf-8"), 1))
            os.replace(handle.name, path)
            self.writes += 1
        except OSError:  # a read-only or full cache costs speed, never a game
            try:
                os.unlink(handle.name)
            except (OSError, UnboundLocalError):
                pass


class Translations:
    """Per-process memory LRU in front of the optional disk store."""

    def __init__(self, size: int, store: DiskStore | None) -> None:
        self.memory = LRU(size)
        self.store = store

    def _sas(self, domain: str, problem: str, kind: str) -> str:
        key = content_key(domain, problem)

        def build() -> str:
            text = self.store.read(key, kind) if self.store else None
            if text is None:
                text = _translate(domain, problem, optimize=kind == "replan")
                if self.store:
                    self.store.write(key, kind, text)
            return text

        text = self.memory.get(f"{key}:{kind}", build)
        sys.argv = ["translate.py", "domain", "task"]  # what pddl2sas leaves behind; keep it so
        return text

    def task_and_sas(self, domain: str, problem: str) -> tuple[Any, str]:
        """The parsed task and the plain SAS text (what a stock state loads on every reset)."""
        key = content_key(domain, problem)
        sas = self._sas(domain, problem, "sas")
        task = self.memory.get(f"{key}:task", lambda: parse_task(domain, problem))
        return task, sas

    def memo(self, domain: str, problem: str, kind: str, build: Callable[[], _T]) -> _T:
        """Anything else that is a function of the game alone, kept in memory beside its
        translation under ``kind``; never written to disk."""
        return self.memory.get(f"{content_key(domain, problem)}:{kind}", build)

    def replan_sas(self, domain: str, problem: str) -> str:
        """The optimised SAS text the planner replans on."""
        return self._sas(domain, problem, "replan")

    def stats(self) -> dict[str, int]:
        found = {"translation_hits": self.memory.hits, "translation_misses": self.memory.misses}
        if self.store:
            found.update(disk_hits=self.store.hits, disk_misses=self.store.misses, disk_writes=self.store.writes)
        return found


_SHARED: Translations | None = None


def shared() -> Translations:
    """This process's translations (built on first use, so environment variables set before the
    first game count)."""
    global _SHARED
    if _SHARED is None:
        root = disk_store_root()
        store = DiskStore(root) if root is not None else None
        # Up to four entries per game: task, plain SAS, initial facts, planner SAS.
        _SHARED = Translations(4 * _int_env("SEED_GYM_ALFWORLD_CACHE", 64), store)
    return _SHARED
