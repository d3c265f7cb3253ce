"""Search-QA agents: ``closed-book`` answers at once, without searching (a no-retrieval baseline).

Its guess is the last capitalised name in the question that is not one of offered options
("A or B?"), else ``unknown``: it never flips a coin between options, so it measures how often an
answer can be read off the question itself (the knowledge-free floor; on SynWiki ~never).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from seed_gym.agent import Agent, AgentAction

_NAME = re.compile(r"[A-Z][\w'-]*(?:\s+(?:of\s+)?[A-Z][\w'-]*)*")


_OPTIONS = re.compile(r",\s*(.+?)\s+or\s+(.+?)\?\s*$")
_QUESTION_WORDS = ("Who", "What", "Where", "Which", "In", "Name", "The")


def closed_book_guess(question: str) -> str:
    options = _OPTIONS.search(question)
    if options:
        question = question[: options.start()]
    names = [n for n in _NAME.findall(question) if n.split()[0] not in _QUESTION_WORDS]
    return names[-1] if names else "unknown"


class ClosedBookAgent(Agent):
    def act(self, episode_ids: Sequence[str], observations: Sequence[str],
            infos: Sequence[Mapping[str, Any]]) -> list[str | AgentAction]:
        actions: list[str | AgentAction] = []
        for info in infos:
            guess = closed_book_guess(str(info.get("task", {}).get("instruction", "")))
            response = f"<answer> {guess} </answer>"
            actions.append(AgentAction(action=response, response=response))
        return actions
