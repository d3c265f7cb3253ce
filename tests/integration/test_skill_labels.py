"""Hindsight-skill SFT's labels (SEED stage 1, seed-method.md §4): the paper's labeller reads the
serialised trajectory and nothing else, and a label is worth learning only if the analyzer can write
it out within its token limit."""

from __future__ import annotations

import pytest

from seed_gym.training.config import ConfigError

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def random_webshop_episodes(tmp_path_factory):
    """Failed WebShop episodes (the random agent never buys the target): the rule's failure labels."""
    from seed_gym.evaluate import EvalConfig, evaluate
    from seed_gym.records import RunDir

    out = tmp_path_factory.mktemp("labels") / "random"
    evaluate(EvalConfig(env="webshop", split="train", agent="random", out=out, n=6, max_steps=4, backend="inline",
                        workers=1))
    records = [r for r in RunDir(out).finished().values() if not r.won]
    assert len(records) >= 4
    return records


def _labels(tiny_model_dir, records, **settings):
    from seed_gym.training.config import TrainConfig
    from seed_gym.training.policy import Policy
    from seed_gym.training.trainer import sft_examples

    config = TrainConfig(algo="sft", env="webshop", model=str(tiny_model_dir), out="unused", sft_data="skills",
                         analyzer="rule", **settings)
    policy = Policy.load(tiny_model_dir)
    examples, over_limit = sft_examples(config, policy, records)
    return [policy.tokenizer.decode(e.target_ids, skip_special_tokens=True) for e in examples], examples, over_limit


def _goal_asins(records):
    from seed_gym.registry import make

    env = make("webshop")
    try:
        return {str(r.task["id"]): env.ground_truth(str(r.task["id"]))["asin"] for r in records}
    finally:
        env.close()


def test_skill_sft_labels_read_the_trajectory_not_the_answer_key(tiny_model_dir, random_webshop_episodes):
    asins = _goal_asins(random_webshop_episodes)
    labels, _, _ = _labels(tiny_model_dir, random_webshop_episodes)
    assert len(labels) == len(random_webshop_episodes)
    leaked = [label for record, label in zip(random_webshop_episodes, labels)
              if asins[str(record.task["id"])].lower() in label.lower()]
    assert leaked == []
    # The answer key is there to be leaked: asked for, the labeller names the target product.
    keyed, _, _ = _labels(tiny_model_dir, random_webshop_episodes, skill_labels="ground-truth")
    assert any(asins[str(r.task["id"])].lower() in label.lower() for r, label in zip(random_webshop_episodes, keyed))


def test_skill_sft_drops_labels_the_analyzer_could_not_finish(tiny_model_dir, random_webshop_episodes):
    _, every, none_over = _labels(tiny_model_dir, random_webshop_episodes, analyzer_max_new_tokens=4096)
    lengths = sorted(len(e.target_ids) for e in every)
    assert none_over == 0 and lengths[0] < lengths[-1]
    limit = lengths[len(lengths) // 2]
    _, kept, over = _labels(tiny_model_dir, random_webshop_episodes, analyzer_max_new_tokens=limit)
    assert over == sum(n > limit for n in lengths) > 0
    assert len(kept) + over == len(every) and all(len(e.target_ids) <= limit for e in kept)
    with pytest.raises(ConfigError, match=f"raise analyzer_max_new_tokens to at least {lengths[0]}"):
        _labels(tiny_model_dir, random_webshop_episodes, analyzer_max_new_tokens=lengths[0] - 1)


def test_skill_sft_prompts_read_the_trajectory_within_the_analyzer_budget(tiny_model_dir, random_webshop_episodes):
    """The analyzer is trained on prompts of the size it will be sent in RL (analyzer_max_chars)."""
    from seed_gym.training.analyzer import analyzer_prompt
    from seed_gym.training.policy import Policy

    policy = Policy.load(tiny_model_dir)
    labels, full, _ = _labels(tiny_model_dir, random_webshop_episodes, analyzer_max_new_tokens=4096)
    short_labels, short, _ = _labels(tiny_model_dir, random_webshop_episodes, analyzer_max_new_tokens=4096,
                                     analyzer_max_chars=1500)
    assert short_labels == labels  # the same labels, read from a shorter trajectory
    for record, example in zip(random_webshop_episodes, short):
        assert example.prompt_ids == policy.encode_prompt(analyzer_prompt(record, max_chars=1500))
    assert sum(len(e.prompt_ids) for e in short) < sum(len(e.prompt_ids) for e in full)


def test_skill_sft_mixes_in_a_seeded_draw_of_cloning_examples_from_replay_runs(tiny_model_dir, tmp_path):
    """One set of weights acts and writes skills: replaying cloning examples keeps the actor (a small
    model's skill SFT alone erased its behaviour cloning, 10% to 0% on WebShop test)."""
    from seed_gym.agents.prompts import PromptBuilder, template_for_env
    from seed_gym.evaluate import EvalConfig, evaluate
    from seed_gym.records import RunDir
    from seed_gym.training.config import TrainConfig
    from seed_gym.training.policy import Policy
    from seed_gym.training.sft import expert_examples
    from seed_gym.training.trainer import replay_examples

    demos = tmp_path / "demos"
    evaluate(EvalConfig(env="webshop", split="train", agent="expert", out=demos, n=3, backend="inline"))
    policy = Policy.load(tiny_model_dir)
    cloned = expert_examples(RunDir(demos).finished().values(), policy, PromptBuilder(template_for_env("webshop"), 2))
    assert len(cloned) > 3

    def replayed(**settings):
        config = TrainConfig(algo="sft", env="webshop", model=str(tiny_model_dir), out="unused", sft_data="skills",
                             history=2, sft_replay_runs=[str(demos)], **settings)
        return [(e.prompt_ids, e.target_ids) for e in replay_examples(config, policy)]

    everything = replayed()
    assert sorted(everything) == sorted((e.prompt_ids, e.target_ids) for e in cloned)
    drawn = replayed(sft_replay_examples=3, seed=1)
    assert len(drawn) == 3 and all(pair in everything for pair in drawn)
    assert drawn == replayed(sft_replay_examples=3, seed=1)  # seeded
    with pytest.raises(ValueError, match="sft_data=skills"):
        TrainConfig(algo="sft", env="webshop", model="m", out="o", sft_replay_runs=[str(demos)])
    with pytest.raises(ConfigError, match="sft_replay_runs: .* not a run folder"):
        replay_examples(TrainConfig(algo="sft", env="webshop", model="m", out="o", sft_data="skills",
                                    sft_replay_runs=[str(tmp_path)]), policy)
