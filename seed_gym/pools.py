"""Env pools: where the envs of a rollout live and how batches of calls run (the ``--backend``
option: ``inline``, ``process`` or ``ray``).

An :class:`EnvPool` owns ``num_slots`` env instances and runs batches of :class:`Call` s (a reset
or a step on one slot). A batch is *submitted* (:meth:`EnvPool.submit`, which returns at once with
a :class:`Ticket`) and later *collected* (:meth:`EnvPool.collect`, which waits for its results,
in call order); :meth:`EnvPool.run` is the two in one. While one batch is in flight the caller may
do other work (generate for other episodes) and submit more batches.

Rules of the interface (the rollout engine relies on them):

* A slot has at most one call in flight: never submit a call for a slot whose previous call has
  not been collected.
* Tickets may be collected in any order; a pool reads replies in submission order and keeps the
  earlier tickets' results until they are collected.
* An exception inside one env comes back as a :class:`CallError` for that call only.
* A worker that dies or exceeds ``call_timeout`` seconds is killed and replaced with fresh envs;
  every call it had in flight, in every ticket, comes back as a ``CallError``, and every slot it
  owned is reported once by :meth:`EnvPool.pop_lost_slots`, because those envs' state is gone.
  The timeout is per call (a worker with k calls in a batch gets k x ``call_timeout``, counted
  from when that batch is collected), so a hung reset or step costs at most that long before the
  rollout engine retries its episode on a fresh engine.

Backends:

* :class:`InlinePool` — the envs live in this process and run one after another, at submit time.
* :class:`ProcessPool` — persistent worker processes, each owning several envs
  (``envs_per_worker``). A batch sends every worker its share at once, so workers step in
  parallel. Engines that burn CPU in Python want this; it is the default.
* :class:`seed_gym.raypool.RayPool` — the same workers as Ray actors, on one machine or across a
  cluster (extra ``ray``).

Recycling (``recycle_after=N``, worker backends): engines that leak (AgentBench reports one that
does) are replaced as a safety valve. A worker that has started N episodes is shut down and
replaced the next time it is asked to reset while none of its envs is mid-episode and none of
its batches is in flight, so recycling never loses an episode; with several envs per worker that
is at the latest when a rollout drains.
"""

from __future__ import annotations

import multiprocessing as mp
import traceback
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any, NamedTuple

from seed_gym.core import SeedGymError, TextEnv
from seed_gym.registry import EnvSpec, spec as env_spec_of
from seed_gym.spawning import main_free_spawn_context


#: Seconds one reset or step may take in a worker before the worker is killed and replaced.
#: The slowest honest call here is a first game load on a busy machine (seconds) or a search
#: step behind a dense retriever on CPU; two minutes leaves a wide margin and still ends a hang.
DEFAULT_CALL_TIMEOUT = 120.0

BACKENDS = ("inline", "process", "ray")


class Call(NamedTuple):
    """``reset`` (with ``task_id`` and ``seed``) or ``step`` (with ``action``) on one slot. (A named
    tuple: the engine makes one per step, and it crosses to workers.)"""

    kind: str
    slot: int
    task_id: str | None = None
    seed: int | None = None
    action: Any = None


@dataclass(frozen=True)
class CallError:
    """A call that failed; ``message`` is what the record keeps."""

    message: str


def execute(env: TextEnv, call: Call) -> Any:
    """One call on one env; an exception becomes a :class:`CallError`."""
    try:
        if call.kind == "reset":
            return env.reset(seed=call.seed, options={"task_id": call.task_id})
        if call.kind == "step":
            return env.step(call.action)
        return CallError(f"unknown call kind {call.kind!r}")
    except Exception as error:  # one env's failure must not take the batch down
        detail = traceback.format_exception_only(type(error), error)[-1].strip()
        return CallError(detail)


def build_envs(env_spec: EnvSpec, env_kwargs: dict[str, Any], count: int) -> list[TextEnv]:
    factory = env_spec.load()
    return [factory(**{**env_spec.default_kwargs, **env_kwargs}) for _ in range(count)]


@dataclass(eq=False)
class Ticket:
    """A submitted batch. ``results`` fill in as its replies are read; ``collected`` when all are."""

    calls: list[Call]
    results: list[Any]
    collected: bool = False
    #: (worker index, worker, receipt, [(position in the batch, worker-local call)]) per worker sent to.
    parts: list[tuple[int, Any, Any, list[tuple[int, Call]]]] = field(default_factory=list)


