"""``seed-gym data alfworld --check-engine DIR``: the fast engine plays every game like stock.

For every solvable game under ``DIR`` (a ``json_2.1.1`` tree, or a folder holding one) a worker
builds one stock and one fast engine (both with the fixed expert) and plays on both, in lock step:

1. load + reset, then the expert's walkthrough (the stock expert's next action each step, until
   won or ``max_steps``);
2. reset without a load, then ``random_steps`` seeded random admissible actions;
3. a second load of the same game (the fast engine's caches now hit) + reset, then another seeded
   random sequence, and at its end the PDDL planner's plan from that state (TextWorld's
   ``replan``, which the fast engine prepares only when first asked).

The planner searches in C (fast-downward), beyond the reach of a signal, and from some states
reached by random steps its search runs for hours and grows to gigabytes. Each stack's replan
therefore runs in a forked copy of the worker that is killed after ``planner_timeout`` seconds: a
plan on one stack and none in time on the other is a difference; no plan in time on either is
counted as ``planner_timeouts`` (those plans were not compared) and the game's other comparisons
stand.

After every call it compares the observation, the admissible commands in order, ``won``, the
score, the expert's plan, the facts, any exception the engine raised, and the state of the
engine's own RNG (:class:`~seed_gym.envs.alfworld.engine.OwnRandom`, so both stacks draw the
same random numbers). Engines are reused from game to game, as a worker does. Any difference is
reported with the game, the phase and the step.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import random
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from seed_gym.envs.alfworld import data as alf_data

_ENGINES: dict[str, Any] = {}

#: Seconds each stack's planner may search from the last state before the plan counts as not found.
#: Plans on these games take well under a second; the searches that explode run for hours.
DEFAULT_PLANNER_TIMEOUT = 60.0


def _engines() -> tuple[Any, Any]:
    from seed_gym.envs.alfworld.engine import make_engine

    if not _ENGINES:
        _ENGINES["stock"] = make_engine(expert=True, engine="stock")
        _ENGINES["fast"] = make_engine(expert=True, engine="fast")
    return _ENGINES["stock"], _ENGINES["fast"]


def _view(state: Any, rng: Any, error: str | None) -> dict[str, Any]:
    return {"observation": state["feedback"], "admissible": list(state["admissible_commands"]),
            "won": bool(state["won"]), "score": state.get("score"),
            "expert_plan": list(state.get("extra.expert_plan") or []),
            "facts": sorted(map(str, state.get("facts") or [])), "error": error,
            "rng": hashlib.sha256(repr(rng._state).encode()).hexdigest()}


class _Side:
    def __init__(self, engine: Any) -> None:
        from seed_gym.envs.alfworld.engine import OwnRandom

        self.engine = engine
        self.rng = OwnRandom(0)
        self.state: Any = None

    def start(self, game: str, load: bool) -> dict[str, Any]:
        from seed_gym.envs.alfworld.engine import start_game

        self.state = start_game(self.engine, game, self.rng, load=load)
        return _view(self.state, self.rng, None)

    def replan(self) -> list[str]:
        env = self.engine
        while hasattr(env, "_wrapped_env"):  # the PddlEnv under ALFWorld's wrappers
            env = env._wrapped_env
        with self.rng.active():
            return list(env._pddl_state.replan(env._entity_infos))

    def replan_within(self, seconds: float) -> list[str] | None:
        """:meth:`replan` in a forked copy of this process, killed after ``seconds`` (None then).
        Only the plan comes back: the planner's search leaves this process's state untouched."""
        context = mp.get_context("fork")
        reader, writer = context.Pipe(duplex=False)
        child = context.Process(target=_send_plan, args=(self, writer))
        child.start()
        writer.close()
        try:
            return reader.recv() if reader.poll(seconds) else None
        except EOFError:  # the child died without a plan (it crashed): as good as no plan
            return None
        finally:
            child.kill()
            child.join()
            reader.close()

    def step(self, command: str) -> dict[str, Any]:
        previous, error = self.state, None
        try:
            with self.rng.active():
                self.state, _, _ = self.engine.step(command)
        except Exception as exc:  # the expert's bookkeeping; the env keeps playing (env.py)
            error = f"{type(exc).__name__}: {exc}"
            if self.engine.state is previous:
                raise
            self.state = self.engine.state
            self.state["extra.expert_plan"] = []
        return _view(self.state, self.rng, error)


def _send_plan(side: _Side, writer: Any) -> None:
    writer.send(side.replan())
    writer.close()


def check_game(game: str, *, random_steps: int = 15, max_steps: int = 50, reset_only: bool = True,
               planner_timeout: float = DEFAULT_PLANNER_TIMEOUT) -> dict[str, Any]:
    """Play one game on both stacks; the number of compared calls, the differences, and whether
    the planner's plans went uncompared because neither stack found one in ``planner_timeout`` s."""
    stock, fast = (_Side(e) for e in _engines())
    differences: list[str] = []
    compared = 0
    planner_timeouts = 0

    def compare(phase: str, step: int, a: dict[str, Any], b: dict[str, Any]) -> None:
        nonlocal compared
        compared += 1
        for key in a:
            if a[key] != b[key]:
                differences.append(f"{game} {phase} step {step}: {key} differs: stock {a[key]!r:.200} "
                                   f"fast {b[key]!r:.200}")

    def play(phase: str, load: bool, choose: Callable[[dict[str, Any]], str | None], planner: bool = False) -> None:
        a, b = stock.start(game, load), fast.start(game, load)
        compare(phase, 0, a, b)
        step = 0
        while step < max_steps and not a["won"] and not differences:
            command = choose(a)
            if command is None:
                break
            step += 1
            a, b = stock.step(command), fast.step(command)
            compare(phase, step, a, b)
        if planner and not a["won"] and not differences:
            compare_plans(f"{phase}, planner", step)

    def compare_plans(phase: str, step: int) -> None:
        nonlocal planner_timeouts
        plans = {"stock": stock.replan_within(planner_timeout), "fast": fast.replan_within(planner_timeout)}
        if plans["stock"] is None and plans["fast"] is None:
            planner_timeouts += 1
            return
        late, found = sorted(plans, key=lambda name: plans[name] is not None)
        if plans[late] is None:
            differences.append(f"{game} {phase} step {step}: plan differs: {late} found no plan within "
                               f"{planner_timeout:g} s, {found} found {plans[found]!r:.200}")
            return
        compare(phase, step, {"plan": plans["stock"]}, {"plan": plans["fast"]})

    def expert(view: dict[str, Any]) -> str:
        plan = view["expert_plan"]
        return plan[0] if plan and plan[0] in view["admissible"] else "look"

    def seeded(salt: str) -> Callable[[dict[str, Any]], str | None]:
        rng = random.Random(hashlib.sha256(f"{game}|{salt}".encode()).hexdigest())
        left = [random_steps]

        def choose(view: dict[str, Any]) -> str | None:
            if left[0] <= 0:
                return None
            left[0] -= 1
            return rng.choice(view["admissible"])
        return choose

    play("walkthrough", True, expert)
    if not differences and reset_only:
        play("random-1 (reset only)", False, seeded("1"))
    if not differences:
        play("random-2 (reloaded)", True, seeded("2"), planner=True)
    return {"game": game, "compared": compared, "differences": differences, "planner_timeouts": planner_timeouts}


