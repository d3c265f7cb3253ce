"""Ranked choice (``choose=rank``): a model agent scores every admissible action's response by its
log-probability and takes the best. The shared-prefix scorer must agree with plain teacher forcing,
and through ``seed-gym eval`` every ranked step is an admissible action with its score recorded."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def backend(tiny_model_dir):
    from seed_gym.agents.backends.hf import HFBackend

    return HFBackend(tiny_model_dir, dtype="float32")


CHOICES = ["<think></think>\n<action>go to desk 1</action>", "<think></think>\n<action>take mug 1 from shelf 2</action>",
           "<think></think>\n<action>look</action>", "x"]
PROMPT = [{"role": "user", "content": "Your task is to: put a mug in desk. You see a shelf 2 and a desk 1."}]


def plain_scores(backend, prompt, choices):
    from seed_gym.agents.backends.scoring import continuation_logprobs

    prompt_ids = backend._encode(backend.render(prompt))
    choice_ids = [backend._encode(c) + [backend.tokenizer.eos_token_id] for c in choices]
    rows = continuation_logprobs(backend.model, [prompt_ids] * len(choices), choice_ids,
                                 pad_id=backend.tokenizer.pad_token_id)
    return [sum(row) for row in rows]


@pytest.mark.parametrize("chunk_tokens", [16384, 1])  # 1: every choice in its own chunk
def test_shared_prefix_scores_equal_one_teacher_forced_pass_per_choice(backend, chunk_tokens):
    backend.score_chunk_tokens = chunk_tokens
    try:
        fast = backend.score_choices(PROMPT, CHOICES)
    finally:
        backend.score_chunk_tokens = 16384
    assert [len(row) for row in fast] == [len(ids) for ids in backend.choice_ids(CHOICES)]
    assert [sum(row) for row in fast] == pytest.approx(plain_scores(backend, PROMPT, CHOICES), abs=1e-3)
    assert len(set(round(sum(row), 3) for row in fast)) == len(CHOICES)  # the choices really differ


def test_a_one_token_prompt_has_no_cache_to_share_and_still_scores(backend):
    from seed_gym.agents.backends.scoring import choice_logprobs, continuation_logprobs

    ids = [[5, 6, 7], [8]]
    fast = choice_logprobs(backend.model, [3], ids, pad_id=backend.tokenizer.pad_token_id)
    slow = continuation_logprobs(backend.model, [[3], [3]], ids, pad_id=backend.tokenizer.pad_token_id)
    assert [x for row in fast for x in row] == pytest.approx([x for row in slow for x in row], abs=1e-4)


def eval_run(tmp_path, tiny_model_dir, env, split, extra=(), rank_by="sum", agent_options=""):
    out = tmp_path / f"{env}-{rank_by}"
    result = subprocess.run(
        [sys.executable, "-m", "seed_gym.cli", "eval", "--agent", f"hf:{tiny_model_dir}@choose=rank,rank_by={rank_by},dtype=float32,max_new_tokens=16{agent_options}",
         "--env", env, "--split", split, "-n", "2", "--max-steps", "4", "--backend", "inline", "--out", str(out), *extra],
        capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 0, result.stdout + result.stderr
    folder = next(p for p in out.iterdir() if p.is_dir())
    return folder, [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("env, split, extra, rank_by", [
    ("webshop", "test", (), "sum"),
    ("webshop", "test", (), "prefix"),
    ("alfworld", "unseen", ("--env-arg", 'sizes={"unseen": 2}'), "mean"),
])
def test_every_ranked_step_is_an_admissible_action_with_its_score(tmp_path, tiny_model_dir, env, split, extra,
                                                                  rank_by):
    folder, episodes = eval_run(tmp_path, tiny_model_dir, env, split, extra, rank_by)
    steps = [step for episode in episodes for step in episode["steps"]]
    assert steps
    for step in steps:
        assert step["action"] in step["admissible_actions"] and not step["invalid_action"]
        assert step["meta"]["choice"] == "rank" and step["meta"]["choices"] == len(step["admissible_actions"])
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["identity"]["agent_config"]["choose"] == "rank"
    assert manifest["identity"]["agent_config"]["rank_by"] == rank_by


def test_the_ranked_action_is_the_best_scored_admissible_action(tmp_path, tiny_model_dir, backend):
    from seed_gym.agents.parsing import response_for

    _, episodes = eval_run(tmp_path, tiny_model_dir, "webshop", "test")
    step = next(s for e in episodes for s in e["steps"] if len(s["admissible_actions"]) > 1)
    prompt = [{"role": "user", "content": step["prompt"]}]
    scores = [sum(row) for row in backend.score_choices(prompt, [response_for(a) for a in step["admissible_actions"]])]
    best = max(range(len(scores)), key=scores.__getitem__)
    assert step["action"] == step["admissible_actions"][best]
    assert step["meta"]["choice_logprob"] == pytest.approx(scores[best], abs=1e-3)


def test_envs_without_an_admissible_list_fall_back_to_generation(tmp_path, tiny_model_dir):
    _, episodes = eval_run(tmp_path, tiny_model_dir, "searchqa", "test")
    steps = [step for episode in episodes for step in episode["steps"]]
    assert steps and all("choice" not in step["meta"] and step["meta"]["completion_tokens"] > 0 for step in steps)


def test_rank_on_a_backend_that_cannot_score_is_a_clear_error():
    from seed_gym.agent import AgentSpec
    from seed_gym.agents.backends import BackendError
    from seed_gym.agents.model import OpenAIAgent

    class GenerateOnly:
        name = "openai"

    agent = OpenAIAgent(AgentSpec.parse("openai:http://127.0.0.1:9/v1@choose=rank"), backend=GenerateOnly(),
                        env_id="webshop")
    with pytest.raises(BackendError, match="choose=rank needs a backend that scores text"):
        agent.act(["e0"], ["obs"], [{"admissible_actions": ["click[buy now]"], "task": {"instruction": "x"}}])


def test_a_ranked_step_can_record_the_chosen_candidates_tokens_and_log_probs(tmp_path, tiny_model_dir, backend):
    _, episodes = eval_run(tmp_path, tiny_model_dir, "webshop", "test", agent_options=",tokens=1,logprobs=1")
    for step in (s for e in episodes for s in e["steps"]):
        assert step["token_ids"] == backend.choice_ids([step["response"]])[0]
        assert len(step["logprobs"]) == len(step["token_ids"])
        assert sum(step["logprobs"]) == pytest.approx(step["meta"]["choice_logprob"], abs=1e-3)
