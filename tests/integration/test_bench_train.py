"""``seed-gym bench train``: seed-gym's GRPO update and TRL's GRPOTrainer run on the same tiny
model folder and the same batch, in one run, and report comparable numbers. Nothing here depends
on how fast the machine is."""

from __future__ import annotations

import math

import pytest

pytestmark = pytest.mark.integration

PROMPTS, GROUP, MAX_NEW = 2, 2, 8


@pytest.fixture(scope="module")
def result(tiny_model_dir):
    pytest.importorskip("trl", reason='the TRL comparison needs the bench extra: pip install "seed-gym[bench]"')
    from seed_gym.training.bench import compare_with_trl

    # lr high enough that one AdamW step moves every weight it touches well above float32 noise
    return compare_with_trl(tiny_model_dir, prompts=PROMPTS, group=GROUP, max_new_tokens=MAX_NEW, steps=1, lr=1e-3,
                            env="webshop")


def test_both_runners_update_the_same_model_on_a_comparable_batch(result, tiny_model_dir):
    rows = result["rows"]
    assert set(rows) == {"seed-gym", "trl"}
    budget = PROMPTS * GROUP * MAX_NEW
    for name, row in rows.items():
        assert row["updates"] == 1 and len(row["tokens_per_update"]) == 1, name
        # every completion has at least one token (EOS or the first sampled one), at most max_new_tokens
        for tokens in (*row["tokens_per_update"], row["warmup"]["tokens"]):
            assert PROMPTS * GROUP <= tokens <= budget, (name, tokens)
        assert row["tokens_per_s"] > 0 and row["seconds_per_update"] > 0, name
        assert row["tokens_per_s"] == pytest.approx(row["tokens_per_update"][0] / row["seconds_per_update"])
        # the same folder trained on both sides, against a reference loaded from it (beta 0.01)
        assert row["model"] == str(tiny_model_dir) and row["reference_model"] == str(tiny_model_dir), name
        # two optimizer steps (warm-up + measured) changed the weights
        assert row["max_weight_change"] > 1e-5, name
    assert rows["trl"]["config"]["per_device_train_batch_size"] == PROMPTS * GROUP
    assert rows["trl"]["config"]["steps_per_generation"] == 1  # one optimizer step per generation batch
    assert rows["trl"]["config"]["model_dtype"] == "float32"
    assert rows["seed-gym"]["config"]["generate_batch"] == PROMPTS * GROUP
    settings = result["settings"]
    assert (settings["prompts"], settings["group"], settings["max_new_tokens"], settings["beta"]) == (
        PROMPTS, GROUP, MAX_NEW, 0.01)


def test_ratio_is_seed_gym_over_trl_tokens_per_s(result):
    rows = result["rows"]
    assert result["ratio"] == pytest.approx(rows["seed-gym"]["tokens_per_s"] / rows["trl"]["tokens_per_s"])
    assert math.isfinite(result["ratio_median"]) and result["ratio_median"] > 0
    assert result["versions"]["trl"] == "1.16.0"


def test_missing_trl_names_the_extra(monkeypatch):
    import builtins

    from seed_gym.core import SeedGymError
    from seed_gym.training import bench

    real_import = builtins.__import__

    def no_trl(name, *args, **kwargs):
        if name == "trl" or name.startswith("trl."):
            raise ImportError("No module named 'trl'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_trl)
    with pytest.raises(SeedGymError, match=r'pip install "seed-gym\[bench\]"'):
        bench.compare_with_trl("unused-model-folder", prompts=1, group=2, max_new_tokens=1, steps=1, env="webshop")