class EnvPool:
    """``num_slots`` envs behind non-blocking batches of calls (see the module rules)."""

    num_slots: int
    backend: str = ""

    def submit(self, calls: Sequence[Call]) -> Ticket:
        raise NotImplementedError

    def collect(self, ticket: Ticket) -> list[Any]:
        raise NotImplementedError

    def run(self, calls: Sequence[Call]) -> list[Any]:
        """Submit ``calls`` and wait for their results."""
        return self.collect(self.submit(calls))

    @property
    def in_flight(self) -> int:
        """Tickets submitted and not yet read back."""
        return 0

    def pop_lost_slots(self) -> set[int]:
        return set()

    def describe(self) -> dict[str, Any]:
        """Where the envs run: what a run's summary records about its pool."""
        return {"backend": self.backend, "slots": self.num_slots}

    def close(self) -> None:
        pass

    def __enter__(self) -> "EnvPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InlinePool(EnvPool):
    backend = "inline"

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], num_slots: int) -> None:
        self.num_slots = num_slots
        self._envs = build_envs(env_spec_of(env_id), env_kwargs, num_slots)

    @property
    def envs(self) -> tuple[TextEnv, ...]:
        """The envs, in slot order. The pool resets a slot's env before each episode, so between
        rollouts a caller may play them itself (``bench pools`` times a bare loop on them)."""
        return tuple(self._envs)

    def submit(self, calls: Sequence[Call]) -> Ticket:
        return Ticket(list(calls), [execute(self._envs[call.slot], call) for call in calls], collected=True)

    def collect(self, ticket: Ticket) -> list[Any]:
        return ticket.results

    def close(self) -> None:
        for env in self._envs:
            env.close()


class WorkerStartError(SeedGymError, RuntimeError):
    """An env worker could not be started (or placed, on a cluster)."""


class WorkerLost(Exception):
    """The worker is gone (died, or its channel broke)."""


class WorkerTimeout(Exception):
    """The worker did not answer in time."""


class Worker:
    """One worker owning ``envs_per_worker`` envs, as :class:`WorkerPool` drives it. Batches sent to
    it are answered in the order sent."""

    episodes = 0   # resets sent: what recycling counts
    in_flight = 0  # batches sent and not yet read back

    def send(self, calls: list[Call]) -> Any:
        """Start a batch of worker-local calls; returns a receipt for :meth:`receive`. Raises WorkerLost."""
        raise NotImplementedError

    def receive(self, receipt: Any, timeout: float) -> list[Any]:
        """The batch's results. Raises WorkerLost or WorkerTimeout."""
        raise NotImplementedError

    def alive(self) -> bool:
        raise NotImplementedError

    @property
    def pid(self) -> int | None:
        return None

    def stop(self) -> None:
        """Ask the worker to close its envs and exit; kill it if it does not."""
        self.kill()

    def kill(self) -> None:
        raise NotImplementedError


