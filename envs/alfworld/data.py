"""ALFWorld game sources and splits.

Both sources are a ``json_2.1.1`` tree in the official layout
(``<split dir>/<task_type>-<Object>-<Recep>-<Parent>-<scene>/trial_<id>/game.tw-pddl``):

* ``official`` — the ALFWorld release, at ``$ALFWORLD_DATA`` (default ``~/.cache/alfworld``) or
  any path given as ``data=<path>`` (the tree itself or a folder holding ``json_2.1.1``);
* ``generated`` (the default) — games generated offline from the FloorPlans inside the alfworld
  wheel (:mod:`seed_gym.envs.alfworld.gen`), a split at a time, the first time it is needed.

Splits ``train``, ``seen``, ``unseen`` are ``train``, ``valid_seen``, ``valid_unseen``. Games are
collected with ALFWorld's own rules (``collect_game_files``): ``game.tw-pddl`` says
``solvable: true``, the path has neither ``movable`` nor ``Sliced``, the task type is one of the six.
Unlike ALFWorld, a folder those rules would take but that cannot be played is not skipped: a missing
``game.tw-pddl``, a file that is not JSON, a PDDL text cut short or garbled (a cheap structural
check, :func:`check_pddl`) and a split asked for that holds no game are each a
:class:`~seed_gym.core.DataError` naming the file, raised when the split is collected, not an
error in every episode.
A task id is the game folder relative to the tree, e.g.
``valid_unseen/pick_and_place_simple-Mug-None-Desk-308/trial_T2019..``, in a fixed hashed order.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from pathlib import Path

from seed_gym.cache import env_cache
from seed_gym.core import DataError, MissingDataError, UnknownTaskError
from seed_gym.datafiles import read_json
from seed_gym.progress import reporter_for
from seed_gym.tasks import Split, TaskSet, fingerprint, fingerprint_json, hashed_order

SPLIT_DIRS = {"train": "train", "seen": "valid_seen", "unseen": "valid_unseen"}
SPLIT_ALIASES = {"valid_seen": "seen", "valid_unseen": "unseen", "eval_in_distribution": "seen",
                 "eval_out_of_distribution": "unseen"}
TASK_TYPES = ("pick_and_place_simple", "look_at_obj_in_light", "pick_clean_then_place_in_recep",
              "pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep", "pick_two_obj_and_place")
GAME_FILE, TRAJ_FILE = "game.tw-pddl", "traj_data.json"


def tree_root(path: str | os.PathLike[str]) -> Path:
    """Accept the ``json_2.1.1`` folder itself or a folder that holds it."""
    path = Path(path).expanduser()
    return path / "json_2.1.1" if (path / "json_2.1.1").is_dir() else path


def official_root(data: str | None = None) -> Path:
    root = tree_root(data or os.environ.get("ALFWORLD_DATA") or Path.home() / ".cache" / "alfworld")
    if not any((root / d).is_dir() for d in SPLIT_DIRS.values()):
        raise MissingDataError(
            f"no ALFWorld games at {root}: expected {', '.join(SPLIT_DIRS.values())} folders. "
            "Point data= (or $ALFWORLD_DATA) at a json_2.1.1 tree, or use the generated games "
            "(the default).")
    return root


FIX_GAME = ("restore the folder from the ALFWorld release (alfworld-download) or regenerate the games "
            "(seed-gym data alfworld), or delete the folder")
#: What the engine's PDDL loader needs in each text: the opening and every section it reads.
PDDL_SECTIONS = {"pddl_domain": ("(define", "(domain", "(:predicates", "(:action"),
                 "pddl_problem": ("(define", "(problem", "(:domain", "(:objects", "(:init", "(:goal")}
_PDDL_COMMENT = re.compile(r";[^\n]*")


def check_pddl(path: Path, name: str, text: object) -> None:
    """A cheap structural check of one PDDL text of a game file (linear, no parser): present, its
    sections there, its parentheses balanced. It catches a text cut short, garbled or emptied; a
    well-formed text that the engine still cannot play is only found when it is played."""
    if not isinstance(text, str) or not text.strip():
        raise DataError(path, f"{name} is missing or empty", FIX_GAME)
    code = _PDDL_COMMENT.sub("", text)
    missing = [section for section in PDDL_SECTIONS[name] if section not in code]
    if missing:
        raise DataError(path, f"{name} is not a PDDL {name.removeprefix('pddl_')}: it has no "
                              f"{', '.join(missing)}", FIX_GAME)
    if code.count("(") != code.count(")"):
        depth = 0
        for line_no, line in enumerate(_PDDL_COMMENT.sub("", text).splitlines(), 1):
            depth += line.count("(") - line.count(")")
            if depth < 0:
                raise DataError(path, f"{name}, its line {line_no}: a ')' that closes nothing", FIX_GAME)
        raise DataError(path, f"{name}: {depth} '(' never closed (the text is cut short)", FIX_GAME)


def _is_collectable(game_dir: Path) -> bool:
    """ALFWorld's collect_game_files rules, for one game folder: False for what ALFWorld skips on
    purpose (``movable``/``Sliced``, another task type, a game not marked solvable); a folder it
    would play but that cannot be played (no game file, a file that is not JSON, a PDDL text that
    is cut short or garbled) is a :class:`~seed_gym.core.DataError`, never silently dropped."""
    rel = str(game_dir)
    if "movable" in rel or "Sliced" in rel:
        return False
    traj = read_json(game_dir / TRAJ_FILE, dict, FIX_GAME)
    if traj.get("task_type") not in TASK_TYPES:
        return False
    game_path = game_dir / GAME_FILE
    if not game_path.is_file():
        raise DataError(game_dir, f"a game folder with {TRAJ_FILE} but no {GAME_FILE}", FIX_GAME)
    game = read_json(game_path, dict, FIX_GAME)
    if game.get("solvable") is not True:
        return False
    for name in PDDL_SECTIONS:
        check_pddl(game_path, name, game.get(name))
    if not isinstance(game.get("grammar"), str) or not game["grammar"].strip():
        raise DataError(game_path, "grammar is missing or empty", FIX_GAME)
    return True


def _game_dirs(split_dir: Path) -> Iterator[Path]:
    for traj in split_dir.glob(f"*/*/{TRAJ_FILE}"):
        yield traj.parent


@lru_cache(maxsize=64)
def collect_split(root: Path, split_dir_name: str) -> tuple[str, ...]:
    """Task ids of the solvable games in one split folder (cached per process), in
    :func:`~seed_gym.tasks.hashed_order` so that every prefix mixes the six task types; ``()``
    when the folder does not exist. A game folder that cannot be played raises (:func:`_is_collectable`)."""
    split_dir = root / split_dir_name
    if not split_dir.is_dir():
        return ()
    ids = [f"{split_dir_name}/{d.relative_to(split_dir).as_posix()}"
           for d in _game_dirs(split_dir) if _is_collectable(d)]
    return hashed_order(ids)


def split_games(root: Path, name: str) -> tuple[str, ...]:
    """The task ids of split ``name`` (train, seen, unseen); a split without a game is an error
    when it is asked for: no folder, a :class:`MissingDataError`; an empty one, a :class:`DataError`."""
    folder = SPLIT_DIRS[name]
    ids = collect_split(root, folder)
    if ids:
        return ids
    if not (root / folder).is_dir():
        present = [d for d in SPLIT_DIRS.values() if (root / d).is_dir()]
        raise MissingDataError(f"no {folder} folder under {root} for split {name!r} (it has "
                               f"{', '.join(present) or 'none of ' + ', '.join(SPLIT_DIRS.values())}); "
                               "use another split or a full json_2.1.1 tree")
    folders = sum(1 for _ in _game_dirs(root / folder))
    why = (f"{folders} game folders, none playable by ALFWorld's rules (marked solvable, one of the six task "
           "types, no movable or Sliced object)") if folders else "no game folder (<task>/<trial>/traj_data.json)"
    raise DataError(root / folder, f"split {name!r} holds no game: {why}",
                    f"point data= at a json_2.1.1 tree whose {folder} folder holds games, or use another split")


def game_content_hash(root: Path, task_id: str) -> str:
    digest = hashlib.sha256()
    for name in (GAME_FILE, TRAJ_FILE):
        digest.update((root / task_id / name).read_bytes())
    return digest.hexdigest()[:16]


def task_type(root: Path, task_id: str) -> str:
    return json.loads((root / task_id / TRAJ_FILE).read_text())["task_type"]


def game_file(root: Path, task_id: str) -> Path:
    """The game file of a task id; unknown ids (or paths escaping the tree) raise.

    An id is the game folder's path relative to the tree, as the task set lists it, and nothing
    else: ``valid_seen/./x/trial``, a trailing ``/`` or ``..`` detours name no task."""
    parts = task_id.split("/") if isinstance(task_id, str) else []
    canonical = len(parts) == 3 and all(part not in ("", ".", "..") and "\\" not in part for part in parts)
    path = root / task_id if canonical else root
    try:
        known = canonical and (path / GAME_FILE).is_file()
    except (OSError, ValueError):  # a NUL byte, an unencodable or over-long name is no task id either
        known = False
    if not known:
        raise UnknownTaskError(f"unknown ALFWorld task {task_id!r} under {root}")
    return path / GAME_FILE


def _split(root: Path, name: str) -> Split:
    return Split(name, split_games(root, name), content_hash=lambda tid: game_content_hash(root, tid))


def _tree_listing_fingerprint(root: Path) -> str:
    """Cheap whole-tree fingerprint: every game file's path and size (stat only, no reads)."""
    parts = []
    for split_dir in SPLIT_DIRS.values():
        for path in sorted((root / split_dir).glob(f"*/*/{GAME_FILE}")):
            parts.append(f"{path.relative_to(root).as_posix()}:{path.stat().st_size}")
    return fingerprint(parts)