def game_files(root: str | Path, splits: list[str] | None = None) -> list[str]:
    """The collectable games of ``splits`` (``train``/``seen``/``unseen``; default all three)
    that exist under ``root``."""
    tree = alf_data.tree_root(root)
    files = []
    for name in splits or list(alf_data.SPLIT_DIRS):
        split_dir = alf_data.SPLIT_DIRS.get(name, name)
        if not (tree / split_dir).is_dir():
            continue
        files += [str(tree / tid / alf_data.GAME_FILE) for tid in alf_data.collect_split(tree, split_dir)]
    return files


def check_engine(root: str | Path, *, splits: list[str] | None = None, workers: int = 1, random_steps: int = 15,
                 reset_only: bool = True, limit: int | None = None, log: str | Path | None = None,
                 planner_timeout: float = DEFAULT_PLANNER_TIMEOUT,
                 on_game: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Check every collectable game of ``splits`` under ``root``; a summary with every difference.

    With ``log``, each game's result is appended to that JSON-lines file as it finishes, and games
    already in it (checked with the same ``random_steps`` and ``reset_only``) are not played
    again: a long check survives being stopped, and the summary covers every logged game. With
    several ``workers`` games are logged as they finish, so one slow game holds back no other."""
    files = game_files(root, splits)
    files = files[:limit] if limit else files
    settings = {"random_steps": random_steps, "reset_only": reset_only}
    keys = {g: game_key(g, alf_data.tree_root(root)) for g in files} if log else {}
    logged = _read_log(Path(log), settings) if log else {}
    results = [logged[keys[g]] for g in files if keys.get(g) in logged]
    reused = len(results)
    todo = [g for g in files if keys.get(g) not in logged]
    sink = Path(log).open("a", encoding="utf-8") if log else None
    if sink and sink.tell() and not Path(log).read_bytes().endswith(b"\n"):  # type: ignore[arg-type]
        sink.write("\n")  # a torn last line stays alone, and is ignored
    options = {"random_steps": random_steps, "reset_only": reset_only, "planner_timeout": planner_timeout}
    if workers <= 1:
        iterator: Any = (check_game(g, **options) for g in todo)
    else:
        pool = ProcessPoolExecutor(max_workers=workers)
        iterator = (f.result() for f in as_completed([pool.submit(_check_one, g, options) for g in todo]))
    try:
        for result in iterator:
            results.append(result)
            if sink:
                sink.write(json.dumps({**result, **settings, "key": keys[result["game"]]}) + "\n")
                sink.flush()
            if on_game:
                on_game(result)
    finally:
        if workers > 1:
            pool.shutdown(cancel_futures=True)
        if sink:
            sink.close()
    differences = [d for r in results for d in r["differences"]]
    return {"root": str(alf_data.tree_root(root)), "splits": splits or list(alf_data.SPLIT_DIRS), "games": len(results),
            "compared_states": sum(r["compared"] for r in results), "differences": len(differences),
            "planner_timeouts": sum(r.get("planner_timeouts", 0) for r in results),
            "details": differences[:50], "random_steps": random_steps,
            "reset_only_phase": reset_only, "from_log": reused}


def game_key(game: str, tree: Path) -> str:
    """What a check log knows a game by: its path under the json_2.1.1 tree and the sha256 of its file,
    so a log resumes on another machine or copy of the tree, and never vouches for a changed game."""
    digest = hashlib.sha256(Path(game).read_bytes()).hexdigest()[:16]
    return f"{Path(game).relative_to(tree).as_posix()}#{digest}"


def _read_log(path: Path, settings: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The games a previous check logged with these settings, by :func:`game_key` (a torn last line is
    ignored)."""
    if not path.exists():
        return {}
    logged = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict) and all(row.get(k) == v for k, v in settings.items()) and "key" in row:
            logged[row["key"]] = {k: row[k] for k in ("game", "compared", "differences")}
            logged[row["key"]]["planner_timeouts"] = row.get("planner_timeouts", 0)
    return logged


def _check_one(game: str, options: dict[str, Any]) -> dict[str, Any]:
    return check_game(game, **options)
