"""Sampled actions belong to their episode (issue #22, item 3): the same run played with another
batch size or another number of env workers gives the same episodes, and two splits do not share
their random numbers row for row. The tiny model samples at temperature 1 on the real WebShop env."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seed_gym.evaluate import EvalConfig, evaluate

pytestmark = pytest.mark.integration


def play(tiny_model_dir: Path, out: Path, *, split: str = "test", backend: str, workers: int,
         live_episodes: int, waves: int = 1) -> dict[str, list[str]]:
    agent = f"hf:{tiny_model_dir}@temperature=1.0,max_new_tokens=16,dtype=float32,projection=none"
    summary = evaluate(EvalConfig(env="webshop", split=split, agent=agent, out=out, n=3, group=2, seed=5,
                                  max_steps=3, backend=backend, workers=workers, live_episodes=live_episodes,
                                  waves=waves))
    records = [json.loads(line) for line in (Path(summary["run_dir"]) / "episodes.jsonl").read_text().splitlines()]
    return {r["episode_id"]: [s["response"] for s in r["steps"]] for r in records}


def test_batch_size_and_worker_count_do_not_change_what_an_episode_samples(tiny_model_dir, tmp_path):
    one_batch = play(tiny_model_dir, tmp_path / "a", backend="inline", workers=1, live_episodes=6)
    pairs = play(tiny_model_dir, tmp_path / "b", backend="process", workers=2, live_episodes=2)
    assert len(one_batch) == 6 and one_batch == pairs
    responses = [r for episode in one_batch.values() for r in episode]
    assert len(set(responses)) > len(responses) // 2  # really sampled: the rows differ


def test_waves_do_not_change_what_an_episode_samples(tiny_model_dir, tmp_path):
    """The overlapped engine (#21): three waves of two episodes, each generated in its own batch
    while the other waves' envs step, sample what lock-step samples."""
    lock_step = play(tiny_model_dir, tmp_path / "a", backend="process", workers=2, live_episodes=6)
    in_waves = play(tiny_model_dir, tmp_path / "b", backend="process", workers=2, live_episodes=6, waves=3)
    assert len(lock_step) == 6 and in_waves == lock_step


def test_two_episodes_never_share_random_numbers_row_for_row(tiny_model_dir):
    """The same prompt in the same batch row, in two episodes (two splits' first tasks): other samples;
    in the same episode again: the same sample."""
    from seed_gym.agent import AgentSpec
    from seed_gym.agents.model import ModelAgent

    spec = AgentSpec.parse(f"hf:{tiny_model_dir}@temperature=1.0,max_new_tokens=16,dtype=float32")
    info = {"task": {"instruction": "find a red mug"}, "admissible_actions": ["search[red mug]"]}
    page = "WebShop [SEP] Instruction: [SEP] find a red mug [SEP] Search"

    def first_response(episode_id: str) -> str:
        agent = ModelAgent(spec, seed=3, env_id="webshop")
        try:
            [action] = agent.act([episode_id], [page], [info])
            return action.response
        finally:
            agent.close()

    test_row, unseen_row = first_response("test/0001#0"), first_response("unseen/0001#0")
    assert test_row != unseen_row
    assert first_response("test/0001#0") == test_row
