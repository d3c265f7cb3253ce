"""Response parsing: the action an env receives, and the format flags training penalises."""

import pytest

from seed_gym.agents.parsing import normalize_action, parse_react, project, response_for
from seed_gym.envs.searchqa.parsing import parse_search_r1

ADMISSIBLE = ["go to countertop 1", "take apple 1 from countertop 1", "look", "inventory"]


def test_a_well_formed_react_response_yields_its_admissible_action():
    parsed = parse_react("<think>the apple is there</think> <action>go to countertop 1</action>", ADMISSIBLE)
    assert parsed.action == "go to countertop 1" and parsed.valid and parsed.flags == ()


def test_case_spaces_quotes_and_a_final_period_do_not_matter_for_exact_projection():
    parsed = parse_react("<think>x</think><action> 'Go  to Countertop 1.' </action>", ADMISSIBLE)
    assert parsed.action == "go to countertop 1" and parsed.valid


@pytest.mark.parametrize("response, flag", [
    ("<think>x</think> go to countertop 1", "missing_action"),
    ("<think>x</think><action>look</action><action>inventory</action>", "duplicate_action"),
    ("<think>x</think><action>   </action>", "empty_action"),
])
def test_responses_without_exactly_one_action_take_the_envs_invalid_path(response, flag):
    parsed = parse_react(response, ADMISSIBLE)
    assert parsed.action == "" and not parsed.valid and flag in parsed.flags and parsed.fatal


def test_a_missing_think_block_executes_the_action_but_marks_the_step_format_invalid():
    parsed = parse_react("<action>look</action>", ADMISSIBLE)
    assert parsed.action == "look" and not parsed.valid and parsed.flags == ("missing_think",)
    assert parse_react("<action>look</action>", ADMISSIBLE, require_think=False).valid


def test_cjk_characters_make_a_step_format_invalid():
    parsed = parse_react("<think>苹果</think><action>look</action>", ADMISSIBLE)
    assert parsed.action == "look" and not parsed.valid and "cjk" in parsed.flags


def test_an_inadmissible_action_is_sent_verbatim_and_flagged_for_the_env_to_reject():
    parsed = parse_react("<think>x</think><action>fly to the moon</action>", ADMISSIBLE)
    assert parsed.action == "fly to the moon" and parsed.valid and parsed.flags == ("not_admissible",)


def test_fuzzy_projection_maps_near_misses_onto_the_closest_admissible_action():
    parsed = parse_react("<think>x</think><action>take apple 1 from countertop1</action>", ADMISSIBLE,
                         projection="fuzzy")
    assert parsed.action == "take apple 1 from countertop 1" and parsed.flags == ("projected",)
    far = parse_react("<think>x</think><action>open the fridge</action>", ADMISSIBLE, projection="fuzzy")
    assert far.action == "open the fridge" and far.flags == ("not_admissible",)


def test_projection_none_and_envs_without_admissible_lists_pass_actions_through():
    assert project("Search[Red Shoes]", None) == ("Search[Red Shoes]", ())
    assert project("LOOK", ADMISSIBLE, "none") == ("LOOK", ())
    assert normalize_action("  'Look.' ") == "look"


def test_search_r1_responses_are_cut_after_the_first_closing_tag():
    parsed = parse_search_r1("<think>a</think><search> who </search> junk <answer>x</answer>")
    assert parsed.action == "<think>a</think><search> who </search>" and parsed.valid


def test_search_r1_answers_are_valid_actions():
    parsed = parse_search_r1("<think>known</think><answer> Paris </answer> trailing")
    assert parsed.action.endswith("</answer>") and parsed.valid


@pytest.mark.parametrize("response, flag", [
    ("I think it is Paris.", "missing_action"),
    ("<search>a</search>", None),
    ("<answer>a</answer><search>b</search>", "search_and_answer"),
])
def test_search_r1_format_rules(response, flag):
    parsed = parse_search_r1(response)
    if flag is None:
        assert parsed.valid
    else:
        assert not parsed.valid and flag in parsed.flags


def test_text_outside_the_tags_is_flagged_as_junk_but_still_valid():
    parsed = parse_react("Sure! <think>x</think> <action>look</action> hope that helps", ADMISSIBLE)
    assert parsed.action == "look" and parsed.valid and parsed.flags == ("junk",)


@pytest.mark.parametrize("action", ["go to desk 1", "click[buy now]", "search[red shoes, size 9]"])
def test_response_for_is_what_the_react_parser_reads_back(action):
    parsed = parse_react(response_for(action), [action])
    assert parsed.action == action and parsed.valid and not parsed.flags
