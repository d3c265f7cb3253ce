"""Generate a split: candidates verified in parallel, kept deterministically, moved in atomically.

Rules:

* Candidate ``i`` is a pure function of ``(seed, split, i)`` (:mod:`.candidates`). Each task type
  ``t`` takes its ``quota[t]`` games from its own candidates, the first solvable ones by index.
  Candidates of a type are verified in index order and never more than ``quota - solved`` at
  once, so exactly the candidates up to the last kept one are ever tried: the output (and the
  discard count) do not depend on ``workers`` or timing.
* Verification runs the real engine with the fixed handcoded expert in worker processes (spawn
  context, one engine per worker, reused across games). A candidate the expert cannot win within
  ``MAX_STEPS`` is discarded and never written to the split; the winning command list becomes the
  game's ``walkthrough``.
* Output is built in a temp dir next to the target and renamed into place at the end, under an
  ``fcntl`` lock on the root, so concurrent generators never race or leave half a split. A split
  whose ``generation.json`` matches ``(generator_version, seed, split, size)`` is returned as is.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seed_gym.spawning import main_free_spawn_context

from .candidates import make_candidate
from .gamefiles import write_game
from .splits import DEFAULT_SIZES, SPLIT_DIRS, check_split, split_scenes, task_quotas, type_schedule

GENERATOR_VERSION = "2"
MANIFEST = "generation.json"
LOCK_FILE = ".seed-gym-alfworld-gen.lock"
DATA_DIR = "json_2.1.1"
MAX_STEPS = 50           # a game is kept only if the expert wins within ALFWorld's episode cap
GIVE_UP_FACTOR = 10      # a task type that needs over 10 candidates per game (+20) is broken
_SCRATCH = ".candidates"  # inside the temp split dir: one folder per candidate being verified

ProgressFn = Callable[[int, int], None]


# --------------------------------------------------------------------------- worker side

_ENGINE: Any = None


def _init_worker() -> None:
    """Build this worker's engine once; every candidate it verifies reuses it."""
    global _ENGINE
    from ..engine import make_engine

    _ENGINE = make_engine(expert=True, expert_max_steps=MAX_STEPS)


@dataclass(frozen=True)
class Verdict:
    """What a worker reports for one candidate."""

    index: int
    task_type: str
    relative_dir: str
    solved: bool
    error: str = ""


VerifyFn = Callable[[int, str, int, str, str], Verdict]


def verify_candidate(seed: int, split: str, index: int, task_type: str, scratch: str) -> Verdict:
    """Write candidate ``index`` under ``scratch``, play it with the expert, keep its solution."""
    from ..engine import solve_with_expert

    if _ENGINE is None:
        _init_worker()
    candidate = make_candidate(seed, split, index, task_type)
    folder = Path(scratch) / candidate.relative_dir
    game_file = write_game(folder, candidate)
    try:
        walkthrough = solve_with_expert(str(game_file), max_steps=MAX_STEPS, engine=_ENGINE)
    except Exception as error:  # an engine failure on one game discards that game only
        # Only the exception's type: messages may hold temp paths and break byte-identity.
        return Verdict(index, task_type, candidate.relative_dir, False, type(error).__name__)
    if walkthrough is None:
        return Verdict(index, task_type, candidate.relative_dir, False)
    write_game(folder, candidate, walkthrough)
    return Verdict(index, task_type, candidate.relative_dir, True)


# --------------------------------------------------------------------------- parent side

def _type_indices(schedule: list[str], task_type: str) -> Iterator[int]:
    """Candidate indices of ``task_type``, ascending, without end."""
    period = len(schedule)
    offsets = [k for k, t in enumerate(schedule) if t == task_type]
    cycle = 0
    while True:
        for k in offsets:
            yield cycle * period + k
        cycle += 1


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _spawn_pool(workers: int) -> Executor:
    """Worker processes (spawn: no forked engine state), each building its engine once; they
    never re-run the caller's script, so an unguarded top-level ``seed_gym.make`` works."""
    return ProcessPoolExecutor(max_workers=workers, mp_context=main_free_spawn_context(),
                               initializer=_init_worker)


