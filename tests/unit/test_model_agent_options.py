"""Model-agent options that need no model: validation of ``choose`` and the ranked-choice rule."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from seed_gym.agent import AgentSpecError
from seed_gym.agents.choice import choose, pick_choice
from seed_gym.agents.model import AgentOptions


def test_choose_defaults_to_generation_and_accepts_rank():
    assert AgentOptions.split({})[0].choose == "generate"
    options, rest = AgentOptions.split({"choose": "rank", "dtype": "float32"})
    assert options.choose == "rank" and rest == {"dtype": "float32"}


def test_ranked_choice_can_keep_tokens_for_training():
    options, _ = AgentOptions.split({"choose": "rank", "tokens": "1", "logprobs": "1"})
    assert options.tokens and options.logprobs


@pytest.mark.parametrize("options, message", [
    ({"choose": "best"}, "choose must be generate or rank"),
    ({"choose": "rank", "rank_by": "max"}, "rank_by must be one of sum, mean, prefix"),
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


# Three candidates as token ids (each ends in EOS = 0) and their per-token log-probs. The two
# "click[b0..." ids share their first tokens; "next >" is short and certain.
IDS = [[7, 8, 21, 22, 0], [7, 8, 31, 32, 0], [7, 9, 0]]
LOGPROBS = [[-0.1, -0.2, -1.2, -0.9, -0.1], [-0.1, -0.2, -1.0, -1.5, -0.1], [-0.1, -1.8, -0.1]]


def test_sum_prefers_the_short_certain_candidate_and_mean_removes_the_length_bias():
    assert choose(IDS, LOGPROBS, "sum", 0.0, random.Random(0)) == 2      # -2.0 beats -2.5 and -2.9
    assert choose(IDS, LOGPROBS, "mean", 0.0, random.Random(0)) == 0     # -0.50 vs -0.58 vs -0.67


def test_prefix_decodes_greedily_through_the_candidates_token_tree():
    # fork at depth 1: token 8 (-0.2) beats token 9 (-1.8); fork at depth 2: 31 (-1.0) beats 21 (-1.2)
    assert choose(IDS, LOGPROBS, "prefix", 0.0, random.Random(0)) == 1


def test_prefix_handles_duplicates_single_candidates_and_sampling():
    assert choose([[5, 0], [5, 0]], [[-1.0, -0.1], [-1.0, -0.1]], "prefix", 0.0, random.Random(0)) == 0
    assert choose([[5, 0]], [[-1.0, -0.1]], "prefix", 0.0, random.Random(0)) == 0
    rng = random.Random(0)
    picks = Counter(choose(IDS, LOGPROBS, "prefix", 1.0, rng) for _ in range(3000))
    assert set(picks) == {0, 1, 2} and picks[1] > picks[0] > picks[2]


def test_an_unknown_rule_is_an_error():
    with pytest.raises(ValueError, match="rank rule"):
        choose(IDS, LOGPROBS, "max", 0.0, random.Random(0))
