"""The rollout engine on the toy counter env, with both backends."""

import pytest
from toy_envs import TASKS

from seed_gym.agent import Agent, AgentAction, make_agent
from seed_gym.pools import make_pool
from seed_gym.registry import register
from seed_gym.rollout import plan_episodes, run_rollouts, task_seed

register("toy-counter", "toy_envs:CounterEnv")


class ScriptAgent(Agent):
    """Says ``up`` except where told otherwise; remembers every batch it saw."""

    def __init__(self, special=None):
        super().__init__()
        self.special = special or {}
        self.batches = []
        self.reset_ids = []
        self.ended = []

    def reset(self, episode_ids, observations, infos):
        self.reset_ids += list(episode_ids)

    def act(self, episode_ids, observations, infos):
        self.batches.append(list(episode_ids))
        return [AgentAction(self.special.get(e, "up"), response=f"<{e}>") for e in episode_ids]

    def end(self, episode_ids):
        self.ended += list(episode_ids)


class OnceAgent(ScriptAgent):
    """Says ``up``, except that ``episode`` says ``action`` (crash, hang) once."""

    def __init__(self, episode, action):
        super().__init__()
        self.episode, self.action, self.done = episode, action, False

    def act(self, episode_ids, observations, infos):
        actions = super().act(episode_ids, observations, infos)
        if not self.done and self.episode in episode_ids:
            self.done = True
            actions[episode_ids.index(self.episode)] = AgentAction(self.action)
        return actions


@pytest.fixture(params=["inline", "process"])
def backend(request):
    return request.param


def test_every_episode_runs_once_and_records_what_happened(backend):
    episodes = plan_episodes(TASKS[:4], group=2, seed=5)
    agent = ScriptAgent()
    with make_pool(backend, "toy-counter", {}, num_slots=3, workers=2) as pool:
        records = run_rollouts(pool, agent, episodes)
    assert sorted(r.episode_id for r in records) == sorted(e.episode_id for e in episodes)
    assert all(r.won and r.status == "completed" for r in records)
    by_id = {r.episode_id: r for r in records}
    assert by_id["count-3#1"].num_steps == 3
    assert by_id["count-3#1"].steps[0].response == "<count-3#1>"
    assert by_id["count-3#1"].steps[1].observation == "value 1"
    assert sorted(agent.ended) == sorted(agent.reset_ids)


def test_live_episodes_advance_in_lock_step_batches():
    agent = ScriptAgent()
    with make_pool("inline", "toy-counter", {}, num_slots=4) as pool:
        run_rollouts(pool, agent, plan_episodes(TASKS[:4]))
    assert agent.batches[0] == ["count-1#0", "count-2#0", "count-3#0", "count-4#0"]
    assert max(len(b) for b in agent.batches) == 4 and len(agent.batches) == 4  # one tick per step


def test_group_members_share_the_start_seed():
    episodes = plan_episodes(["count-2"], group=3, seed=9)
    assert {e.seed for e in episodes} == {task_seed(9, "count-2")}
    assert task_seed(9, "count-2") != task_seed(10, "count-2")
    with make_pool("inline", "toy-counter", {}, num_slots=3) as pool:
        records = run_rollouts(pool, ScriptAgent(), episodes)
    assert len({r.steps[0].observation for r in records}) == 1


def test_step_budget_ends_episodes_as_truncated():
    agent = ScriptAgent({"count-2#0": "down"})
    with make_pool("inline", "toy-counter", {"max_steps": 4}, num_slots=2) as pool:
        records = {r.episode_id: r for r in run_rollouts(pool, agent, plan_episodes(["count-2", "count-1"]))}
    assert records["count-2#0"].status == "truncated" and records["count-2#0"].num_steps == 4
    assert records["count-1#0"].status == "completed"


def test_an_env_exception_fails_only_its_episode_after_retries():
    agent = ScriptAgent({"count-3#0": "boom"})
    with make_pool("inline", "toy-counter", {}, num_slots=2) as pool:
        records = {r.episode_id: r for r in run_rollouts(pool, agent, plan_episodes(["count-3", "count-2"]), max_retries=1)}
    assert records["count-3#0"].status == "error" and "boom" in records["count-3#0"].error
    assert records["count-2#0"].won
    assert agent.reset_ids.count("count-3#0") == 2  # first try + one retry


