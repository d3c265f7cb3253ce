"""Env pools: where the envs of a rollout live and how a batch of calls runs (the ``--backend``
option: ``inline`` or ``process``).

An :class:`EnvPool` owns ``num_slots`` env instances and runs a batch of :class:`Call` s (a reset
or a step on one slot) per tick; results come back in call order.

* :class:`InlinePool` — the envs live in this process and run one after another.
* :class:`ProcessPool` — persistent worker processes, each owning several envs
  (``envs_per_worker``). A tick sends every worker its share of the batch at once, so workers
  step in parallel. Engines that burn CPU in Python want this; it is the default.

Failure handling (the rollout engine relies on it): an exception inside one env comes back as a
:class:`CallError` for that call only. A worker that dies or exceeds ``call_timeout`` seconds is
killed and restarted with fresh envs; every call it had gets a ``CallError`` and every slot it owned
is reported by :meth:`EnvPool.pop_lost_slots`, because those envs' state is gone. The timeout is per
call (a worker with k calls in a tick gets k x ``call_timeout``), so a hung reset or step costs at
most that long before the rollout engine retries its episode on a fresh engine.

Recycling (``recycle_after=N``): engines that leak (AgentBench reports one that does) are
replaced as a safety valve. A worker that has started N episodes is shut down and replaced the next
time it is asked to reset while none of its envs is mid-episode, so recycling never loses an
episode; with several envs per worker that is at the latest when a rollout drains.
"""

from __future__ import annotations

import multiprocessing as mp
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from seed_gym.core import TextEnv
from seed_gym.registry import EnvSpec, spec as env_spec_of


#: Seconds one reset or step may take in a worker before the worker is killed and replaced.
#: The slowest honest call here is a first game load on a busy machine (seconds) or a search
#: step behind a dense retriever on CPU; two minutes leaves a wide margin and still ends a hang.
DEFAULT_CALL_TIMEOUT = 120.0


@dataclass(frozen=True)
class Call:
    """``reset`` (with ``task_id`` and ``seed``) or ``step`` (with ``action``) on one slot."""

    kind: str
    slot: int
    task_id: str | None = None
    seed: int | None = None
    action: Any = None


@dataclass(frozen=True)
class CallError:
    """A call that failed; ``message`` is what the record keeps."""

    message: str


def _execute(env: TextEnv, call: Call) -> Any:
    try:
        if call.kind == "reset":
            return env.reset(seed=call.seed, options={"task_id": call.task_id})
        if call.kind == "step":
            return env.step(call.action)
        return CallError(f"unknown call kind {call.kind!r}")
    except Exception as error:  # one env's failure must not take the batch down
        detail = traceback.format_exception_only(type(error), error)[-1].strip()
        return CallError(detail)


def _build_envs(env_spec: EnvSpec, env_kwargs: dict[str, Any], count: int) -> list[TextEnv]:
    factory = env_spec.load()
    return [factory(**{**env_spec.default_kwargs, **env_kwargs}) for _ in range(count)]


class EnvPool:
    num_slots: int

    def run(self, calls: Sequence[Call]) -> list[Any]:
        raise NotImplementedError

    def pop_lost_slots(self) -> set[int]:
        return set()

    def close(self) -> None:
        pass

    def __enter__(self) -> "EnvPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InlinePool(EnvPool):
    def __init__(self, env_id: str, env_kwargs: dict[str, Any], num_slots: int) -> None:
        self.num_slots = num_slots
        self._envs = _build_envs(env_spec_of(env_id), env_kwargs, num_slots)

    def run(self, calls: Sequence[Call]) -> list[Any]:
        return [_execute(self._envs[call.slot], call) for call in calls]

    def close(self) -> None:
        for env in self._envs:
            env.close()


def _worker_main(conn: Connection, env_spec: EnvSpec, env_kwargs: dict[str, Any], count: int) -> None:
    """A worker: build ``count`` envs, then answer batches of (local-slot) calls until told to stop.

    It gets the resolved :class:`EnvSpec`, not an env id, so envs registered at run time in the
    parent (not through an entry point) work in workers too.
    """
    try:
        envs = _build_envs(env_spec, env_kwargs, count)
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
        conn.send([_execute(envs[call.slot], call) for call in calls])
    for env in envs:
        env.close()


class WorkerStartError(RuntimeError):
    pass


class _Worker:
    def __init__(self, ctx: Any, env_spec: EnvSpec, env_kwargs: dict[str, Any], count: int,
                 start_timeout: float) -> None:
        self.episodes = 0  # resets sent: what recycling counts
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker_main, args=(child, env_spec, env_kwargs, count),
                                   daemon=True)
        self.process.start()
        child.close()
        if not self.conn.poll(start_timeout):
            self.kill()
            raise WorkerStartError(f"env worker did not start within {start_timeout:.0f} s")
        status, detail = self.conn.recv()
        if status != "ready":
            self.kill()
            raise WorkerStartError(f"env worker failed to build {env_spec.env_id!r}: {detail}")

    def stop(self) -> None:
        """Ask the worker to close its envs and exit; kill it if it does not."""
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


