"""Scripted agents: ``random``, ``expert`` and ``human``. They need no model and run everywhere."""

from __future__ import annotations

import random
import zlib
from collections.abc import Mapping, Sequence
from typing import Any, Callable

from seed_gym.agent import Agent, AgentAction, AgentSpecError


def episode_rng(seed: int, episode_id: str) -> random.Random:
    """An RNG that depends only on the run seed and the episode, never on batch order."""
    return random.Random((seed << 32) ^ zlib.crc32(episode_id.encode()))


class RandomAgent(Agent):
    """Uniform over ``info["admissible_actions"]``; an empty (invalid) action where there are none.

    ``@invalid=p`` makes it emit an unparseable action with probability p, to exercise the env's
    invalid-action path.
    """

    spec_options = ("invalid",)

    def __init__(self, spec: Any = None, seed: int = 0) -> None:
        super().__init__(spec, seed)
        text = self.spec.options.get("invalid", "0")
        try:
            self.invalid_prob = float(text)
            in_range = 0.0 <= self.invalid_prob <= 1.0
        except ValueError:
            in_range = False
        if not in_range:
            raise AgentSpecError(f"random agent option invalid={text!r} must be a probability in [0, 1]")
        self._rngs: dict[str, random.Random] = {}

    def reset(self, episode_ids: Sequence[str], observations: Sequence[str],
              infos: Sequence[Mapping[str, Any]]) -> None:
        for episode_id in episode_ids:
            self._rngs[episode_id] = episode_rng(self.seed, episode_id)

    def act(self, episode_ids: Sequence[str], observations: Sequence[str],
            infos: Sequence[Mapping[str, Any]]) -> list[str | AgentAction]:
        actions: list[str | AgentAction] = []
        for episode_id, info in zip(episode_ids, infos):
            rng = self._rngs.get(episode_id)  # seeding a Random costs more than the choice: once per episode
            if rng is None:
                rng = self._rngs[episode_id] = episode_rng(self.seed, episode_id)
            choices = info.get("admissible_actions") or []
            if not choices or rng.random() < self.invalid_prob:
                actions.append(AgentAction(action="", valid_format=False))
            else:
                actions.append(rng.choice(choices))
        return actions

    def end(self, episode_ids: Sequence[str]) -> None:
        for episode_id in episode_ids:
            self._rngs.pop(episode_id, None)


class ExpertAgent(Agent):
    """Plays ``info["expert_action"]``, the env's oracle (for example a handcoded planner)."""

    requires_expert = True

    def act(self, episode_ids: Sequence[str], observations: Sequence[str],
            infos: Sequence[Mapping[str, Any]]) -> list[str | AgentAction]:
        return [info.get("expert_action") or AgentAction(action="", valid_format=False,
                                                         meta={"reason": "no expert action"})
                for info in infos]


class HumanAgent(Agent):
    """Asks a person at the terminal. Type a command, or the number of an admissible action."""

    def __init__(self, spec: Any = None, seed: int = 0,
                 ask: Callable[[str], str] | None = None) -> None:
        super().__init__(spec, seed)
        self._ask = ask or _rich_ask

    def act(self, episode_ids: Sequence[str], observations: Sequence[str],
            infos: Sequence[Mapping[str, Any]]) -> list[str | AgentAction]:
        return [self._one(obs, info) for obs, info in zip(observations, infos)]

    def _one(self, observation: str, info: Mapping[str, Any]) -> str:
        choices = list(info.get("admissible_actions") or [])
        menu = "\n".join(f"  [{i}] {a}" for i, a in enumerate(choices, 1))
        answer = self._ask(f"{observation}\n\n{menu}\n> " if menu else f"{observation}\n> ").strip()
        if answer.isdigit() and 1 <= int(answer) <= len(choices):
            return choices[int(answer) - 1]
        return answer


def _rich_ask(prompt: str) -> str:
    from rich.console import Console

    console = Console()
    body, _, _ = prompt.rpartition("\n> ")
    console.print(body, markup=False, highlight=False)
    try:
        return console.input("[bold cyan]> [/]")
    except EOFError:
        return "quit"
