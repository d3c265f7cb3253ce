"""A two-node Ray cluster on one machine (#21 part 3): ``ray start --head`` plus a second
``ray start --address``, two raylets on the loopback addresses 127.0.0.2 and 127.0.0.3 (Ray turns
127.0.0.1 into the machine's outward address when nodes join, so the test takes two other
loopback addresses; every connection stays on the loopback interface). ``seed-gym eval --backend
ray --ray-address`` spreads its env actors over both nodes and gives the records of ``--backend
process``.

The cluster runs under a token of its own (``RAY_AUTH_MODE=token``), in a temp dir, on free ports.
The test stops exactly the processes it started, by their process groups (``ray stop`` would stop
every Ray process of the machine, other people's included).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from seed_gym.records import RunDir

pytestmark = pytest.mark.integration

RAY = str(Path(sys.executable).with_name("ray"))
HEAD_IP, WORKER_IP = "127.0.0.2", "127.0.0.3"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_started(process: subprocess.Popen, log: Path, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while "Ray runtime started" not in log.read_text(errors="replace"):
        assert process.poll() is None, f"ray start exited {process.returncode}:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"ray start did not finish in {timeout:.0f} s:\n{log.read_text()[-3000:]}"
        time.sleep(0.5)


def stop(processes: list[subprocess.Popen]) -> None:
    """SIGTERM to each ``ray start --block`` and everything it started (its process group), then SIGKILL."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        for process in processes:
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                pass
        for process in processes:
            try:
                process.wait(wait)
            except subprocess.TimeoutExpired:
                pass
        time.sleep(1 if sig == signal.SIGTERM else 0)


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[tuple[str, dict[str, str], dict[str, str]]]:
    """(address, environment, node id -> node address) of a running two-raylet cluster."""
    temp = Path(tempfile.mkdtemp(prefix="sg-ray-", dir="/tmp"))  # short: Ray's socket paths have a length cap
    env = {key: value for key, value in os.environ.items()
           if key not in ("RAY_ADDRESS", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")}
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16))
    port = free_port()
    common = ["--num-cpus=1", "--object-store-memory=100000000", "--disable-usage-stats", "--block",
              f"--dashboard-agent-listen-port={free_port()}"]
    commands = {
        "head": [RAY, "start", "--head", f"--node-ip-address={HEAD_IP}", f"--port={port}", "--include-dashboard=false",
                 f"--dashboard-port={free_port()}", f"--ray-client-server-port={free_port()}", f"--temp-dir={temp}", *common],
        "worker": [RAY, "start", f"--address={HEAD_IP}:{port}", f"--node-ip-address={WORKER_IP}", *common[:-1],
                   f"--dashboard-agent-listen-port={free_port()}"],
    }
    processes: list[subprocess.Popen] = []
    try:
        for name, command in commands.items():
            log = temp / f"{name}.log"
            with log.open("w") as sink:
                processes.append(subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                                  start_new_session=True))
            wait_started(processes[-1], log)
        yield f"{HEAD_IP}:{port}", env, dict(map(raylet_node, processes))
    finally:
        stop(processes)
        shutil.rmtree(temp, ignore_errors=True)


def raylet_node(process: subprocess.Popen) -> tuple[str, str]:
    """(node id, node address) of the raylet a ``ray start`` process started (in its process group)."""
    listing = subprocess.run(["pgrep", "-a", "-g", str(process.pid), "raylet"], capture_output=True, text=True).stdout
    flags = dict(arg.split("=", 1) for arg in listing.split() if arg.startswith("--node_") and "=" in arg)
    return flags["--node_id"], flags["--node_ip_address"]


def test_eval_spreads_env_actors_over_two_raylets_with_the_records_of_worker_processes(two_nodes, tmp_path):
    address, env, nodes = two_nodes
    assert sorted(nodes.values()) == [HEAD_IP, WORKER_IP]
    runs = {}
    for backend, extra in (("process", []), ("ray", ["--ray-address", address])):
        out = tmp_path / backend
        result = subprocess.run(
            [sys.executable, "-m", "seed_gym.cli", "eval", "--agent", "random", "--env", "webshop", "--split", "test",
             "-n", "2", "--group", "2", "--max-steps", "4", "--workers", "2", "--seed", "4",
             "--backend", backend, "--out", str(out), *extra],
            env={**env, "COLUMNS": "200"}, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        runs[backend] = RunDir(out / "random")
    pool = json.loads(runs["ray"].summary_path.read_text())["pool_this_session"]
    assert pool["address"] == address and pool["shared_state"]
    assert pool["nodes"] == {node: 1 for node in nodes}  # one env actor on each raylet

    def played(run: RunDir) -> dict[str, list[tuple[str, str, float]]]:
        return {r.episode_id: [(s.observation, s.action, s.reward) for s in r.steps] + [(r.final_observation, r.status, r.score)]
                for r in run.finished().values()}

    assert len(played(runs["process"])) == 4 and played(runs["ray"]) == played(runs["process"])
