"""The real ALFWorld text engine, assembled the way ALFWorld does it, with two fixes.

Stack: ``PddlEnv -> AlfredDemangler(shuffle=False) -> AlfredInfos [-> AlfredExpert]``
(``alfworld==0.4.2`` on ``textworld[pddl]==1.7.0``).

Fixes applied here, so every process that builds an engine gets them:

* **two grammars** — the wheel's expert speaks the current grammar (``move X to Y``), but the
  released game files embed the older one (``put X in/on Y``), where none of its placements is
  admissible. The expert sees admissible commands in the current wording and its answer is
  translated back to the game's own wording, so it works on both kinds of file.
* **put/move** — the handcoded expert tracks its inventory by looking for ``put`` in the last
  command, but the grammar now says ``move X to Y``. Unfixed it never empties its hands after the
  first placement (pick_two: 65/120 solved stock vs 119/120 fixed). We rewrite ``move X to Y`` as
  ``put X in/on Y`` *only for its tracker*, per instance, without patching alfworld globally.
* **global RNG** — the expert's fallbacks and TextWorld's text grammar draw from the global
  ``random`` module. Several envs share one worker process, so each engine swaps in its own RNG
  state around every call (:class:`OwnRandom`); results then do not depend on interleaving.
"""

from __future__ import annotations

import contextlib
import random
import re
from collections.abc import Iterator
from typing import Any

STOCK_ENGINE_VERSION = "alfworld-0.4.2+textworld-1.7.0+seedgym-fix1"
#: The fast engine (:mod:`.fast`): the same stack with its pure, repeated work cached; the default.
FAST_ENGINE_VERSION = STOCK_ENGINE_VERSION + "+fast1"
ENGINE_VERSION = FAST_ENGINE_VERSION
ENGINES = {"fast": FAST_ENGINE_VERSION, "stock": STOCK_ENGINE_VERSION}


def engine_version(engine: str) -> str:
    """The version string of ``engine`` (``fast`` or ``stock``)."""
    if engine not in ENGINES:
        raise ValueError(f"unknown ALFWorld engine {engine!r}: expected one of {', '.join(ENGINES)}")
    return ENGINES[engine]


_OLD_PUT = re.compile(r"^put (.+) in/on (.+)$")


def to_move_wording(command: str) -> str:
    """``put apple 1 in/on countertop 2`` (old game grammar) -> ``move apple 1 to countertop 2``."""
    match = _OLD_PUT.match(command)
    return f"move {match[1]} to {match[2]}" if match else command


def to_game_wording(command: str, admissible: list[str]) -> str:
    """The expert's ``move X to Y`` in the wording this game file admits."""
    if command in admissible:
        return command
    if command.startswith("move ") and " to " in command:
        old = _move_as_put(command)
        if old in admissible:
            return old
    return command


def _move_as_put(command: str) -> str:
    """``move apple 1 to countertop 2`` -> ``put apple 1 in/on countertop 2`` (tracker wording)."""
    if command.startswith("move ") and " to " in command:
        obj, recep = command[len("move "):].split(" to ", 1)
        return f"put {obj} in/on {recep}"
    return command


class OwnRandom:
    """A private state for the global ``random`` module, swapped in around engine calls."""

    def __init__(self, seed: int = 0) -> None:
        self.seed(seed)

    def seed(self, seed: int) -> None:
        self._state = random.Random(seed).getstate()

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        outer = random.getstate()
        random.setstate(self._state)
        try:
            yield
        finally:
            self._state = random.getstate()
            random.setstate(outer)