def select_games(out: Path, seed: int, split: str, size: int, workers: int,
                 on_progress: ProgressFn | None = None, *,
                 verify: VerifyFn = verify_candidate,
                 executor: Callable[[int], Executor] = _spawn_pool) -> dict[str, Any]:
    """Fill ``out`` with the split's games; the counts for ``generation.json``.

    ``verify`` and ``executor`` are seams for tests (a fake verifier on threads); the
    selection rule, and so the output, is the same for any of them.
    """
    quotas = task_quotas(split, size)
    schedule = type_schedule(quotas)
    next_index = {t: _type_indices(schedule, t) for t in quotas if quotas[t]}
    upcoming = {t: next(it) for t, it in next_index.items()}
    solved = dict.fromkeys(quotas, 0)
    running = dict.fromkeys(quotas, 0)
    tried_by_type = dict.fromkeys(quotas, 0)
    tried = discarded = 0
    errors: list[str] = []
    scratch = out / _SCRATCH
    scratch.mkdir()
    if on_progress:
        on_progress(0, size)

    def open_types() -> list[str]:
        return [t for t in upcoming if solved[t] + running[t] < quotas[t]]

    with executor(workers) as pool:
        in_flight: set[Future[Verdict]] = set()
        while True:
            # Keep the pool busy, lowest candidate index first (order only affects timing).
            while len(in_flight) < 2 * workers and open_types():
                task_type = min(open_types(), key=lambda t: upcoming[t])
                index = upcoming[task_type]
                upcoming[task_type] = next(next_index[task_type])
                running[task_type] += 1
                in_flight.add(pool.submit(verify, seed, split, index, task_type,
                                          str(scratch / str(index))))
            if not in_flight:
                break
            done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
            for future in done:
                verdict = future.result()
                tried += 1
                tried_by_type[verdict.task_type] += 1
                running[verdict.task_type] -= 1
                source = scratch / str(verdict.index)
                if verdict.solved:
                    solved[verdict.task_type] += 1
                    target = out / verdict.relative_dir
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.rename(source / verdict.relative_dir, target)
                else:
                    discarded += 1
                    if verdict.error:
                        errors.append(f"candidate {verdict.index}: {verdict.error}")
                        errors.sort()  # completion order varies; the manifest must not
                shutil.rmtree(source, ignore_errors=True)
                if on_progress:
                    on_progress(sum(solved.values()), size)
                limit = GIVE_UP_FACTOR * quotas[verdict.task_type] + 20
                if tried_by_type[verdict.task_type] > limit:
                    raise RuntimeError(f"{verdict.task_type}: {solved[verdict.task_type]} of "
                                       f"{quotas[verdict.task_type]} games solvable after "
                                       f"{limit} candidates; errors: {errors[:5]}")
    shutil.rmtree(scratch, ignore_errors=True)
    return {"task_types": quotas, "candidates": tried, "discarded": discarded,
            "discarded_by_type": {t: tried_by_type[t] - solved[t] for t in quotas},
            "errors": errors}


def _manifest_matches(split_dir: Path, wanted: dict[str, Any]) -> bool:
    try:
        found = json.loads((split_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return all(found.get(key) == value for key, value in wanted.items())


@dataclass(frozen=True)
class Unfinished:
    """A staging folder of a split generation: ``running`` when a generator holds the root's lock
    now, else left by one that was killed (the next generation of that split deletes it)."""

    path: Path
    split_dir: str
    running: bool


def unfinished_generations(root: Path) -> list[Unfinished]:
    """The staging folders under ``root/json_2.1.1`` (what ``seed-gym doctor`` flags)."""
    base = Path(root) / DATA_DIR
    staged = sorted(p for p in base.glob(".*.tmp-*") if p.is_dir()) if base.is_dir() else []
    if not staged:
        return []
    running = _lock_held(Path(root))
    return [Unfinished(path, path.name[1:].split(".tmp-", 1)[0], running) for path in staged]


def _lock_held(root: Path) -> bool:
    """Whether some generator holds ``root``'s lock right now (tried without waiting)."""
    lock = root / LOCK_FILE
    if not lock.exists():
        return False
    with open(lock, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


@contextlib.contextmanager
def _root_lock(root: Path) -> Iterator[None]:
    """Exclusive ``fcntl`` lock on ``root``; blocks until other generators are done."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK_FILE, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def generate_split(root: Path, split: str, *, seed: int = 0, size: int | None = None,
                   workers: int | None = None,
                   on_progress: ProgressFn | None = None) -> Path:
    """Generate ``root/json_2.1.1/<SPLIT_DIRS[split]>`` (or return it if already there).

    ``size`` defaults to ``DEFAULT_SIZES[split]``; ``workers`` to the usable CPU count.
    ``on_progress(done, total)`` is called in this process as candidates finish, with the number
    of games kept so far and ``size``. Returns the split directory.
    """
    check_split(split)
    size = DEFAULT_SIZES[split] if size is None else int(size)
    if size < 0:
        raise ValueError("size must be >= 0")
    workers = default_workers() if workers is None else max(1, int(workers))
    root = Path(root)
    base = root / DATA_DIR
    target = base / SPLIT_DIRS[split]
    wanted = {"generator_version": GENERATOR_VERSION, "seed": seed, "split": split, "size": size}
    with _root_lock(root):
        if _manifest_matches(target, wanted):
            return target
        base.mkdir(parents=True, exist_ok=True)
        prefix = f".{target.name}.tmp-"
        for stale in base.glob(prefix + "*"):  # left by a generator that died; we hold the lock
            shutil.rmtree(stale, ignore_errors=True)
        staging = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
        staging.chmod(0o755)  # mkdtemp makes it private; the split is ordinary data
        try:
            counts = select_games(staging, seed, split, size, workers, on_progress)
            manifest = {**wanted, "split_dir": SPLIT_DIRS[split], "scenes": split_scenes(split),
                        **counts}
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n",
                                            encoding="utf-8")
            if target.exists():  # an older or different split: swap it out, then drop it
                old = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
                os.rename(target, old / "old")
                os.rename(staging, target)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.rename(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
    return target
