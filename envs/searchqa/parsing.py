"""The ``search-r1`` response style (declared in Search-QA's profile as a response parser).

Rule: the response is cut after the first ``</search>``, else the first ``</answer>``, and the cut
text is the action (the env parses it with the same :func:`~.protocol.cut_response`, so agent and
env agree). It is format-invalid without a complete ``<search>`` or ``<answer>`` pair, or with
both kinds or repeated tags (verl-agent's rule), or with CJK characters (SDAR's rule).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from seed_gym.agents.parsing import CJK, ParsedResponse, ResponseStyle
from seed_gym.envs.searchqa.protocol import cut_response

_SEARCH_TAG = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)


def parse_search_r1(response: str, admissible: Sequence[str] | None = None, **_: object) -> ParsedResponse:
    cut = cut_response(response)
    kinds = [kind for kind, _ in _SEARCH_TAG.findall(cut)]
    if not kinds:
        return ParsedResponse(cut, False, ("missing_action",))
    flags: list[str] = []
    if len(set(kinds)) > 1:
        flags.append("search_and_answer")
    if len(kinds) > 1:
        flags.append("duplicate_action")
    if CJK.search(cut):
        flags.append("cjk")
    # The env reads the first complete tag itself, so even a flagged response is sent as cut.
    return ParsedResponse(cut, not flags, tuple(flags))


SEARCH_R1 = ResponseStyle(parse_search_r1, response_is_action=True)