class ProcessPool(EnvPool):
    """``workers`` persistent processes x ``envs_per_worker`` envs each."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], *, workers: int,
                 envs_per_worker: int, call_timeout: float = DEFAULT_CALL_TIMEOUT,
                 start_timeout: float = 300.0, recycle_after: int | None = None) -> None:
        if workers < 1 or envs_per_worker < 1:
            raise ValueError("workers and envs_per_worker must be >= 1")
        if call_timeout <= 0:
            raise ValueError(f"call_timeout must be > 0 seconds, got {call_timeout}")
        if recycle_after is not None and recycle_after < 1:
            raise ValueError(f"recycle_after must be >= 1 episode (or None), got {recycle_after}")
        self.recycle_after = recycle_after
        self.recycled = 0  # workers replaced by recycling (not by failures)
        self._busy: set[int] = set()  # global slots mid-episode
        self.num_slots = workers * envs_per_worker
        self._spec = (env_spec_of(env_id), dict(env_kwargs), envs_per_worker)
        self._per_worker = envs_per_worker
        self._call_timeout = call_timeout
        self._start_timeout = start_timeout
        # spawn, not fork: the parent may run threads (progress bars, HTTP clients).
        self._ctx = mp.get_context("spawn")
        self._workers: list[_Worker | None] = [None] * workers
        self._lost: set[int] = set()
        try:
            for index in range(workers):
                self._workers[index] = self._start()
        except Exception:
            self.close()
            raise

    def _start(self) -> _Worker:
        env_spec, env_kwargs, count = self._spec
        return _Worker(self._ctx, env_spec, env_kwargs, count, self._start_timeout)

    def run(self, calls: Sequence[Call]) -> list[Any]:
        by_worker: dict[int, list[tuple[int, Call]]] = {}
        for position, call in enumerate(calls):
            worker, local = divmod(call.slot, self._per_worker)
            by_worker.setdefault(worker, []).append((position, Call(
                call.kind, local, call.task_id, call.seed, call.action)))
        results: list[Any] = [None] * len(calls)
        sent: list[int] = []
        for index, items in by_worker.items():
            resets = sum(call.kind == "reset" for _, call in items)
            if resets:
                self._recycle_if_due(index)
            try:
                worker = self._live(index)
                worker.episodes += resets
                worker.conn.send([call for _, call in items])
                sent.append(index)
            except (OSError, EOFError, BrokenPipeError):
                self._fail(index, items, results, "env worker died")
        for index in sent:
            items = by_worker[index]
            # The worker that got these calls, even if it has died since: a dead worker's pipe
            # reads as EOF below. (Asking _live() here would swap in a fresh worker that never
            # received the calls, and wait on it until the call timeout.)
            worker = self._workers[index]
            assert worker is not None
            timeout = self._call_timeout * len(items)
            try:
                if not worker.conn.poll(timeout):
                    self._fail(index, items, results, f"env worker exceeded {timeout:.0f} s; killed")
                    continue
                for (position, _), result in zip(items, worker.conn.recv()):
                    results[position] = result
            except (OSError, EOFError, BrokenPipeError):
                self._fail(index, items, results, "env worker died")
        for call, result in zip(calls, results):
            self._track(call, result)
        return results

    def _track(self, call: Call, result: Any) -> None:
        """Which slots are mid-episode: from a good reset until a step ends it or a call fails."""
        ended = isinstance(result, CallError) or (call.kind == "step" and bool(result[2] or result[3]))
        if ended:
            self._busy.discard(call.slot)
        elif call.kind == "reset":
            self._busy.add(call.slot)

    def _recycle_if_due(self, index: int) -> None:
        worker = self._workers[index]
        if worker is None or self.recycle_after is None or worker.episodes < self.recycle_after:
            return
        base = index * self._per_worker
        if self._busy.intersection(range(base, base + self._per_worker)):
            return  # an episode is in flight on this worker; try again at its next reset
        worker.stop()
        self._workers[index] = self._start()
        self.recycled += 1

    def worker_pids(self) -> list[int | None]:
        """The process id of each worker (None where one is not running): for memory reports."""
        return [w.process.pid if w is not None and w.process.is_alive() else None for w in self._workers]

    def _live(self, index: int) -> _Worker:
        worker = self._workers[index]
        if worker is None or not worker.process.is_alive():
            if worker is not None:
                worker.kill()
                self._mark_lost(index)
            worker = self._workers[index] = self._start()
        return worker

    def _mark_lost(self, index: int) -> None:
        base = index * self._per_worker
        self._lost.update(range(base, base + self._per_worker))
        self._busy.difference_update(range(base, base + self._per_worker))

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

    def close(self) -> None:
        for worker in self._workers:
            if worker is not None:
                worker.stop()
        self._workers = [None] * len(self._workers)


def make_pool(backend: str, env_id: str, env_kwargs: dict[str, Any], *, num_slots: int,
              workers: int = 1, call_timeout: float = DEFAULT_CALL_TIMEOUT,
              recycle_after: int | None = None) -> EnvPool:
    """``inline`` or ``process``; the process backend splits ``num_slots`` across ``workers``.
    ``call_timeout`` and ``recycle_after`` apply to the process backend (an inline env cannot
    be killed without killing the run)."""
    if backend == "inline":
        return InlinePool(env_id, env_kwargs, num_slots)
    if backend == "process":
        workers = max(1, min(workers, num_slots))
        per_worker = -(-num_slots // workers)
        return ProcessPool(env_id, env_kwargs, workers=workers, envs_per_worker=per_worker,
                           call_timeout=call_timeout, recycle_after=recycle_after)
    if backend == "ray":
        raise NotImplementedError("the ray backend arrives with the multi-machine issue; "
                                  "use --backend process")
    raise ValueError(f"unknown backend {backend!r}; use inline or process")
