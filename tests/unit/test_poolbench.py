"""How ``seed-gym bench pools`` times things: what each section plays, not how fast (no timed tests)."""

from seed_gym import poolbench
from seed_gym.registry import register

register("toy-counter", "toy_envs:CounterEnv")


def _toy() -> poolbench.EnvSetup:
    return poolbench.setup("toy-counter", "train", max_steps=4)


def test_each_pool_is_warmed_up_with_as_many_episodes_as_it_is_timed_on(monkeypatch):
    played = []
    real = poolbench.run_rollouts

    def recording(pool, agent, episodes, **options):
        played.append(len(episodes))
        return real(pool, agent, episodes, **options)

    monkeypatch.setattr(poolbench, "run_rollouts", recording)
    rows = poolbench.steps_per_second(_toy(), episodes=12, envs_per_worker=2, backends=())
    # one warm-up run on other seeds, then the timed run: a warm-up of one episode per slot once left
    # a worker's lazily loaded state (WebShop: 2.3 s) inside the timed run
    assert played == [12, 12] and rows[0]["episodes"] == 12


def test_the_bare_loop_steps_the_engines_own_envs(monkeypatch):
    stepped = []
    real = poolbench._bare_loop

    def recording(envs, agent, episodes):
        stepped.append(tuple(id(env) for env in envs))
        return real(envs, agent, episodes)

    monkeypatch.setattr(poolbench, "_bare_loop", recording)
    seen_pools = []
    real_pool = poolbench.InlinePool

    class Watched(real_pool):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            seen_pools.append(tuple(id(env) for env in self.envs))

    monkeypatch.setattr(poolbench, "InlinePool", Watched)
    result = poolbench.engine_overhead(_toy(), episodes=6, slots=2, repeats=2)
    assert result["same_steps"] and result["repeats"] == 2
    assert len(stepped) == 3 and set(stepped) == set(seen_pools)  # the warm-up pass and 2 repeats, same envs