class _LazySplits(Mapping[str, Split]):
    """Splits resolved (and, for generated data, generated) only when first asked for."""

    def __init__(self, resolve: "callable[[str], Split]") -> None:  # type: ignore[valid-type]
        self._resolve = resolve
        self._cache: dict[str, Split] = {}

    def __getitem__(self, name: str) -> Split:
        if name not in SPLIT_DIRS:
            raise KeyError(name)
        if name not in self._cache:
            self._cache[name] = self._resolve(name)
        return self._cache[name]

    def __iter__(self) -> Iterator[str]:
        return iter(SPLIT_DIRS)

    def __len__(self) -> int:
        return len(SPLIT_DIRS)


class GameSource:
    """Where games come from; gives the task set and resolves task ids to files."""

    kind: str
    root: Path

    def task_set(self) -> TaskSet:
        raise NotImplementedError

    def ensure(self, split: str) -> None:
        """Make sure a split's games exist on disk (a no-op for official data)."""

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "root": str(self.root)}


class OfficialGames(GameSource):
    kind = "official"

    def __init__(self, data: str | None = None) -> None:
        self.root = official_root(data)

    def task_set(self) -> TaskSet:
        splits = _LazySplits(lambda name: _split(self.root, name))
        return TaskSet(splits, _tree_listing_fingerprint(self.root), default_split="train",
                       aliases=SPLIT_ALIASES)


