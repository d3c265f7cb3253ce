"""The env pool contract: non-blocking batches (submit, collect in any order), recycling that
never cuts a batch in flight, and the ray backend's clear error where Ray is missing."""

import sys

import pytest
from toy_envs import CounterEnv

from seed_gym.core import SeedGymError
from seed_gym.pools import Call, CallError, make_pool
from seed_gym.registry import register

register("toy-counter", "toy_envs:CounterEnv")


@pytest.fixture(params=["inline", "process"])
def backend(request):
    return request.param


def test_run_is_submit_then_collect(backend):
    with make_pool(backend, "toy-counter", {}, num_slots=2, workers=2) as pool:
        ticket = pool.submit([Call("reset", 0, task_id="count-2", seed=4), Call("reset", 1, task_id="count-1", seed=4)])
        assert [obs for obs, _ in pool.collect(ticket)] == ["count to 2 (seed 4)", "count to 1 (seed 4)"]
        assert pool.run([Call("step", 1, action="up")])[0][:3] == ("value 1", 1.0, True)
        assert pool.in_flight == 0


def test_tickets_may_be_collected_in_any_order(backend):
    with make_pool(backend, "toy-counter", {}, num_slots=4, workers=2) as pool:
        first = pool.submit([Call("reset", 0, task_id="count-3", seed=0), Call("reset", 2, task_id="count-2", seed=0)])
        second = pool.submit([Call("reset", 1, task_id="count-1", seed=1), Call("reset", 3, task_id="nope", seed=1)])
        later = pool.collect(second)
        earlier = pool.collect(first)
    assert later[0][0] == "count to 1 (seed 1)" and isinstance(later[1], CallError) and "nope" in later[1].message
    assert [obs for obs, _ in earlier] == ["count to 3 (seed 0)", "count to 2 (seed 0)"]


def test_a_worker_with_a_batch_in_flight_is_not_recycled():
    with make_pool("process", "toy-counter", {}, num_slots=2, workers=1, recycle_after=1) as pool:
        pid = pool.worker_pids()[0]
        first = pool.submit([Call("reset", 0, task_id="count-1", seed=0)])  # its 1 episode: due for recycling
        second = pool.submit([Call("reset", 1, task_id="count-2", seed=0)])  # but `first` is still in flight
        assert pool.collect(first)[0][0] == "count to 1 (seed 0)"
        assert pool.collect(second)[0][0] == "count to 2 (seed 0)"
        assert pool.recycled == 0 and pool.worker_pids()[0] == pid
        assert pool.run([Call("step", 0, action="up")])[0][2] is True  # slot 0's env kept its episode


def test_a_dead_worker_fails_every_batch_it_had_in_flight_and_reports_its_slots_once():
    with make_pool("process", "toy-counter", {}, num_slots=2, workers=1, call_timeout=30) as pool:
        pool.run([Call("reset", 0, task_id="count-3", seed=0), Call("reset", 1, task_id="count-3", seed=0)])
        crashed = pool.submit([Call("step", 0, action="crash")])
        queued = pool.submit([Call("step", 1, action="up")])
        assert pool.collect(queued) == [CallError("env worker died")]
        assert pool.collect(crashed) == [CallError("env worker died")]
        assert pool.pop_lost_slots() == {0, 1} and pool.pop_lost_slots() == set()
        assert pool.run([Call("reset", 1, task_id="count-1", seed=0)])[0][0] == "count to 1 (seed 0)"  # replaced


def test_the_ray_backend_without_ray_names_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if Ray were not installed
    with pytest.raises(SeedGymError, match=r"pip install 'seed-gym\[ray\]'"):
        make_pool("ray", "toy-counter", {}, num_slots=2, workers=1)


def test_an_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="inline, process, ray"):
        make_pool("threads", "toy-counter", {}, num_slots=1)


def test_envs_offer_no_shared_state_unless_they_say_so():
    assert not CounterEnv.shares_state() and CounterEnv().shared_state() is None
