"""The fault suite (#20): real processes killed with SIGKILL at seeded points, torn last lines of
every append-only file, each followed by a resume that must end with every episode (and every
training update) recorded exactly once.

* an env worker of a running ``seed-gym eval`` is killed mid-run (three times): the run goes on;
* the whole run (its process group) is killed at seeded points, the last line of ``episodes.jsonl``
  is torn in a seeded way (cut mid-line, cut inside a character, replaced by JSON that is not an
  object or by an object that is not a record), and the same command resumes it;
* a training run is killed at seeded points, a fragment is left at the end of ``metrics.jsonl``,
  and it resumes; the same run is also killed *inside* checkpoint writes (after the weights,
  half-way through ``optimizer.pt``, before ``LATEST`` moves): no half checkpoint is ever visible,
  and the resume takes the last complete one.

A kill point is progress (the k-th record or metrics row on disk) plus a seeded delay, so each
kill lands at a different place in the run; the suite asserts what must hold wherever it lands.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
SEED = 20
HERE = Path(__file__).parent
CLI = [sys.executable, "-m", "seed_gym.cli"]
TASKS = 36
EVAL = ["eval", "-a", "expert", "--env", "webshop", "--split", "test", "-n", str(TASKS)]
EPOCHS = 6


# -- processes --------------------------------------------------------------------------------------
def start(args: list[str], log: Path) -> subprocess.Popen:
    """A real process in its own session (so a kill takes its workers too), output to ``log``."""
    with log.open("ab") as handle:
        return subprocess.Popen(args, stdout=handle, stderr=handle, start_new_session=True)


def wait_until(done: Callable[[], bool], process: subprocess.Popen, timeout: float = 600) -> bool:
    """Poll until ``done()`` (True) or the process exits (False)."""
    deadline = time.monotonic() + timeout
    while not done():
        if process.poll() is not None:
            return done()
        if time.monotonic() > deadline:
            raise TimeoutError("the run made no progress")
        time.sleep(0.005)
    return True


def kill_run(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def env_workers(pid: int) -> list[int]:
    """The env worker processes of ``pid`` (spawned children; not multiprocessing's resource tracker)."""
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(c) for c in (task / "children").read_text().split()]
    workers = []
    for child in children:
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmdline and b"resource_tracker" not in cmdline:
            workers.append(child)
    return workers


