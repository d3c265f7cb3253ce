"""The fast engine's bookkeeping: engine names and versions, the version pin.
(That it plays like stock is proven on the real engine in tests/integration/test_alfworld_fast.py.)"""

import pytest

from seed_gym.envs.alfworld import fast
from seed_gym.envs.alfworld.engine import (ENGINE_VERSION, FAST_ENGINE_VERSION, STOCK_ENGINE_VERSION,
                                           engine_version)


def test_fast_is_the_default_and_each_engine_has_its_own_version():
    assert ENGINE_VERSION == FAST_ENGINE_VERSION == engine_version("fast")
    assert engine_version("stock") == STOCK_ENGINE_VERSION != FAST_ENGINE_VERSION
    assert FAST_ENGINE_VERSION.startswith(STOCK_ENGINE_VERSION)
    with pytest.raises(ValueError, match="unknown ALFWorld engine"):
        engine_version("turbo")


def test_the_fast_path_is_pinned_to_the_versions_it_was_written_for(monkeypatch):
    assert fast.installed_versions() == fast.PINNED  # what this environment installs
    fast.check_versions()
    monkeypatch.setattr(fast, "installed_versions", lambda: {"alfworld": "0.5.0", "textworld": "1.7.0"})
    with pytest.raises(fast.EngineVersionError, match="engine=stock"):
        fast.check_versions()


def test_memory_benchmark_cycles_games_with_new_group_indices_and_reads_rss():
    import os

    from seed_gym.envs.alfworld.memory import cycled_episodes, rss_bytes

    plan = cycled_episodes(["a", "b"], 5)
    assert [(e.task_id, e.group_index) for e in plan] == [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("a", 2)]
    assert len({e.episode_id for e in plan}) == 5  # every episode its own record
    assert rss_bytes(os.getpid()) > 10 * 2**20
    assert rss_bytes(None) is None and rss_bytes(2**22 + 12345) is None