def test_a_dead_worker_is_restarted_and_its_episodes_rerun():
    agent = OnceAgent("count-4#0", "crash")
    episodes = plan_episodes(TASKS[:6])
    with make_pool("process", "toy-counter", {}, num_slots=4, workers=2) as pool:
        records = run_rollouts(pool, agent, episodes)
    assert sorted(r.episode_id for r in records) == sorted(e.episode_id for e in episodes)
    assert all(r.won for r in records)  # the lost episodes were replayed from the start
    assert agent.reset_ids.count("count-4#0") == 2


def test_records_are_handed_over_as_soon_as_episodes_finish():
    seen = []
    with make_pool("inline", "toy-counter", {}, num_slots=2) as pool:
        run_rollouts(pool, make_agent("expert"), plan_episodes(["count-1", "count-5"]),
                     on_records=lambda rs: seen.append([r.episode_id for r in rs]))
    assert seen == [["count-1#0"], ["count-5#0"]]


def test_a_worker_that_dies_before_its_reply_is_read_fails_its_calls_at_once():
    from seed_gym.pools import Call, CallError

    with make_pool("process", "toy-counter", {}, num_slots=2, workers=1, call_timeout=5) as pool:
        pool.run([Call("reset", 0, task_id="count-3", seed=0)])
        worker = pool._workers[0]
        send = worker.conn.send

        def send_then_let_it_die(calls):
            send(calls)
            worker.process.join(30)  # the crash is over before the pool reads the reply

        worker.conn.send = send_then_let_it_die
        (result,) = pool.run([Call("step", 0, action="crash")])
    assert isinstance(result, CallError) and result.message == "env worker died"


def test_a_hung_step_kills_its_worker_after_the_call_timeout_and_the_episode_is_retried():
    agent = OnceAgent("count-3#0", "hang")
    with make_pool("process", "toy-counter", {}, num_slots=1, workers=1, call_timeout=2) as pool:
        records = run_rollouts(pool, agent, plan_episodes(["count-3", "count-2"]))
    assert all(r.won and r.status == "completed" for r in records)
    assert agent.reset_ids.count("count-3#0") == 2  # replayed from the start on a fresh worker


def test_an_episode_that_always_hangs_is_recorded_as_an_error_and_the_run_goes_on():
    agent = ScriptAgent({"count-2#0": "hang"})
    with make_pool("process", "toy-counter", {}, num_slots=2, workers=2, call_timeout=1) as pool:
        records = {r.episode_id: r for r in run_rollouts(pool, agent, plan_episodes(["count-2", "count-3"]))}
    assert records["count-2#0"].status == "error" and "exceeded 1 s" in records["count-2#0"].error
    assert records["count-3#0"].won


def test_workers_are_recycled_after_n_episodes_without_losing_one():
    agent = ScriptAgent()
    episodes = plan_episodes(TASKS[:5])
    with make_pool("process", "toy-counter", {}, num_slots=1, workers=1, recycle_after=2) as pool:
        pids = set()
        records = run_rollouts(pool, agent, episodes, on_records=lambda rs: pids.update(pool.worker_pids()))
        assert pool.recycled == 2  # before the 3rd and the 5th episode
    assert len(pids) == 3
    assert all(r.won for r in records) and sorted(agent.reset_ids) == sorted(e.episode_id for e in episodes)


def test_a_worker_mid_episode_is_not_recycled():
    from seed_gym.pools import Call

    with make_pool("process", "toy-counter", {}, num_slots=2, workers=1, recycle_after=1) as pool:
        pool.run([Call("reset", 0, task_id="count-3", seed=0)])
        pid = pool.worker_pids()[0]
        pool.run([Call("reset", 1, task_id="count-2", seed=0)])  # slot 0 is mid-episode: keep it
        assert pool.worker_pids()[0] == pid and pool.recycled == 0
        (step,) = pool.run([Call("step", 0, action="up")])
        assert step[0] == "value 1"  # slot 0's episode went on where it was
        for slot, n in ((0, 2), (1, 2)):
            for _ in range(n):
                pool.run([Call("step", slot, action="up")])
        pool.run([Call("reset", 0, task_id="count-1", seed=0)])  # both idle now: recycled
        assert pool.recycled == 1 and pool.worker_pids()[0] != pid


