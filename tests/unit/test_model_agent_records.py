"""What a model agent's step record keeps: typed fields for what training reads back, diagnostics in
``meta``, and samples rebuilt from the record that are exactly what the model saw and sampled."""

from __future__ import annotations

import json

from toy_envs import TASKS

from seed_gym.agent import AgentSpec
from seed_gym.agents.backends import Generation
from seed_gym.agents.model import ModelAgent
from seed_gym.agents.prompts import GENERIC_TEMPLATE
from seed_gym.pools import make_pool
from seed_gym.records import EpisodeRecord
from seed_gym.registry import register
from seed_gym.rollout import plan_episodes, run_rollouts
from seed_gym.training.batch import samples_from_records

register("toy-counter", "toy_envs:CounterEnv")

TRAINING_FIELDS = {"system", "continuation", "token_ids", "logprobs", "finish_reason", "retokenize"}


class RecordingBackend:
    """Answers every prompt with ``reply`` and sampled ids 1..n; remembers every prompt it got."""

    name = "recording"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.prompts: list = []

    def generate(self, prompts, params):
        self.prompts += [list(p) for p in prompts]
        ids = list(range(1, 6))
        return [Generation(text=self.reply, prompt_tokens=7, completion_tokens=5, finish_reason="stop",
                           token_ids=ids, logprobs=[-0.5] * 5 if params.logprobs else None) for _ in prompts]

    def describe(self):
        return {}

    def close(self):
        pass


class WordTokenizer:
    eos_token_id = 99

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [len(word) for word in text.split()]}


def play(agent: ModelAgent, n: int = 1) -> list[EpisodeRecord]:
    with make_pool("inline", "toy-counter", {"max_steps": 2}, num_slots=n) as pool:
        records = run_rollouts(pool, agent, plan_episodes(TASKS[1:1 + n]))
    # Through the file format, as training reads them.
    return [EpisodeRecord.from_dict(json.loads(record.to_json())) for record in records]


def test_the_fields_training_reads_are_typed_and_rebuild_what_the_model_saw(tmp_path):
    template = tmp_path / "brief.toml"
    template.write_text(GENERIC_TEMPLATE.read_text() + '\nsystem = "Be brief."\n')
    backend = RecordingBackend("<think>x</think><action>up</action>")
    agent = ModelAgent(AgentSpec.parse(f"hf:m@tokens=1,template={template}"), backend=backend)
    [record] = play(agent)
    steps = record.steps
    assert [s.system for s in steps] == ["Be brief."] * 2 and all(s.token_ids == [1, 2, 3, 4, 5] for s in steps)
    assert {(s.finish_reason, s.logprobs, s.continuation, s.retokenize) for s in steps} == {("stop", None, None, False)}
    assert not TRAINING_FIELDS & set(steps[0].meta)  # meta keeps diagnostics only
    assert steps[0].meta["prompt_tokens"] == 7 and steps[0].meta["parse_flags"] == []
    samples = samples_from_records([record], WordTokenizer(), "toy-counter")
    assert [s.messages for s in samples] == backend.prompts  # exactly the prompts the model got
    assert [s.response_ids for s in samples] == [[1, 2, 3, 4, 5]] * 2


def test_search_r1_steps_keep_the_continued_turn_and_train_on_the_cut_response_retokenised():
    backend = RecordingBackend("<search> q </search> and on")
    agent = ModelAgent(AgentSpec.parse("hf:m@logprobs=1"), backend=backend, env_id="searchqa")
    [record] = play(agent)
    first, second = record.steps
    assert first.continuation is None and second.continuation == backend.prompts[1][-1]["segments"]
    assert first.response == "<search> q </search>" and first.meta["raw_response"] == "<search> q </search> and on"
    assert first.retokenize and first.logprobs == [-0.5] * 5 and first.system is None
    samples = samples_from_records([record], WordTokenizer(), "searchqa")
    assert [s.messages for s in samples] == backend.prompts
    assert samples[0].response_ids == [len("<search>"), 1, len("</search>")]  # the cut text, no EOS