def _fixed_expert_classes() -> tuple[type, type]:
    """Build the fixed expert classes lazily, so importing this module stays cheap."""
    from alfworld.agents.environment.alfred_tw_env import AlfredExpert
    from alfworld.agents.expert import HandCodedAgentTimeout, HandCodedTWAgent

    class FixedHandCodedTWAgent(HandCodedTWAgent):
        def reset(self, game: str = "INVALID") -> None:
            super().reset(game)
            track = self.policy.update_state_tracking

            def track_move_as_put(game_state: Any, last_action: str) -> Any:
                return track(game_state, _move_as_put(last_action))

            self.policy.update_state_tracking = track_move_as_put

    class FixedAlfredExpert(AlfredExpert):
        def __init__(self, env: Any = None, max_steps: int = 200) -> None:
            super().__init__(env=env)
            self._expert_max_steps = max_steps

        def load(self, gamefile: str) -> None:
            super().load(gamefile)
            self._handcoded_expert = FixedHandCodedTWAgent(max_steps=self._expert_max_steps)

        def _gather_infos(self) -> None:
            state = self.state
            state["extra.expert_plan"] = ["look"]
            if not self.prev_command:
                self._handcoded_expert.observe(state["feedback"])
                return
            admissible = list(state["admissible_commands"])
            view = dict(state)  # the expert reads the current grammar's wording
            view["admissible_commands"] = [to_move_wording(c) for c in admissible]
            try:
                action = self._handcoded_expert.act(view, 0, state["won"], to_move_wording(self.prev_command))
            except HandCodedAgentTimeout:
                raise Exception("Timeout") from None  # what the stock wrapper raises
            action = to_game_wording(action, admissible)
            if action in admissible:
                state["extra.expert_plan"] = [action]

    return FixedHandCodedTWAgent, FixedAlfredExpert


def make_engine(*, expert: bool, expert_max_steps: int = 200, engine: str = "fast") -> Any:
    """A TextWorld environment for ALFWorld ``game.tw-pddl`` files.

    ``engine="fast"`` (the default) builds on :func:`seed_gym.envs.alfworld.fast.fast_pddl_env`
    (same game, cached parsing and translation; refuses unpinned versions); ``"stock"`` on the
    untouched ``PddlEnv``.

    With ``expert=True`` the state carries ``extra.expert_plan`` (one next action, from the fixed
    handcoded expert); that needs facts each step and costs roughly 10-20% per step.
    """
    import textworld
    from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
    from textworld.envs.pddl import PddlEnv

    extras = ["gamefile"] + (["expert_plan"] if expert else [])
    infos = textworld.EnvInfos(won=True, admissible_commands=True, feedback=True,
                               facts=expert, extras=extras)
    engine_version(engine)
    if engine == "fast":
        from seed_gym.envs.alfworld.fast import fast_pddl_env

        base = fast_pddl_env(infos)
    else:
        base = PddlEnv(infos)
    env = AlfredInfos(AlfredDemangler(base, shuffle=False))
    if expert:
        _, fixed_expert = _fixed_expert_classes()
        env = fixed_expert(env, max_steps=expert_max_steps)
    return env


#: Every game starts from this RNG state. The engine has no randomness that matters except the
#: expert's fallbacks; seeding per game makes the expert a function of the game alone, so in an
#: episode it replays exactly the walkthrough the generator verified.
GAME_SEED = 0


def start_game(engine: Any, game_file: str, rng: OwnRandom, *, load: bool = True) -> Any:
    """(Re)load ``game_file`` when asked, then reset from :data:`GAME_SEED`; the first state."""
    if load:
        with rng.active():
            engine.load(game_file)
    rng.seed(GAME_SEED)
    with rng.active():
        return engine.reset()


def expert_next_action(state: Any) -> str | None:
    plan = state.get("extra.expert_plan") if hasattr(state, "get") else None
    return plan[0] if plan else None


def solve_with_expert(game_file: str, *, max_steps: int = 50,
                      engine: Any = None) -> list[str] | None:
    """Play ``game_file`` with the fixed handcoded expert; the winning walkthrough, or None.

    Used to verify generated games: a game counts as solvable when the expert wins within
    ``max_steps`` (ALFWorld's episode budget, 50, by default). Pass ``engine`` (from ``make_engine(expert=True)``) to reuse
    one engine across many games.
    """
    from alfworld.agents.expert import HandCodedAgentFailed, HandCodedAgentTimeout

    engine = engine or make_engine(expert=True, expert_max_steps=max_steps)
    rng = OwnRandom(GAME_SEED)
    walkthrough: list[str] = []
    try:
        state = start_game(engine, game_file, rng)
        while not state["won"]:
            if len(walkthrough) >= max_steps:
                return None
            command = expert_next_action(state) or "look"
            with rng.active():
                state, _, _ = engine.step(command)
            walkthrough.append(command)
    except (HandCodedAgentFailed, HandCodedAgentTimeout):
        return None
    except Exception as error:  # the stock wrapper turns expert timeouts into a bare Exception
        if str(error) == "Timeout":
            return None
        raise
    return walkthrough