class WorkerPool(EnvPool):
    """``workers`` x ``envs_per_worker`` envs: slot ``s`` is env ``s % envs_per_worker`` of worker
    ``s // envs_per_worker``. Subclasses say how a worker starts (:meth:`_start`); failures,
    timeouts, lost slots and recycling are handled here, the same for every transport."""

    def __init__(self, *, workers: int, envs_per_worker: int, call_timeout: float = DEFAULT_CALL_TIMEOUT,
                 recycle_after: int | None = None) -> None:
        if workers < 1 or envs_per_worker < 1:
            raise ValueError("workers and envs_per_worker must be >= 1")
        if call_timeout <= 0:
            raise ValueError(f"call_timeout must be > 0 seconds, got {call_timeout}")
        if recycle_after is not None and recycle_after < 1:
            raise ValueError(f"recycle_after must be >= 1 episode (or None), got {recycle_after}")
        self.recycle_after = recycle_after
        self.recycled = 0  # workers replaced by recycling (not by failures)
        self.num_slots = workers * envs_per_worker
        self._per_worker = envs_per_worker
        self._call_timeout = call_timeout
        self._workers: list[Worker | None] = [None] * workers
        self._busy: set[int] = set()  # global slots mid-episode
        self._lost: set[int] = set()
        self._pending: deque[Ticket] = deque()

    def _start(self, index: int) -> Worker:
        raise NotImplementedError

    def _start_all(self) -> None:
        try:
            for index in range(len(self._workers)):
                self._workers[index] = self._start(index)
        except BaseException:
            self.close()
            raise

    # -- batches ------------------------------------------------------------------------------
    def submit(self, calls: Sequence[Call]) -> Ticket:
        ticket = Ticket(list(calls), [None] * len(calls))
        by_worker: dict[int, list[tuple[int, Call]]] = {}
        for position, call in enumerate(calls):
            index, local = divmod(call.slot, self._per_worker)
            by_worker.setdefault(index, []).append((position, call._replace(slot=local)))
        for index, items in by_worker.items():
            resets = sum(call.kind == "reset" for _, call in items)
            if resets:
                self._recycle_if_due(index)
            try:
                worker = self._live(index)
                receipt = worker.send([call for _, call in items])
            except WorkerLost:
                self._fail(index, items, ticket.results, "env worker died")
                continue
            worker.episodes += resets
            worker.in_flight += 1
            ticket.parts.append((index, worker, receipt, items))
        self._pending.append(ticket)
        return ticket

    def collect(self, ticket: Ticket) -> list[Any]:
        while not ticket.collected:
            self._read(self._pending.popleft())
        return ticket.results

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def _read(self, ticket: Ticket) -> None:
        for index, worker, receipt, items in ticket.parts:
            if worker is not self._workers[index]:
                # replaced since this batch was sent: its envs (and these calls) are gone, and its
                # slots were reported lost when it was replaced
                for position, _ in items:
                    ticket.results[position] = CallError("env worker died")
                continue
            timeout = self._call_timeout * len(items)
            try:
                results = worker.receive(receipt, timeout)
            except WorkerTimeout:
                self._fail(index, items, ticket.results, f"env worker exceeded {timeout:.0f} s; killed")
                continue
            except WorkerLost:
                self._fail(index, items, ticket.results, "env worker died")
                continue
            worker.in_flight -= 1
            for (position, _), result in zip(items, results):
                ticket.results[position] = result
        for call, result in zip(ticket.calls, ticket.results):
            self._track(call, result)
        ticket.collected = True

    def _track(self, call: Call, result: Any) -> None:
        """Which slots are mid-episode: from a good reset until a step ends it or a call fails."""
        ended = isinstance(result, CallError) or (call.kind == "step" and bool(result[2] or result[3]))
        if ended:
            self._busy.discard(call.slot)
        elif call.kind == "reset":
            self._busy.add(call.slot)

    # -- workers ------------------------------------------------------------------------------
    def _slots_of(self, index: int) -> range:
        return range(index * self._per_worker, (index + 1) * self._per_worker)

    def _recycle_if_due(self, index: int) -> None:
        worker = self._workers[index]
        if worker is None or self.recycle_after is None or worker.episodes < self.recycle_after:
            return
        if worker.in_flight or self._busy.intersection(self._slots_of(index)):
            return  # an episode (or a batch) is in flight on this worker; try again at its next reset
        worker.stop()
        self._workers[index] = self._start(index)
        self.recycled += 1

    def _live(self, index: int) -> Worker:
        worker = self._workers[index]
        if worker is None or not worker.alive():
            if worker is not None:
                worker.kill()
                self._mark_lost(index)
            worker = self._workers[index] = self._start(index)
        return worker

    def _mark_lost(self, index: int) -> None:
        self._lost.update(self._slots_of(index))
        self._busy.difference_update(self._slots_of(index))

    def _fail(self, index: int, items: list[tuple[int, Call]], results: list[Any], why: str) -> None:
        worker = self._workers[index]
        if worker is not None:
            worker.kill()
        self._workers[index] = None  # restarted lazily by the next call
        self._mark_lost(index)
        for position, _ in items:
            results[position] = CallError(why)

    def pop_lost_slots(self) -> set[int]:
        lost, self._lost = self._lost, set()
        return lost

    def worker_pids(self) -> list[int | None]:
        """The process id of each worker (None where one is not running): for memory reports."""
        return [w.pid if w is not None and w.alive() else None for w in self._workers]

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "workers": len(self._workers), "envs_per_worker": self._per_worker}

    def close(self) -> None:
        for worker in self._workers:
            if worker is not None:
                worker.stop()
        self._workers = [None] * len(self._workers)
        self._pending.clear()


# -- worker processes ---------------------------------------------------------------------------
def _worker_main(conn: Connection, env_spec: EnvSpec, env_kwargs: dict[str, Any], count: int) -> None:
    """A worker: build ``count`` envs, then answer batches of (local-slot) calls until told to stop.

    It gets the resolved :class:`EnvSpec`, not an env id, so envs registered at run time in the
    parent (not through an entry point) work in workers too.
    """
    try:
        envs = build_envs(env_spec, env_kwargs, count)
        conn.send(("ready", None))
    except Exception as error:
        conn.send(("failed", f"{type(error).__name__}: {error}"))
        return
    while True:
        try:
            calls = conn.recv()
        except (EOFError, KeyboardInterrupt):
            break
        if calls is None:
            break
        conn.send([execute(envs[call.slot], call) for call in calls])
    for env in envs:
        env.close()


