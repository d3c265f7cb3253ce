"""The Search-R1 turn protocol (docs/benchmarks.md 3.2), as pure functions.

* The first observation is Search-R1's instruction prompt with the question (``?`` appended when
  missing).
* Each turn's response is cut after the first ``</search>``, else after the first ``</answer>``;
  the first ``<(search|answer)>(.*?)</\\1>`` match is the action.
* A search is answered with ``\\n\\n<information>`` + one ``Doc {i}(Title: {title}) {text}`` line
  per passage + ``</information>\\n\\n`` (title = the first line of ``contents``, quotes kept).
* Anything else gets :data:`INVALID_TURN_MESSAGE`.
* Budget: ``max_turns`` turns may search (invalid turns count too), then one final turn in which a
  search is not run and gets :data:`EMPTY_INFORMATION` (Search-R1's ``do_search=False``).
* Scoring reads the *transcript* (:func:`transcript`): the responses as cut, each followed by the
  observation the env returned for it (information blocks, invalid-turn messages), never the
  instruction prompt, and never the final turn's observation (Search-R1 drops it). The prediction
  is the *last* non-greedy ``<answer>(.*?)</answer>`` match (``re.DOTALL``) in it; one match is
  enough. (Search-R1 decodes the prompt too, which holds two matches of its own, ``<answer> and
  </answer>`` and the example ``<answer> Beijing </answer>``; so it asks for two, and predicts
  "Beijing" where the transcript has none, where this rule predicts None.)
  Because observations are part of the text, an unclosed ``<answer>`` in one turn is closed by
  the ``</answer>`` of the invalid-turn message that follows it, so a later answer still counts,
  exactly as in Search-R1.
"""

from __future__ import annotations

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
#: What a search gets in the final turn, when searching is off: an empty information block.
EMPTY_INFORMATION = "\n\n<information></information>\n\n"
# Search-R1 parses with ``<(search|answer)>(.*?)</\1>`` and ``<answer>(.*?)</answer>``; a regex
# engine takes quadratic time on many unclosed tags, so the matches are found with str.find,
# in linear time, with the same leftmost / non-overlapping semantics (tests compare them).
_KINDS = ("search", "answer")


def _first_tag(text: str, kind: str, start: int = 0) -> tuple[int, int, int] | None:
    """The leftmost ``<kind>…</kind>`` at or after ``start``: (opening, content start, closing)."""
    opening = text.find(f"<{kind}>", start)
    if opening < 0:
        return None
    content = opening + len(kind) + 2
    closing = text.find(f"</{kind}>", content)
    # No closing after the first opening means none after any later opening either.
    return None if closing < 0 else (opening, content, closing)


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
    found = [(tag, kind) for kind in _KINDS if (tag := _first_tag(cut, kind))]
    if not found:
        return Turn("invalid", "", cut)
    (_, content, closing), kind = min(found)
    return Turn(kind, cut[content:closing].strip(), cut)


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


def transcript(responses: Sequence[str], observations: Sequence[str]) -> str:
    """The scored text: ``responses[0] + observations[0] + responses[1] + ...``.

    ``observations[i]`` is what the env answered to ``responses[i]``; there may be one fewer
    observation than responses (the final turn's observation is not part of the transcript).
    """
    if not len(responses) - 1 <= len(observations) <= len(responses):
        raise ValueError(f"{len(responses)} responses need {len(responses) - 1} or {len(responses)} observations, "
                         f"got {len(observations)}")
    parts: list[str] = []
    for index, response in enumerate(responses):
        parts.append(response)
        if index < len(observations):
            parts.append(observations[index])
    return "".join(parts)


def last_answer(text: str | Sequence[str]) -> str | None:
    """The stripped content of the last ``<answer>(.*?)</answer>`` match in ``text``, or None.

    Pass a :func:`transcript` to score as Search-R1 does. A sequence is joined as it is, so joining
    the responses alone (without the observations between them) is *not* Search-R1's rule.
    """
    joined = text if isinstance(text, str) else "".join(text)
    last, start = None, 0
    while tag := _first_tag(joined, "answer", start):
        _, content, closing = tag
        last, start = joined[content:closing], closing + len("</answer>")
    return last.strip() if last is not None else None