# -- what must hold ---------------------------------------------------------------------------------
def assert_each_episode_exactly_once(run: Path) -> list[dict]:
    """Every line of ``episodes.jsonl`` is a whole record and the planned episodes appear once each."""
    manifest = json.loads((run / "manifest.json").read_text())
    planned = sorted(f"{tid}#0" for tid in manifest["task_ids"])
    records = [json.loads(line) for line in (run / "episodes.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(r["episode_id"] for r in records) == planned
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] and summary["episodes"] == len(planned)
    return records


def tear_last_line(path: Path, rng: random.Random) -> str:
    """Leave ``path``'s last line as a kill mid-write (or a careless hand) would; returns how."""
    raw = path.read_bytes()
    body = raw[:-1] if raw.endswith(b"\n") else raw
    start = body.rfind(b"\n") + 1
    last = body[start:]
    record_id = json.loads(last)["episode_id"] if last.startswith(b"{") and last.endswith(b"}") else "x#0"
    how = rng.choice(["cut mid-line", "cut inside a character", "valid JSON, not an object",
                      "an object that is not a record"])
    torn = {"cut mid-line": last[:rng.randrange(1, len(last))],
            "cut inside a character": last[:rng.randrange(1, len(last))] + "é".encode()[:1],
            "valid JSON, not an object": json.dumps([record_id]).encode(),
            "an object that is not a record": json.dumps({"episode_id": record_id}).encode()}[how]
    path.write_bytes(raw[:start] + torn)
    return how


# -- eval runs --------------------------------------------------------------------------------------
def test_killing_env_workers_mid_run_loses_and_repeats_no_episode(tmp_path):
    rng = random.Random(SEED)
    out = tmp_path / "run"
    episodes = out / "expert" / "episodes.jsonl"
    process = start([*CLI, *EVAL, "--workers", "2", "--live-episodes", "4", "--out", str(out)], tmp_path / "log")
    kills = 0
    for third in range(3):  # one kill in each third of the run, at a seeded record
        at = rng.randrange(2 + third * (TASKS - 8) // 3, 2 + (third + 1) * (TASKS - 8) // 3)
        if not wait_until(lambda: lines(episodes) >= at, process):
            break
        time.sleep(rng.uniform(0, 0.05))
        workers: list[int] = []
        if not wait_until(lambda: bool(workers.extend(env_workers(process.pid)) or workers), process, timeout=60):
            break
        os.kill(rng.choice(sorted(workers)), signal.SIGKILL)
        kills += 1
    assert process.wait(timeout=600) == 0, (tmp_path / "log").read_text()[-3000:]
    assert kills == 3  # every kill landed mid-run
    records = assert_each_episode_exactly_once(out / "expert")
    # an episode whose worker died is replayed on a fresh one (or, hit twice, recorded as an error)
    assert all(r["status"] != "error" or r["error"] == "env worker restarted" for r in records)


def test_killing_the_whole_run_and_tearing_its_last_record_then_resuming(tmp_path):
    rng = random.Random(SEED + 1)
    out = tmp_path / "run"
    episodes = out / "expert" / "episodes.jsonl"
    args = [*CLI, *EVAL, "--workers", "1", "--live-episodes", "2", "--out", str(out)]
    tears = []
    for third in range(3):
        at = rng.randrange(1 + third * (TASKS - 4) // 3, 1 + (third + 1) * (TASKS - 4) // 3)
        process = start(args, tmp_path / "log")
        if not wait_until(lambda: lines(episodes) >= at, process):
            pytest.fail(f"the run finished before record {at}: {(tmp_path / 'log').read_text()[-2000:]}")
        time.sleep(rng.uniform(0, 0.05))
        kill_run(process)
        tears.append(tear_last_line(episodes, rng))
    final = subprocess.run(args, capture_output=True, text=True)
    assert final.returncode == 0, final.stderr[-3000:]
    assert_each_episode_exactly_once(out / "expert")
    torn = (out / "expert" / "episodes.jsonl.torn").read_bytes().splitlines()
    assert len(torn) >= 1 and len(tears) == 3  # the fragments were set aside, not kept or lost


# -- training runs ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def demos(tmp_path_factory) -> Path:
    """Expert episodes SFT learns from, collected once (so each training process only trains)."""
    from seed_gym.evaluate import EvalConfig, evaluate

    out = tmp_path_factory.mktemp("demos") / "expert"
    evaluate(EvalConfig(env="webshop", split="train", agent="expert", out=out, n=4, backend="inline"))
    return out


def train_args(model: Path, demos: Path, out: Path) -> list[str]:
    settings = {"sft_tasks": 0, "sft_runs": [str(demos)], "sft_epochs": EPOCHS, "sft_batch": 8, "eval_every": 0,
                "max_prompt_tokens": 128, "history": 0, "keep_checkpoints": 2}
    return ["train", "--algo", "sft", "--env", "webshop", "--model", str(model), "--out", str(out),
            *[arg for key, value in settings.items() for arg in ("--set", f"{key}={json.dumps(value)}")]]


def assert_no_half_checkpoint(out: Path) -> None:
    """Every checkpoint folder an agent could load is whole."""
    import torch

    for folder in (out / "checkpoints").glob("update-*"):
        assert json.loads((folder / "trainer_state.json").read_text())["update"] == int(folder.name[7:])
        assert (folder / "model.safetensors").is_file() and (folder / "config.json").is_file()
        torch.load(folder / "optimizer.pt", weights_only=True)


def assert_each_update_exactly_once(out: Path) -> None:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [r["update"] for r in rows] == list(range(1, EPOCHS + 1))
    assert (out / "checkpoints" / "LATEST").read_text() == f"update-{EPOCHS:06d}"
    assert_no_half_checkpoint(out)


def test_a_training_run_killed_at_seeded_points_and_inside_checkpoint_writes_resumes_each_update_once(
        tiny_model_dir, demos, tmp_path):
    """One run, killed five times (three times inside a checkpoint write, twice at seeded points,
    each seeded kill followed by a fragment left at the end of ``metrics.jsonl``), then resumed
    to the end. After every kill no half checkpoint is visible and the resume point is the last
    complete checkpoint; at the end each update is logged exactly once."""
    from seed_gym.training.runs import TrainRun

    rng = random.Random(SEED + 2)
    out = tmp_path / "run"
    args = train_args(tiny_model_dir, demos, out)
    metrics = out / "metrics.jsonl"
    for kill in ["after-weights", "seeded", "mid-optimizer", "seeded", "before-commit"]:
        committed = TrainRun(out).latest()
        if kill == "seeded":
            rows = lines(metrics)
            process = start([*CLI, *args], tmp_path / "log")
            if not wait_until(lambda: lines(metrics) > rows, process):
                pytest.fail(f"the run ended before its next update: {(tmp_path / 'log').read_text()[-2000:]}")
            # into the epoch's commit or the next epoch; short, so a run whose epochs take a tenth of
            # a second is still killed with epochs left for the kills that follow
            time.sleep(rng.uniform(0, 0.05))
            kill_run(process)
            last = metrics.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
            with metrics.open("ab") as handle:  # a fragment, as a kill mid-append leaves
                handle.write(last[:rng.randrange(1, len(last))] + "é".encode()[:1])
        else:  # killed inside its first checkpoint write
            killed = subprocess.run([sys.executable, str(HERE / "kill_inside.py"), kill, "1", *args],
                                    capture_output=True, text=True)
            assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
            assert TrainRun(out).latest() == committed, kill  # the resume point did not move
        assert_no_half_checkpoint(out)  # before the fix, a kill inside a write left update-N half made
    final = subprocess.run([*CLI, *args], capture_output=True, text=True)
    assert final.returncode == 0, final.stderr[-3000:]
    assert_each_update_exactly_once(out)
