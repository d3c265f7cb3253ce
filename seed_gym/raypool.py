"""Env workers as Ray actors (``--backend ray``): the process pool's workers, on one machine or
across a Ray cluster. Needs the ``ray`` extra (``pip install 'seed-gym[ray]'``), imported only here.

* **Session** (:func:`ray_session`): the pool joins the cluster at ``address`` (``host:port``,
  ``auto``, ``ray://...``), or the Ray this process already runs, or starts a local instance; it
  disconnects (and stops what it started) when it closes. A local instance listens on 127.0.0.1
  only (Ray's own default is every interface), with no dashboard and no usage statistics.
* **Placement**: worker ``i`` goes to alive node ``i mod N`` (nodes with CPUs, in node-id order)
  with *soft* node affinity, so Ray places it elsewhere when that node is full; each actor holds
  one CPU. :meth:`RayPool.describe` says where every actor landed.
* **Shared state**: when the env offers one (:meth:`seed_gym.core.TextEnv.shared_state`: a
  catalogue, a corpus, an index), one task per node builds it and leaves it in that node's object
  store; every actor on the node installs it before building its envs, so no worker loads it
  again, and its numpy arrays are read from the store's shared memory instead of being copied.
  An actor that cannot fetch it builds its envs the ordinary way.
* **Failures**: exactly as the process pool (:class:`seed_gym.pools.WorkerPool`): an actor that
  dies or exceeds the call timeout is killed and replaced with fresh envs (Ray itself never
  restarts it), its calls come back as ``CallError`` and its slots as lost, so the rollout engine
  retries those episodes; recycling after N episodes works the same way.

An actor runs its calls one batch at a time, in the order they were sent, which is what the
pool's submit/collect contract needs.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from seed_gym.core import SeedGymError, TextEnv
from seed_gym.pools import (DEFAULT_CALL_TIMEOUT, Call, Worker, WorkerLost, WorkerPool, WorkerStartError,
                            WorkerTimeout, build_envs, execute)
from seed_gym.registry import EnvSpec, spec as env_spec_of

INSTALL_HINT = "pip install 'seed-gym[ray]'"


class RayUnavailableError(SeedGymError, ImportError):
    """The ray backend was asked for and Ray is not installed."""


def import_ray() -> Any:
    try:
        import ray
    except ImportError as error:
        raise RayUnavailableError(f"the ray backend needs Ray ({error}): {INSTALL_HINT}") from None
    return ray


@contextmanager
def _loopback_only() -> Iterator[None]:
    """While a local instance starts: Ray takes the node address 127.0.0.1 and binds to it alone.
    On Linux Ray otherwise resolves 127.0.0.1 to the machine's outward address and listens on
    every interface; its switch for this is the cluster flag it keeps for Windows and macOS, read
    by the starting process (a module constant) and by the daemons it spawns (the environment)."""
    from ray._private import ray_constants

    name, saved_env = ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR, os.environ.get(ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR)
    saved_flag = ray_constants.ENABLE_RAY_CLUSTER
    os.environ[name], ray_constants.ENABLE_RAY_CLUSTER = "0", False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        if saved_env is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = saved_env


@contextmanager
def ray_session(address: str | None = None, *, num_cpus: int | None = None,
                object_store_mb: int | None = None) -> Iterator[Any]:
    """Ray for the duration of the block: the session this process already has, else the cluster
    at ``address``, else a new local instance (``num_cpus`` logical CPUs, default this machine's;
    ``object_store_mb`` of shared memory, default Ray's). Disconnects, and so stops a local
    instance, on exit only if it connected. Yields the ``ray`` module."""
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # seed-gym runs offline
    options: dict[str, Any] = {"log_to_driver": False, "logging_level": "WARNING"}
    if address:
        ray.init(address=address, **options)
    else:
        with _loopback_only():
            ray.init(address="local", num_cpus=num_cpus or os.cpu_count() or 1, include_dashboard=False,
                     object_store_memory=object_store_mb * 2**20 if object_store_mb else None, **options)
    try:
        yield ray
    finally:
        ray.shutdown()


def _extend_path(entries: list[str]) -> None:
    """The driver's import path, as a spawned worker process gets it: envs registered from a
    module the driver imports by path (a test folder, a script's folder) load in actors too."""
    sys.path.extend(entry for entry in entries if entry not in sys.path)


class EnvActor:
    """The remote side of a worker (a Ray actor): builds its envs, then answers batches of
    worker-local calls."""

    def __init__(self) -> None:
        self.envs: list[TextEnv] = []

    def start(self, env_spec_blob: bytes, env_kwargs: dict[str, Any], count: int, import_path: list[str],
              shared: list[Any]) -> tuple[int, str]:
        """Install the node's shared state (``shared`` holds its object ref, or nothing), build
        ``count`` envs; returns this process's id and its node's id."""
        import ray
        from ray import cloudpickle

        _extend_path(import_path)
        env_spec: EnvSpec = cloudpickle.loads(env_spec_blob)
        if shared:
            try:
                state = ray.get(shared[0])
            except ray.exceptions.RayError:
                state = None  # build it here, as without sharing
            if state is not None:
                state.install()
        self.envs = build_envs(env_spec, env_kwargs, count)
        return os.getpid(), ray.get_runtime_context().get_node_id()

    def run(self, calls: list[Call]) -> list[Any]:
        return [execute(self.envs[call.slot], call) for call in calls]

    def close(self) -> None:
        for env in self.envs:
            env.close()


def build_shared_state(env_spec_blob: bytes, env_kwargs: dict[str, Any], import_path: list[str]) -> Any:
    """One env's :meth:`~seed_gym.core.TextEnv.shared_state` (run as a Ray task on the node that
    will hold it)."""
    from ray import cloudpickle

    _extend_path(import_path)
    env_spec: EnvSpec = cloudpickle.loads(env_spec_blob)
    env = build_envs(env_spec, env_kwargs, 1)[0]
    try:
        return env.shared_state()
    finally:
        env.close()


def _cause(error: Exception) -> str:
    """The remote exception behind a Ray error, in one line."""
    cause = getattr(error, "cause", None) or error
    lines = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {lines[-1] if lines else ''}"


class RayWorker(Worker):
    """An :class:`EnvActor` and its node; a batch's receipt is the object ref of its results."""

    def __init__(self, ray: Any, actor_class: Any, node_id: str | None, start_args: tuple[Any, ...],
                 start_timeout: float) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._ray = ray
        placement = NodeAffinitySchedulingStrategy(node_id, soft=True) if node_id else "DEFAULT"
        self.actor = actor_class.options(num_cpus=1, max_restarts=0, scheduling_strategy=placement).remote()
        self._alive = True
        try:
            self._pid, self.node_id = ray.get(self.actor.start.remote(*start_args), timeout=start_timeout)
        except ray.exceptions.GetTimeoutError:
            self.kill()
            raise WorkerStartError(f"env actor did not start within {start_timeout:.0f} s (is a CPU free on "
                                   "the cluster? each env actor holds one)") from None
        except ray.exceptions.RayError as error:
            self.kill()
            raise WorkerStartError(f"env actor failed to build its envs: {_cause(error)}") from None

    def send(self, calls: list[Call]) -> Any:
        if not self._alive:
            raise WorkerLost()
        return self.actor.run.remote(calls)

    def receive(self, receipt: Any, timeout: float) -> list[Any]:
        ray = self._ray
        try:
            return ray.get(receipt, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            raise WorkerTimeout() from None
        except ray.exceptions.RayError:  # the actor died, or its node did
            raise WorkerLost() from None

    def alive(self) -> bool:
        return self._alive  # a death shows when a batch is read back

    @property
    def pid(self) -> int | None:
        return self._pid

    def stop(self) -> None:
        if self._alive:
            try:
                self._ray.get(self.actor.close.remote(), timeout=10)
            except self._ray.exceptions.RayError:
                pass
        self.kill()

    def kill(self) -> None:
        if self._alive:
            self._alive = False
            self._ray.kill(self.actor, no_restart=True)


class RayPool(WorkerPool):
    """``workers`` Ray actors x ``envs_per_worker`` envs each, spread over the cluster's nodes (see
    the module rules). ``share_state=False`` makes every actor load its envs' state itself."""

    backend = "ray"

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], *, workers: int, envs_per_worker: int,
                 call_timeout: float = DEFAULT_CALL_TIMEOUT, start_timeout: float = 300.0,
                 recycle_after: int | None = None, address: str | None = None, share_state: bool = True) -> None:
        super().__init__(workers=workers, envs_per_worker=envs_per_worker, call_timeout=call_timeout,
                         recycle_after=recycle_after)
        self._session = ray_session(address, num_cpus=max(workers, os.cpu_count() or 1))
        self._ray = self._session.__enter__()
        self.address = address
        try:
            self._prepare(env_spec_of(env_id), dict(env_kwargs), envs_per_worker, share_state)
            self._start_timeout = start_timeout
        except BaseException:
            self._session.__exit__(None, None, None)
            raise
        self._start_all()

    def _prepare(self, env_spec: EnvSpec, env_kwargs: dict[str, Any], count: int, share_state: bool) -> None:
        from ray import cloudpickle

        ray = self._ray
        blob = cloudpickle.dumps(env_spec)
        import_path = [entry for entry in sys.path if entry]
        nodes = sorted(node["NodeID"] for node in ray.nodes() if node["Alive"] and node["Resources"].get("CPU", 0) > 0)
        self._node_plan: list[str | None] = [nodes[i % len(nodes)] if nodes else None for i in range(len(self._workers))]
        factory = env_spec.load()
        self._shared: dict[str | None, Any] = {}
        if share_state and isinstance(factory, type) and issubclass(factory, TextEnv) and factory.shares_state():
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            build = ray.remote(num_cpus=0, max_calls=1)(build_shared_state)  # its process exits afterwards
            for node in set(self._node_plan):
                placement = NodeAffinitySchedulingStrategy(node, soft=False) if node else "DEFAULT"
                self._shared[node] = build.options(scheduling_strategy=placement).remote(blob, env_kwargs, import_path)
        self._actor_class = ray.remote(EnvActor)
        self._start_args = (blob, env_kwargs, count, import_path)

    def _start(self, index: int) -> RayWorker:
        node = self._node_plan[index]
        shared = [self._shared[node]] if node in self._shared else []
        return RayWorker(self._ray, self._actor_class, node, (*self._start_args, shared), self._start_timeout)

    def worker_nodes(self) -> list[str | None]:
        """The node id each worker runs on (None where one is not running)."""
        return [w.node_id if isinstance(w, RayWorker) and w.alive() else None for w in self._workers]

    def describe(self) -> dict[str, Any]:
        nodes = Counter(node for node in self.worker_nodes() if node)
        return {**super().describe(), "address": self.address or "local", "nodes": dict(sorted(nodes.items())),
                "shared_state": bool(self._shared)}

    def close(self) -> None:
        try:
            super().close()
            self._shared.clear()
        finally:
            self._session.__exit__(None, None, None)
