"""Model-agent options that need no model: validation of ``choose`` and the ranked-choice rule."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from seed_gym.agent import AgentSpecError
from seed_gym.agents.model import AgentOptions, pick_choice


def test_choose_defaults_to_generation_and_accepts_rank():
    assert AgentOptions.split({})[0].choose == "generate"
    options, rest = AgentOptions.split({"choose": "rank", "dtype": "float32"})
    assert options.choose == "rank" and rest == {"dtype": "float32"}


@pytest.mark.parametrize("options, message", [
    ({"choose": "best"}, "choose must be generate or rank"),
    ({"choose": "rank", "tokens": "1"}, "choose=rank generates no tokens"),
    ({"choose": "rank", "logprobs": "1"}, "choose=rank generates no tokens"),
])
def test_bad_choose_options_are_clear_errors(options, message):
    with pytest.raises(AgentSpecError, match=message):
        AgentOptions.split(options)


def test_greedy_choice_takes_the_highest_score_and_the_first_of_ties():
    assert pick_choice([-3.0, -1.0, -2.0], 0.0, random.Random(0)) == 1
    assert pick_choice([-1.0, -5.0, -1.0], 0.0, random.Random(0)) == 0


def test_sampled_choice_follows_the_softmax_of_the_scores():
    rng = random.Random(0)
    scores = [0.0, -1.0, -30.0]  # softmax ~ 0.73 / 0.27 / 0
    counts = Counter(pick_choice(scores, 1.0, rng) for _ in range(4000))
    assert counts[2] == 0
    assert 0.69 < counts[0] / 4000 < 0.77
    rng = random.Random(0)
    flatter = Counter(pick_choice(scores, 10.0, rng) for _ in range(4000))
    assert flatter[2] > 0  # a higher temperature spreads the draws
