"""Every action up to the action space's limit is answered promptly (#20 defect 1).

Each call runs under a bound (the ``watchdog`` fixture of ``tests/conftest.py``): the bound is
generous, so this is not a speed assertion, but a parse that backtracks quadratically (1 MiB of
``[`` took WebShop minutes; ``<search>`` x 16384 took Search-QA 71 s) hits it and fails. The
linear parsers are also checked against the regexes they replace, on generated inputs.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

import seed_gym
from seed_gym.core import MAX_TEXT_LENGTH
from seed_gym.envs.searchqa import protocol
from seed_gym.envs.webshop.pages import parse_action

BOUND_S = 10


HOSTILE = {
    "brackets": "[" * MAX_TEXT_LENGTH,
    "closing brackets": "a" + "[]" * (MAX_TEXT_LENGTH // 2 - 1),
    "search tags": "<search>" * (MAX_TEXT_LENGTH // 8),
    "answer tags": "<answer>" * (MAX_TEXT_LENGTH // 8),
    "mixed tags": "<search><answer>" * (MAX_TEXT_LENGTH // 16),
    "search[": "search[" * (MAX_TEXT_LENGTH // 7),
}


@pytest.fixture(scope="module")
def envs():
    made = {"webshop": seed_gym.make("webshop"), "searchqa": seed_gym.make("searchqa", entities=300)}
    yield made
    for env in made.values():
        env.close()


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.parametrize("env_id", ["webshop", "searchqa"])
def test_an_action_at_the_size_limit_is_answered_within_the_bound(envs, env_id, name, watchdog):
    env = envs[env_id]
    env.reset(seed=0)
    with watchdog(BOUND_S):
        observation, _, _, _, info = env.step(HOSTILE[name])
    assert isinstance(observation, str) and "invalid_action" in info


@pytest.mark.parametrize("env_id", ["webshop", "searchqa"])
def test_an_action_over_the_size_limit_is_invalid_without_being_parsed(envs, env_id, watchdog):
    env = envs[env_id]
    env.reset(seed=0)
    with watchdog(BOUND_S):
        _, reward, _, _, info = env.step("search[" + "x" * MAX_TEXT_LENGTH + "]")
    assert info["invalid_action"] and reward == 0.0


UPSTREAM_WEBSHOP = re.compile(r"(.+)\[(.+)\]", re.S)
UPSTREAM_TURN = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
UPSTREAM_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
pieces = st.sampled_from(["[", "]", "a", " ", "\n", "click", "search", "<search>", "</search>",
                          "<answer>", "</answer>", "<", ">", "/"])
texts = st.lists(pieces, max_size=14).map("".join)


@settings(max_examples=2000, derandomize=True, deadline=None)
@given(texts)
def test_webshop_parse_matches_upstreams_regex(text):
    match = UPSTREAM_WEBSHOP.fullmatch(text.strip())
    expected = (match.group(1).strip().lower(), match.group(2).lower()) if match else None
    assert parse_action(text) == expected


@settings(max_examples=2000, derandomize=True, deadline=None)
@given(texts)
def test_search_r1_parsing_matches_its_regexes(text):
    turn = protocol.parse_turn(text)
    match = UPSTREAM_TURN.search(protocol.cut_response(text))
    assert (turn.kind, turn.content) == ((match.group(1), match.group(2).strip()) if match else ("invalid", ""))
    answers = UPSTREAM_ANSWER.findall(text)
    assert protocol.last_answer(text) == (answers[-1].strip() if answers else None)