class GeneratedGames(GameSource):
    """Generated games under ``root`` (default ``$SEED_GYM_HOME/alfworld/generated-seed<S>[-<sizes>]``)."""

    kind = "generated"

    def __init__(self, root: str | os.PathLike[str] | None = None, *, seed: int = 0,
                 sizes: Mapping[str, int] | None = None, workers: int | None = None) -> None:
        from seed_gym.envs.alfworld import gen

        self._gen = gen
        self.seed = int(seed)
        self.sizes = {**gen.DEFAULT_SIZES, **(sizes or {})}
        self.workers = workers
        if root:
            base = Path(root).expanduser()
        else:  # non-default sizes get their own folder, so they never replace the default games
            custom = "" if self.sizes == gen.DEFAULT_SIZES else "-" + fingerprint_json(self.sizes)[7:15]
            base = env_cache("alfworld") / f"generated-seed{self.seed}{custom}"
        self.base = base
        self.root = base / "json_2.1.1"

    def ensure(self, split: str) -> None:
        self._gen.generate_split(self.base, split, seed=self.seed, size=self.sizes[split],
                                 workers=self.workers,
                                 on_progress=reporter_for(f"generating ALFWorld {split} games"))
        collect_split.cache_clear()

    def _resolve(self, name: str) -> Split:
        self.ensure(name)
        return _split(self.root, name)

    def task_set(self) -> TaskSet:
        identity = {"generator": self._gen.GENERATOR_VERSION, "seed": self.seed, "sizes": self.sizes}
        return TaskSet(_LazySplits(self._resolve), fingerprint_json(identity), default_split="train",
                       aliases=SPLIT_ALIASES)

    def describe(self) -> dict[str, object]:
        return {**super().describe(), "seed": self.seed, "sizes": self.sizes,
                "generator": self._gen.GENERATOR_VERSION}


def game_source(data: str | None = None, *, seed: int = 0, sizes: Mapping[str, int] | None = None,
                workers: int | None = None) -> GameSource:
    """``None``/``"generated"``: generated games; ``"official"``: ``$ALFWORLD_DATA``; else a path.

    A path that holds a generated tree (it has ``generation.json`` files) is read as official data:
    whatever made a tree, it is read the same way.
    """
    if data in (None, "", "generated"):
        return GeneratedGames(seed=seed, sizes=sizes, workers=workers)
    if data == "official":
        return OfficialGames(None)
    return OfficialGames(data)
