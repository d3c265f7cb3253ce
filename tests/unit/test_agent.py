"""Agent specs and the scripted agents."""

import pytest

from seed_gym.agent import AgentSpec, AgentSpecError, make_agent
from seed_gym.agents.scripted import ExpertAgent, HumanAgent, RandomAgent


@pytest.mark.parametrize("text, kind, target, options", [
    ("random", "random", None, {}),
    ("hf:models/tiny@temperature=0,top_p=1", "hf", "models/tiny", {"temperature": "0", "top_p": "1"}),
    ("openai:http://127.0.0.1:8000/v1@model=x", "openai", "http://127.0.0.1:8000/v1", {"model": "x"}),
])
def test_spec_parses_kind_target_and_params(text, kind, target, options):
    spec = AgentSpec.parse(text)
    assert (spec.kind, spec.target, spec.options) == (kind, target, options)
    assert AgentSpec.parse(str(spec)) == spec


def test_spec_canonical_form_sorts_params_and_slug_is_file_safe():
    spec = AgentSpec.parse("hf:models/tiny@b=2,a=1")
    assert str(spec) == "hf:models/tiny@a=1,b=2"
    assert "/" not in spec.slug and ":" not in spec.slug


@pytest.mark.parametrize("bad", ["", ":x", "random@novalue", "ra ndom"])
def test_bad_specs_raise_clear_errors(bad):
    with pytest.raises(AgentSpecError):
        AgentSpec.parse(bad)


def test_unknown_kind_lists_the_known_ones():
    with pytest.raises(AgentSpecError, match="known: .*expert.*random"):
        make_agent("telepathic")


def test_random_agent_depends_on_seed_and_episode_not_batch_order():
    infos = [{"admissible_actions": [str(i) for i in range(50)]}] * 2
    a, b = make_agent("random", seed=1), make_agent("random", seed=1)
    a.reset(["e1", "e2"], ["", ""], infos)
    b.reset(["e2", "e1"], ["", ""], infos)
    first = a.act(["e1", "e2"], ["", ""], infos)
    second = b.act(["e2", "e1"], ["", ""], infos)
    assert first == second[::-1]
    c = make_agent("random", seed=2)
    c.reset(["e1"], [""], infos[:1])
    assert [c.act(["e1"], [""], infos[:1])[0] for _ in range(5)] != [a.act(["e1"], [""], infos[:1])[0] for _ in range(5)]


def test_random_agent_without_choices_emits_an_invalid_action():
    action = make_agent("random").act(["e"], [""], [{"admissible_actions": None}])[0]
    assert action.action == "" and action.valid_format is False


def test_expert_agent_plays_the_expert_action_and_asks_for_it():
    agent = make_agent("expert")
    assert isinstance(agent, ExpertAgent) and agent.requires_expert
    assert agent.act(["e"], [""], [{"expert_action": "look"}]) == ["look"]


def test_human_agent_accepts_numbers_and_free_text():
    answers = iter(["2", "open fridge 1"])
    human = HumanAgent(ask=lambda prompt: next(answers))
    info = {"admissible_actions": ["look", "inventory"]}
    assert human.act(["e"], ["obs"], [info]) == ["inventory"]
    assert human.act(["e"], ["obs"], [info]) == ["open fridge 1"]
    assert isinstance(make_agent("human"), HumanAgent) and isinstance(make_agent("random"), RandomAgent)
