"""The ray backend on a real local Ray instance (127.0.0.1 only, 2 CPUs, a 100 MB object store, no
dashboard): the process pool's contract (dead and hung actors replaced, their episodes rerun,
recycling), the env's shared state built once per node, and ``seed-gym eval --backend ray`` giving
the records of ``--backend process`` on every built-in env."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))  # the toy envs; actors get this path too

from toy_envs import TASKS  # noqa: E402

from seed_gym.agent import AgentAction, make_agent  # noqa: E402
from seed_gym.pools import WorkerStartError, make_pool  # noqa: E402
from seed_gym.raypool import RayPool, ray_session  # noqa: E402
from seed_gym.records import RunDir  # noqa: E402
from seed_gym.registry import register  # noqa: E402
from seed_gym.rollout import plan_episodes, run_rollouts  # noqa: E402

pytestmark = pytest.mark.integration

register("toy-counter", "toy_envs:CounterEnv")
register("toy-shared", "toy_envs:SharedCounterEnv")


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    """One Ray instance for the module: pools join it instead of starting their own."""
    with ray_session(num_cpus=2, object_store_mb=100) as ray:
        yield ray


def played(records):
    """What each episode did, without wall times and backend diagnostics."""
    return {r.episode_id: (r.seed, r.won, r.score, r.status, r.final_observation, r.total_reward,
                           [(s.observation, s.action, s.reward, s.invalid_action, s.response) for s in r.steps])
            for r in records}


class CrashOrHangOnce:
    """Random play, except that ``episode`` sends ``action`` (crash, hang) once."""

    def __init__(self, episode: str, action: str) -> None:
        self.inner = make_agent("random", seed=2)
        self.name, self.episode, self.action, self.done = "random", episode, action, False
        self.resets: list[str] = []

    def reset(self, episode_ids, observations, infos):
        self.resets += episode_ids
        self.inner.reset(episode_ids, observations, infos)

    def act(self, episode_ids, observations, infos):
        actions = self.inner.act(episode_ids, observations, infos)
        if not self.done and self.episode in episode_ids:
            self.done = True
            actions[episode_ids.index(self.episode)] = AgentAction(self.action)
        return actions

    def end(self, episode_ids):
        self.inner.end(episode_ids)


def test_a_local_instance_listens_on_loopback_only(local_ray):
    nodes = [node for node in local_ray.nodes() if node["Alive"]]
    assert [node["NodeManagerAddress"] for node in nodes] == ["127.0.0.1"]


def test_ray_actors_give_the_records_of_worker_processes_in_lock_step_and_in_waves():
    episodes = plan_episodes(TASKS, group=2, seed=11)
    runs = {}
    for backend, waves in (("process", 1), ("ray", 1), ("ray", 2)):
        with make_pool(backend, "toy-counter", {"max_steps": 6}, num_slots=4, workers=2) as pool:
            runs[backend, waves] = played(run_rollouts(pool, make_agent("random@invalid=0.2", seed=5), episodes,
                                                       waves=waves))
            if backend == "ray":
                assert pool.describe()["workers"] == 2 and sum(pool.describe()["nodes"].values()) == 2
    assert len(runs["process", 1]) == len(episodes)
    assert runs["ray", 1] == runs["process", 1] and runs["ray", 2] == runs["process", 1]


def test_a_dead_actor_is_replaced_and_its_episodes_rerun():
    agent = CrashOrHangOnce("count-4#0", "crash")
    episodes = plan_episodes(TASKS[:6])
    with make_pool("ray", "toy-counter", {}, num_slots=4, workers=2) as pool:
        before = set(pool.worker_pids())
        records = run_rollouts(pool, agent, episodes, waves=2)
        after = set(pool.worker_pids())
    assert sorted(r.episode_id for r in records) == sorted(e.episode_id for e in episodes)
    assert all(r.status != "error" for r in records)
    assert agent.resets.count("count-4#0") == 2  # replayed from the start on a fresh actor
    assert len(before - after) == 1  # exactly the crashed actor was replaced


def test_a_hung_call_kills_its_actor_after_the_call_timeout_and_the_episode_reruns():
    agent = CrashOrHangOnce("count-3#0", "hang")
    with make_pool("ray", "toy-counter", {}, num_slots=2, workers=2, call_timeout=3) as pool:
        records = {r.episode_id: r for r in run_rollouts(pool, agent, plan_episodes(["count-3", "count-2"]))}
    assert set(records) == {"count-3#0", "count-2#0"} and all(r.status != "error" for r in records.values())
    assert agent.resets.count("count-3#0") == 2


def test_actors_are_recycled_after_n_episodes_without_losing_one():
    episodes = plan_episodes(TASKS[:5])
    pids = set()
    with make_pool("ray", "toy-counter", {}, num_slots=1, workers=1, recycle_after=2) as pool:
        records = run_rollouts(pool, make_agent("expert"), episodes, on_records=lambda _: pids.update(pool.worker_pids()))
        assert pool.recycled == 2
    assert len(pids) == 3 and len(records) == 5 and all(r.won for r in records)


def test_the_shared_state_is_built_once_per_node_and_installed_in_every_actor():
    def builders_and_hosts(pool: RayPool) -> set[tuple[str, str]]:
        records = run_rollouts(pool, make_agent("expert"), plan_episodes(TASKS[:4]))
        # first observation: "count to N (seed S) [table built by PID, env in PID]"
        return {tuple(part.split()[-1] for part in r.steps[0].observation.split("[")[1].rstrip("]").split(","))
                for r in records}

    with RayPool("toy-shared", {}, workers=2, envs_per_worker=2) as pool:
        shared = builders_and_hosts(pool)
        actors = {str(pid) for pid in pool.worker_pids()}
        assert pool.describe()["shared_state"]
    builders = {builder for builder, _ in shared}
    assert {host for _, host in shared} == actors and len(actors) == 2  # both actors played
    assert len(builders) == 1 and not builders & actors  # one table, built outside the actors
    with RayPool("toy-shared", {}, workers=2, envs_per_worker=2, share_state=False) as pool:
        unshared = builders_and_hosts(pool)
    assert all(builder == host for builder, host in unshared)  # each actor built its own


def test_an_env_that_cannot_be_built_is_a_clear_start_error():
    with pytest.raises(WorkerStartError, match="failed to build its envs: TypeError: .*nosuch"):
        make_pool("ray", "toy-counter", {"nosuch": 1}, num_slots=1, workers=1)


# -- the must-show: seed-gym eval --backend ray == --backend process, on every built-in env ---------
CASES = {  # split, extra arguments, whether the env offers a shared state (its catalogue, corpus and index)
    "alfworld": ("unseen", ["--env-arg", 'sizes={"unseen": 2}'], False),
    "webshop": ("test", [], True),
    "searchqa": ("test", [], True),
}


@pytest.mark.parametrize("env", sorted(CASES))
def test_eval_backend_ray_gives_the_records_of_backend_process(env, tmp_path):
    from seed_gym.cli import main

    split, extra, shares = CASES[env]
    runs = {}
    for backend in ("process", "ray"):
        out = tmp_path / backend
        args = ["eval", "--agent", "random", "--env", env, "--split", split, "-n", "2", "--group", "2",
                "--max-steps", "4", "--workers", "2", "--seed", "3", "--backend", backend, "--out", str(out), *extra]
        with pytest.raises(SystemExit) as exit_:
            main(args)
        assert exit_.value.code == 0
        runs[backend] = RunDir(out / "random").finished()
        summary = json.loads(RunDir(out / "random").summary_path.read_text())
        pool = summary["pool_this_session"]
        assert pool["backend"] == backend  # the envs really ran there
        assert backend == "process" or pool["shared_state"] is shares
    assert len(runs["process"]) == 4
    assert played(runs["ray"].values()) == played(runs["process"].values())
    assert any(r.steps for r in runs["ray"].values())