def test_a_rollout_clock_splits_env_time_from_agent_time_and_counts_env_steps():
    import time

    from seed_gym.rollout import RolloutClock

    class SlowAgent(ScriptAgent):
        def act(self, episode_ids, observations, infos):
            time.sleep(0.05)  # the agent's share of the wall time: at least 0.05 s per tick
            return super().act(episode_ids, observations, infos)

    clock = RolloutClock()
    agent = SlowAgent()
    with make_pool("inline", "toy-counter", {}, num_slots=4) as pool:
        records = run_rollouts(pool, agent, plan_episodes(TASKS[:2], group=2), clock=clock)
    assert clock.steps == sum(r.num_steps for r in records) > 0
    assert clock.agent_s >= 0.05 * len(agent.batches) and 0 < clock.env_s < clock.agent_s


# -- waves: the envs of one wave step while the agent acts on another -----------------------------
def played(records):
    """What an episode did, without wall time: what waves must not change."""
    return {r.episode_id: (r.seed, r.won, r.score, r.status, r.final_observation, r.total_reward,
                           [(s.observation, s.action, s.reward, s.invalid_action) for s in r.steps])
            for r in records}


@pytest.mark.parametrize("waves", [2, 3])
def test_waves_give_every_episode_the_record_of_lock_step(backend, waves):
    episodes = plan_episodes(TASKS, group=2, seed=7)
    with make_pool(backend, "toy-counter", {"max_steps": 6}, num_slots=6, workers=2) as pool:
        lock_step = run_rollouts(pool, make_agent("random@invalid=0.2", seed=3), episodes)
    with make_pool(backend, "toy-counter", {"max_steps": 6}, num_slots=6, workers=2) as pool:
        in_waves = run_rollouts(pool, make_agent("random@invalid=0.2", seed=3), episodes, waves=waves)
    assert len(lock_step) == len(episodes) and played(in_waves) == played(lock_step)
    assert {r.status for r in lock_step} == {"completed", "truncated"}  # both endings were exercised


def test_in_lock_step_a_freed_slot_takes_the_next_episode_in_the_same_round(backend):
    agent = ScriptAgent()
    with make_pool(backend, "toy-counter", {}, num_slots=2, workers=2) as pool:
        records = run_rollouts(pool, agent, plan_episodes(["count-1", "count-3", "count-2"]))
    assert all(r.won for r in records)
    # count-1 ends in the first round; count-2 starts at once in its slot and acts in the second,
    # so every round is a full batch and there are three rounds, not four
    assert agent.batches == [["count-1#0", "count-3#0"], ["count-2#0", "count-3#0"], ["count-2#0", "count-3#0"]]


def test_each_wave_acts_while_the_other_waves_batch_is_in_flight():
    class Watcher(ScriptAgent):
        def act(self, episode_ids, observations, infos):
            self.in_flight.append(pool.in_flight)
            return super().act(episode_ids, observations, infos)

    agent = Watcher()
    agent.in_flight = []
    with make_pool("process", "toy-counter", {}, num_slots=4, workers=2) as pool:
        records = run_rollouts(pool, agent, plan_episodes(["count-3", "count-4", "count-5", "count-6"]), waves=2)
    assert len(records) == 4 and all(r.won for r in records)
    # slots 0 and 2 form the first wave (the first two episodes), 1 and 3 the second: the agent
    # sees the halves in turn
    assert agent.batches[:4] == [["count-3#0", "count-4#0"], ["count-5#0", "count-6#0"]] * 2
    assert min(agent.in_flight[:6]) == 1  # the other wave's steps were in the pool meanwhile


def test_a_worker_dying_with_both_waves_in_flight_fails_both_and_every_episode_reruns():
    agent = OnceAgent("count-4#0", "crash")
    episodes = plan_episodes(TASKS[:6])
    with make_pool("process", "toy-counter", {}, num_slots=4, workers=1) as pool:  # one worker holds both waves
        records = run_rollouts(pool, agent, episodes, waves=2)
    assert sorted(r.episode_id for r in records) == sorted(e.episode_id for e in episodes)
    assert all(r.won and r.status == "completed" for r in records)  # replayed from the start
    assert agent.reset_ids.count("count-4#0") == 2
    assert sum(agent.reset_ids.count(e.episode_id) == 2 for e in episodes) >= 2  # the other wave's too


def test_waves_must_be_positive():
    with make_pool("inline", "toy-counter", {}, num_slots=2) as pool, pytest.raises(ValueError, match="waves"):
        run_rollouts(pool, ScriptAgent(), plan_episodes(TASKS[:2]), waves=0)
