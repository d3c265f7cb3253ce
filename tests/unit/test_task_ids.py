"""One canonical id per task; everything else is a typed error (#20 defect 8)."""

import pytest
from toy_envs import CounterEnv

from seed_gym.core import EnvMisuseError, SeedGymError, UnknownTaskError
from seed_gym.envs.webshop.env import WebShopEnv


@pytest.fixture(scope="module")
def webshop():
    return WebShopEnv(num_products=300, seed=5)


@pytest.mark.parametrize("alias", ["fixed_01", "fixed_1 ", " fixed_1", "fixed_+1", "fixed_1_0", "fixed_\u0661",
                                   "fixed_1\n", "FIXED_1", "fixed_-0", "fixed_", "fixed_1.0"])
def test_webshop_takes_only_the_canonical_id(webshop, alias):
    webshop.reset(seed=0, options={"task_id": "fixed_1"})  # the canonical id works
    with pytest.raises(UnknownTaskError, match="unknown task id"):
        webshop.reset(seed=0, options={"task_id": alias})


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True, [1]])
def test_a_bad_seed_is_a_typed_error(seed):
    with pytest.raises(EnvMisuseError, match="seed"):
        CounterEnv().reset(seed=seed, options={"task_id": "count-1"})


@pytest.mark.parametrize("options", ["abc", [("task_id", "count-1")], 3])
def test_options_that_are_not_a_mapping_are_a_typed_error(options):
    with pytest.raises(EnvMisuseError, match="options"):
        CounterEnv().reset(seed=0, options=options)


def test_numpy_integer_seeds_are_seeds():
    import numpy as np

    observation, _ = CounterEnv().reset(seed=np.int64(7), options={"task_id": "count-2"})
    assert "seed 7" in observation
    assert issubclass(EnvMisuseError, SeedGymError)
