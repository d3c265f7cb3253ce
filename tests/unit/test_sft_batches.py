"""SFT batching: length-bucketed batches cover every example once, stay seeded, and pad less."""

from __future__ import annotations

import random

import pytest

from seed_gym.training.sft import length_bucketed


def padding(batches: list[list[int]], lengths: list[int]) -> int:
    return sum(max(lengths[i] for i in b) * len(b) - sum(lengths[i] for i in b) for b in batches)


def test_every_example_lands_in_exactly_one_batch_of_at_most_the_batch_size():
    lengths = [random.Random(i).randrange(10, 900) for i in range(1000)]
    order = list(range(1000))
    random.Random(0).shuffle(order)
    batches = length_bucketed(order, lengths, 16, random.Random(1), window=8)
    assert sorted(i for b in batches for i in b) == list(range(1000))
    assert all(1 <= len(b) <= 16 for b in batches)


def test_bucketing_is_a_function_of_the_seed():
    lengths = [random.Random(i).randrange(10, 900) for i in range(300)]
    first = length_bucketed(list(range(300)), lengths, 16, random.Random(5))
    assert first == length_bucketed(list(range(300)), lengths, 16, random.Random(5))
    assert first != length_bucketed(list(range(300)), lengths, 16, random.Random(6))


def test_bucketed_batches_pad_far_less_than_shuffled_ones():
    lengths = [random.Random(i).randrange(10, 900) for i in range(2000)]
    order = list(range(2000))
    random.Random(0).shuffle(order)
    shuffled = [order[i:i + 16] for i in range(0, 2000, 16)]
    bucketed = length_bucketed(order, lengths, 16, random.Random(0))
    assert padding(bucketed, lengths) < padding(shuffled, lengths) / 5


def test_autocast_auto_is_bf16_only_where_the_device_runs_it_natively():
    import torch

    from seed_gym.training.sft import native_bf16, resolve_autocast

    cpu = torch.device("cpu")
    assert resolve_autocast("auto", cpu) == ("bfloat16" if native_bf16(cpu) else None)
    assert resolve_autocast(None, cpu) is None
    assert resolve_autocast("float16", cpu) == "float16"


def test_explicit_bf16_on_a_cpu_that_would_emulate_it_warns_and_is_kept():
    import torch

    from seed_gym.training.sft import native_bf16, resolve_autocast

    cpu = torch.device("cpu")
    if native_bf16(cpu):
        pytest.skip("this CPU runs bf16 natively")
    with pytest.warns(UserWarning, match="emulated"):
        assert resolve_autocast("bfloat16", cpu) == "bfloat16"


def test_the_config_accepts_autocast_auto():
    from seed_gym.training.config import TrainConfig

    assert TrainConfig(algo="sft", env="webshop", model="m", out="o", autocast="auto").autocast == "auto"