class ProcessWorker(Worker):
    """A spawned process and its pipe; batches queue in the pipe and are answered in order."""

    def __init__(self, ctx: Any, env_spec: EnvSpec, env_kwargs: dict[str, Any], count: int,
                 start_timeout: float) -> None:
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, env_spec, env_kwargs, count),
                                   daemon=True)
        self.process.start()
        child.close()
        if not self.conn.poll(start_timeout):
            self.kill()
            raise WorkerStartError(f"env worker did not start within {start_timeout:.0f} s")
        try:
            status, detail = self.conn.recv()
        except EOFError:  # it died before reporting (an unguarded script it re-ran, a crash on import)
            self.kill()
            raise WorkerStartError(f"env worker exited during start-up (exit code {self.process.exitcode})") from None
        if status != "ready":
            self.kill()
            raise WorkerStartError(f"env worker failed to build {env_spec.env_id!r}: {detail}")

    def send(self, calls: list[Call]) -> None:
        try:
            self.conn.send(calls)
        except (OSError, EOFError, BrokenPipeError):
            raise WorkerLost() from None

    def receive(self, receipt: Any, timeout: float) -> list[Any]:
        try:
            if not self.conn.poll(timeout):
                raise WorkerTimeout()
            return self.conn.recv()
        except (OSError, EOFError, BrokenPipeError):
            raise WorkerLost() from None

    def alive(self) -> bool:
        return self.process.is_alive()

    @property
    def pid(self) -> int | None:
        return self.process.pid

    def stop(self) -> None:
        try:
            self.conn.send(None)
            self.process.join(timeout=10)
        except (OSError, BrokenPipeError):
            pass
        self.kill()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


class ProcessPool(WorkerPool):
    """``workers`` persistent processes x ``envs_per_worker`` envs each."""

    backend = "process"

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], *, workers: int,
                 envs_per_worker: int, call_timeout: float = DEFAULT_CALL_TIMEOUT,
                 start_timeout: float = 300.0, recycle_after: int | None = None) -> None:
        super().__init__(workers=workers, envs_per_worker=envs_per_worker, call_timeout=call_timeout,
                         recycle_after=recycle_after)
        self._spec = (env_spec_of(env_id), dict(env_kwargs), envs_per_worker)
        self._start_timeout = start_timeout
        # spawn, not fork: the parent may run threads (progress bars, HTTP clients).
        self._ctx = spawn_context_for(self._spec[0])
        self._start_all()

    def _start(self, index: int) -> ProcessWorker:
        env_spec, env_kwargs, count = self._spec
        return ProcessWorker(self._ctx, env_spec, env_kwargs, count, self._start_timeout)


def spawn_context_for(env_spec: EnvSpec) -> Any:
    """Workers re-import the user's script (standard spawn) only when the env is defined in it; any
    other env's workers start without it, so an unguarded script that evaluates or trains does not
    re-run itself in every worker (seed_gym.spawning)."""
    entry = env_spec.entry_point
    from_main = (getattr(entry, "__module__", None) == "__main__" if callable(entry)
                 else str(entry).startswith("__main__:"))
    return mp.get_context("spawn") if from_main else main_free_spawn_context()


def rss_bytes(pid: int | None) -> int | None:
    """Resident set size of ``pid`` from ``/proc`` (Linux), or None where it cannot be read."""
    return _proc_field(pid, "status", "VmRSS:")


def pss_bytes(pid: int | None) -> int | None:
    """Proportional set size of ``pid`` (shared pages divided among the processes sharing them),
    from ``/proc/<pid>/smaps_rollup`` (Linux), or None where it cannot be read."""
    return _proc_field(pid, "smaps_rollup", "Pss:")


def _proc_field(pid: int | None, name: str, key: str) -> int | None:
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/{name}") as lines:
            for line in lines:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def make_pool(backend: str, env_id: str, env_kwargs: dict[str, Any], *, num_slots: int,
              workers: int = 1, call_timeout: float = DEFAULT_CALL_TIMEOUT,
              recycle_after: int | None = None, ray_address: str | None = None) -> EnvPool:
    """``inline``, ``process`` or ``ray``; the worker backends split ``num_slots`` across ``workers``.
    ``call_timeout`` and ``recycle_after`` apply to the worker backends (an inline env cannot be
    killed without killing the run); ``ray_address`` names a Ray cluster to join (None: start a
    local Ray instance, or use the one this process already runs)."""
    if backend == "inline":
        return InlinePool(env_id, env_kwargs, num_slots)
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; use {', '.join(BACKENDS)}")
    workers = max(1, min(workers, num_slots))
    per_worker = -(-num_slots // workers)
    if backend == "process":
        return ProcessPool(env_id, env_kwargs, workers=workers, envs_per_worker=per_worker,
                           call_timeout=call_timeout, recycle_after=recycle_after)
    from seed_gym.raypool import RayPool

    return RayPool(env_id, env_kwargs, workers=workers, envs_per_worker=per_worker, call_timeout=call_timeout,
                   recycle_after=recycle_after, address=ray_address)
