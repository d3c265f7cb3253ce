"""Search-QA prompts as Search-R1 builds them (issue #22, items 6 and 7).

Search-R1 (``search_r1/llm_agent/generation.py``) keeps one growing input per episode: the
chat-templated question prompt with the assistant turn opened, then each turn's response (cut after
the first ``</search>``, else the first ``</answer>``, re-tokenised alone) and the env's observation
(tokenised alone, cut to ``max_obs_length`` = 500 tokens), the whole left-truncated to
``max_prompt_length`` = 4096. It generates to EOS and cuts afterwards. The reference construction
below is written from that description, independently of seed-gym's prompt builder.
"""

from __future__ import annotations

import re

import pytest

from seed_gym.agents.backends.base import cut_at_stop, prompt_ids, render_prompt
from seed_gym.envs.searchqa.parsing import parse_search_r1
from seed_gym.agents.prompts import EpisodeView, PromptBuilder, template_for_env
from seed_gym.envs.searchqa.protocol import INVALID_TURN_MESSAGE, make_prompt

QUESTION = make_prompt("who founded the city of Varnholt")
INFO = "\n\n<information>Doc 1(Title: \"Varnholt\") Varnholt was founded by Edda Quill.\n</information>\n\n"


def search_r1_cut(response: str) -> str:
    """Search-R1's ``_postprocess_responses`` on one full generation."""
    if "</search>" in response:
        return response.split("</search>")[0] + "</search>"
    if "</answer>" in response:
        return response.split("</answer>")[0] + "</answer>"
    return response


def search_r1_action(response: str) -> tuple[str | None, str]:
    """Search-R1's ``postprocess_predictions``: the first complete tag of the cut response."""
    match = re.search(r"<(search|answer)>(.*?)</\1>", response, re.DOTALL)
    return (match.group(1), match.group(2).strip()) if match else (None, "")


def search_r1_input_ids(tokenizer, question: str, turns: list[tuple[str, str]], *, max_obs: int = 500,
                        max_prompt: int = 4096) -> list[int]:
    """The rolling input before the next generation: prompt ids + (response ids + obs ids) per turn."""
    encode = lambda text: tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    ids = encode(tokenizer.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                               add_generation_prompt=True))
    for response, observation in turns:
        ids += encode(search_r1_cut(response)) + encode(observation)[:max_obs]
    return ids[-max_prompt:]


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from seed_gym.agents.backends.hf import load_tokenizer

    return load_tokenizer(tiny_model_dir)


def built(turns: list[tuple[str, str]], observation: str) -> list[dict]:
    builder = PromptBuilder(template_for_env("searchqa"))
    episode = EpisodeView("q", QUESTION, [])
    observations = [QUESTION] + [obs for _, obs in turns]
    for index, (response, _) in enumerate(turns):
        episode.steps.append((observations[index], parse_search_r1(response).action, response))
    return builder.build(episode, observation, None)


def test_step_zero_is_the_question_in_a_user_turn_with_the_assistant_turn_opened(tokenizer):
    messages = built([], QUESTION)
    assert messages == [{"role": "user", "content": QUESTION}]
    assert prompt_ids(tokenizer, messages) == search_r1_input_ids(tokenizer, QUESTION, [])


def test_later_steps_continue_one_assistant_turn_token_for_token(tokenizer):
    turns = [("<think>look it up</think>\n<search> founder of Varnholt </search>", INFO),
             ("I think <answer> Paris", INVALID_TURN_MESSAGE)]
    messages = built(turns, INVALID_TURN_MESSAGE)
    assert [m["role"] for m in messages] == ["user", "assistant"] and messages[1]["continue"] is True
    text = render_prompt(tokenizer, messages)
    opened = tokenizer.apply_chat_template([{"role": "user", "content": QUESTION}], tokenize=False,
                                           add_generation_prompt=True)
    assert text == opened + turns[0][0] + INFO + turns[1][0] + INVALID_TURN_MESSAGE  # no end-of-turn between
    assert prompt_ids(tokenizer, messages) == search_r1_input_ids(tokenizer, QUESTION, turns)
    # the old rendering (all turns inside the user message) is a different token sequence
    closed = [{"role": "user", "content": QUESTION + turns[0][0] + INFO + turns[1][0] + INVALID_TURN_MESSAGE}]
    assert prompt_ids(tokenizer, closed) != prompt_ids(tokenizer, messages)


def test_observations_are_cut_to_their_first_500_tokens_and_the_prompt_to_its_last_4096(tokenizer):
    long_info = "\n\n<information>" + " ".join(f"passage{i} word{i % 7}" for i in range(2500)) + "</information>\n\n"
    turns = [(f"<search> query {i} </search>", long_info) for i in range(9)]
    messages = built(turns, long_info)
    reference = search_r1_input_ids(tokenizer, QUESTION, turns)
    template = template_for_env("searchqa")
    assert prompt_ids(tokenizer, messages, template.prompt_tokens) == reference
    assert len(tokenizer(long_info, add_special_tokens=False)["input_ids"]) > 500
    untruncated = search_r1_input_ids(tokenizer, QUESTION, turns, max_prompt=10**9)
    assert len(untruncated) > 4096 and len(reference) == 4096


@pytest.mark.parametrize("generation", [
    "<think>x</think><search> q <answer> a </answer> more </search> tail",   # a <search> holding an <answer>
    "<search> open <answer> a </answer> never closed",
    "<answer> a </answer><search> b </search>",
    "<answer> a </answer> trailing </search> junk",
    "<think>done</think>\n<answer> Edda Quill </answer>",
    "<think>done</think>\n<search> plain </search><search> twice </search>",
    "no tags at all",
])
def test_stopping_at_search_gives_what_search_r1s_generate_then_cut_gives(generation):
    template = template_for_env("searchqa")
    stopped, _ = cut_at_stop(generation, template.stop)  # what a backend returns, stopping at </search>
    ours = parse_search_r1(stopped)
    reference = search_r1_cut(generation)
    assert ours.action == reference
    assert search_r1_action(ours.action) == search_r1_action(reference)


def test_stopping_at_answer_too_would_change_the_action():
    generation = "<search> q <answer> a </answer> more </search>"
    early, _ = cut_at_stop(generation, ("</search>", "</answer>"))
    assert search_r1_action(parse_search_r1(early).action) == ("answer", "a")
    assert search_r1_action(search_r1_cut(generation)) == ("search", "q <answer> a </answer> more")
