"""The Search-R1 turn protocol (docs/benchmarks.md 3.2), as pure functions.

* The first observation is Search-R1's instruction prompt with the question (``?`` appended when
  missing).
* Each turn's response is cut after the first ``</search>``, else after the first ``</answer>``;
  the first ``<(search|answer)>(.*?)</\\1>`` match is the action.
* A search is answered with ``\\n\\n<information>`` + one ``Doc {i}(Title: {title}) {text}`` line
  per passage + ``</information>\\n\\n`` (title = the first line of ``contents``, quotes kept).
* Anything else gets :data:`INVALID_TURN_MESSAGE`.
* Scoring reads only the model's responses: the prediction is the *last* ``<answer>`` match
  (one match is enough; the prompt's example answer is never seen).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

PROMPT = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you get "
    "new information. After reasoning, if you find you lack some knowledge, you can call a search engine by "
    "<search> query </search> and it will return the top searched results between <information> and "
    "</information>. You can search as many times as your want. If you find no further external knowledge needed, "
    "you can directly provide the answer inside <answer> and </answer>, without detailed illustrations. For "
    "example, <answer> Beijing </answer>. Question: {question}\n"
)
INVALID_TURN_MESSAGE = (
    "\nMy previous action is invalid. If I want to search, I should put the query between <search> and </search>. "
    "If I want to give the final answer, I should put the answer between <answer> and </answer>. Let me try again.\n"
)
_ACTION = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


@dataclass(frozen=True)
class Turn:
    """A parsed response: ``kind`` is ``search``, ``answer`` or ``invalid``."""

    kind: str
    content: str
    response: str  # the response after the cut


def make_prompt(question: str) -> str:
    question = question.strip()
    if not question.endswith("?"):
        question += "?"
    return PROMPT.format(question=question)


def cut_response(response: str) -> str:
    """Keep the response up to the first ``</search>``, else up to the first ``</answer>``."""
    for closing in ("</search>", "</answer>"):
        end = response.find(closing)
        if end >= 0:
            return response[: end + len(closing)]
    return response


def parse_turn(response: str) -> Turn:
    cut = cut_response(response)
    match = _ACTION.search(cut)
    if not match:
        return Turn("invalid", "", cut)
    return Turn(match.group(1), match.group(2).strip(), cut)


def split_contents(contents: str) -> tuple[str, str]:
    """A wiki-18 ``contents`` string -> (title line, text), as Search-R1 splits it."""
    lines = contents.split("\n")
    return lines[0], "\n".join(lines[1:])


def information_block(contents: Sequence[str]) -> str:
    lines = []
    for index, text in enumerate(contents):
        title, body = split_contents(text)
        lines.append(f"Doc {index + 1}(Title: {title}) {body}\n")
    return f"\n\n<information>{''.join(lines).strip()}</information>\n\n"


def last_answer(responses: str | Sequence[str]) -> str | None:
    """The content of the last ``<answer>`` in the responses (never the prompt), or None."""
    text = responses if isinstance(responses, str) else "".join(responses)
    matches = _ANSWER.findall(text)
    return matches[-1].strip() if matches else None
