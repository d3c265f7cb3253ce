"""Responses -> env actions, with the validity flags training penalises.

A template's ``parser`` names a :class:`ResponseStyle`: ``react``, built in, or one an env's profile
declares in ``response_parsers`` (for example a Search-R1 style parser, whose action is the cut
response itself, declared by the search env's profile).

* ``react``: ``<think>...</think><action>...</action>``. The action is the text
  inside the one ``<action>`` tag. Fatal problems (no action tag, several, an empty one) send the
  empty action, so the env takes its invalid-action path. Other problems (no ``<think>``, CJK
  characters — the SDAR validity rule) still execute the action but mark the step format-invalid;
  text outside the two tags is flagged ``junk`` without making the step invalid.
  Where the env lists admissible actions, the action is projected onto them: ``exact`` matches
  case-, space- and quote-insensitively; ``fuzzy`` also accepts the closest admissible action at a
  rapidfuzz ratio >= ``fuzzy_threshold`` (flagged ``projected``); ``none`` sends it verbatim.

``ParsedResponse.valid`` is the format validity recorded per step (``valid_format``) and used for
the invalid-action penalty in training; ``flags`` say why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from seed_gym.profile import resolve
from seed_gym.registry import declared_names, declared_target

FATAL_FLAGS = frozenset({"missing_action", "duplicate_action", "empty_action"})

_ACTION = re.compile(r"<action>(.*?)</action>", re.DOTALL | re.IGNORECASE)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
#: Chinese, Japanese and Korean characters: a response with any is format-invalid (SDAR's rule).
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


@dataclass(frozen=True)
class ParsedResponse:
    action: str
    valid: bool
    flags: tuple[str, ...] = ()

    @property
    def fatal(self) -> bool:
        return bool(FATAL_FLAGS.intersection(self.flags))


def normalize_action(text: str) -> str:
    """Case, whitespace, surrounding quotes and a trailing period do not change an action."""
    text = " ".join(text.strip().split()).lower()
    return text.strip("'\"`").rstrip(".").strip()


def project(action: str, admissible: Sequence[str] | None, mode: str = "exact",
            fuzzy_threshold: float = 90.0) -> tuple[str, tuple[str, ...]]:
    """Map ``action`` onto an admissible action where the env lists them; returns (action, flags)."""
    if mode == "none" or not admissible:
        return action, ()
    by_norm = {normalize_action(a): a for a in admissible}
    key = normalize_action(action)
    if key in by_norm:
        return by_norm[key], ()
    if mode == "fuzzy":
        from rapidfuzz import fuzz, process

        best = process.extractOne(key, list(by_norm), scorer=fuzz.ratio)
        if best and best[1] >= fuzzy_threshold:
            return by_norm[best[0]], ("projected",)
    return action.strip(), ("not_admissible",)


def response_is_action(parser: str) -> bool:
    """Whether the env takes the whole (cut) response as its action (e.g. Search-R1's protocol)."""
    return response_style(parser).response_is_action


def response_for(action: str, parser: str = "react", think: str = "") -> str:
    """The response that parses back to ``action``: the target of behaviour cloning, and the text
    a ranked choice scores for each admissible action."""
    if response_is_action(parser):
        return f"<think>{think}</think>\n{action}"
    return f"<think>{think}</think>\n<action>{action}</action>"


def parse_react(response: str, admissible: Sequence[str] | None = None, *, projection: str = "exact",
                require_think: bool = True, fuzzy_threshold: float = 90.0) -> ParsedResponse:
    flags: list[str] = []
    actions = _ACTION.findall(response)
    if require_think and not _THINK.search(response):
        flags.append("missing_think")
    if CJK.search(response):
        flags.append("cjk")
    if not actions:
        return ParsedResponse("", False, tuple(flags + ["missing_action"]))
    if len(actions) > 1:
        return ParsedResponse("", False, tuple(flags + ["duplicate_action"]))
    if not actions[0].strip():
        return ParsedResponse("", False, tuple(flags + ["empty_action"]))
    action, projection_flags = project(actions[0], admissible, projection, fuzzy_threshold)
    valid = not flags
    if _ACTION.sub("", _THINK.sub("", response)).strip():
        projection_flags += ("junk",)  # text outside the tags: reported, but not a format error
    return ParsedResponse(action, valid, tuple(flags) + projection_flags)


Parser = Callable[..., ParsedResponse]


@dataclass(frozen=True)
class ResponseStyle:
    """How a response becomes an action: ``parse(response, admissible, **options)``; with
    ``response_is_action`` the env reads the (cut) response itself, so behaviour cloning targets
    and ranked choices are ``<think></think>`` + the action text, without ``<action>`` tags."""

    parse: Parser
    response_is_action: bool = False


REACT = ResponseStyle(parse_react)


def response_style(name: str) -> ResponseStyle:
    """``react``, or the style a registered env's profile declares under ``name``."""
    if name == "react":
        return REACT
    target = declared_target("response_parsers", name)
    if target is None:
        known = ", ".join(["react", *declared_names("response_parsers")])
        raise ValueError(f"unknown response parser {name!r}; known: {known}")
    return resolve(target)


def get_parser(name: str) -> Parser:
    return response_style(name).parse
