"""Records -> step samples: one sample per env step, the episode reward minus the format penalty."""

from dataclasses import asdict

import pytest

from seed_gym.records import EpisodeRecord, StepRecord
from seed_gym.training.batch import reward_rule, samples_from_records


class WordTokenizer:
    eos_token_id = 99

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [len(word) for word in text.split()]}


def record(won: bool, valid: list[bool], episode: str = "t1#0") -> EpisodeRecord:
    steps = [StepRecord(t=i, observation=f"obs {i}", action="look", reward=0.0, invalid_action=False,
                        response="<think>x</think><action>look</action>", prompt=f"prompt {i}", valid_format=v,
                        token_ids=[i, 7], finish_reason="stop")
             for i, v in enumerate(valid)]
    return EpisodeRecord(episode_id=episode, task={"id": episode.split("#")[0], "family": "pick"}, agent="hf:x",
                         group_index=0, seed=0, steps=steps, final_observation="", won=won, score=float(won),
                         total_reward=float(won), status="completed", wall_seconds=0.0)


def test_every_step_carries_the_episode_reward_less_its_own_format_penalty():
    samples = samples_from_records([record(True, [True, False, True])], WordTokenizer(), "alfworld")
    assert [s.reward for s in samples] == pytest.approx([10.0, 9.9, 10.0])
    assert [s.response_ids for s in samples] == [[0, 7], [1, 7], [2, 7]]  # the recorded sampled ids
    assert {s.group_id for s in samples} == {"t1"} and samples[1].messages == [{"role": "user", "content": "prompt 1"}]


def test_search_qa_rewards_exact_match_with_a_smaller_penalty():
    samples = samples_from_records([record(False, [False])], WordTokenizer(), "searchqa")
    assert samples[0].reward == pytest.approx(-0.01)
    assert reward_rule("webshop-browser") == reward_rule("webshop") == (10.0, 0.1)


def test_responses_without_recorded_ids_are_retokenised_with_eos_when_they_stopped():
    rec = record(True, [True])
    rec.steps[0].token_ids = None
    rec.steps[0].response = "ab cde"
    assert samples_from_records([rec], WordTokenizer(), "webshop")[0].response_ids == [2, 3, 99]


def test_records_that_kept_only_prompt_hashes_cannot_be_trained_on():
    rec = record(True, [True])
    rec.steps[0].prompt = None
    with pytest.raises(ValueError, match="record_prompt=hash"):
        samples_from_records([rec], WordTokenizer(), "webshop")


def test_a_continued_turn_is_rebuilt_exactly_and_search_r1_trains_on_its_cut_response_retokenised():
    segments = [{"text": "<search> q </search>"}, {"text": "\n\n<information>x</information>\n\n", "max_tokens": 500}]
    step = StepRecord(t=1, observation="obs", action="<answer> a </answer>", reward=1.0, invalid_action=False,
                      response="<answer> a </answer>", prompt="Question: q?\n", valid_format=True,
                      continuation=segments, retokenize=True, token_ids=[5, 5, 5, 5, 5], finish_reason="stop",
                      meta={"raw_response": "<answer> a </answer> and on"})
    rec = record(True, [True])
    rec.steps = [step]
    [sample] = samples_from_records([rec], WordTokenizer(), "searchqa")
    assert sample.messages == [{"role": "user", "content": "Question: q?\n"},
                               {"role": "assistant", "content": "<search> q </search>\n\n<information>x</information>\n\n",
                                "continue": True, "segments": segments}]
    assert sample.response_ids == [len("<answer>"), 1, len("</answer>")]  # the cut text, no EOS, not the sampled ids


def test_a_version_1_record_with_the_training_fields_in_meta_trains_the_same():
    step = {"t": 0, "observation": "obs", "action": "look", "reward": 0.0, "invalid_action": False,
            "admissible_actions": None, "response": "ab cde", "prompt": "p", "valid_format": True,
            "meta": {"system": "Be brief.", "finish_reason": "stop", "template": "t1"}}
    old = {**asdict(record(True, [True])), "record_version": 1, "steps": [step]}
    [sample] = samples_from_records([EpisodeRecord.from_dict(old)], WordTokenizer(), "webshop")
    assert sample.messages == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "p"}]
    assert sample.response_ids == [2, 3, 99]  # re-tokenised, with EOS: it stopped
