"""Model agents end to end: the tiny offline model plays every env through ``seed-gym eval``, on
the ``hf`` backend in-process and on the ``openai`` backend against a real ``seed-gym serve
policy`` server — and greedy decoding makes both paths take identical actions."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.integration

ENVS = {  # env -> (split, extra eval args): a few short episodes each
    "alfworld": ("unseen", ["--env-arg", 'sizes={"unseen": 2}']),
    "webshop": ("test", []),
    "searchqa": ("test", []),
}
SAMPLING = "max_new_tokens=24,temperature=0"


def cli(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "seed_gym.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"}, **kwargs)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def policy_server(tiny_model_dir):
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "seed_gym.cli", "serve", "policy", "--model", str(tiny_model_dir),
         "--name", "tiny", "--port", str(port), "--dtype", "float32"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(600):  # wait for the model to load and the port to answer
            if server.poll() is not None:
                raise RuntimeError(f"policy server exited: {server.stdout.read()[-2000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def run_eval(agent: str, env: str, out: Path) -> dict:
    split, extra = ENVS[env]
    result = cli("eval", "--agent", agent, "--env", env, "--split", split, "-n", "2", "--max-steps", "3",
                 "--backend", "inline", "--out", str(out), *extra)
    assert result.returncode == 0, result.stderr[-3000:]
    (run,) = [p for p in out.iterdir() if (p / "summary.json").exists()]
    return {"summary": json.loads((run / "summary.json").read_text()),
            "manifest": json.loads((run / "manifest.json").read_text()),
            "episodes": [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]}


@pytest.fixture(scope="module")
def runs(tiny_model_dir, policy_server, tmp_path_factory):
    out = tmp_path_factory.mktemp("model-agent-runs")
    result = {}
    for env in ENVS:
        result[env] = {
            "hf": run_eval(f"hf:{tiny_model_dir}@{SAMPLING},dtype=float32", env, out / env / "hf"),
            "openai": run_eval(f"openai:{policy_server}@{SAMPLING},model=tiny", env, out / env / "openai"),
        }
    return result


@pytest.mark.parametrize("env", sorted(ENVS))
def test_the_tiny_model_completes_an_eval_on_every_env_through_hf(runs, env):
    summary = runs[env]["hf"]["summary"]
    assert summary["complete"] and summary["episodes"] == 2 and summary["errors"] == 0
    assert runs[env]["hf"]["manifest"]["identity"]["agent_config"]["model"]["fingerprint"].startswith("sha256:")


@pytest.mark.parametrize("env", sorted(ENVS))
def test_greedy_actions_are_identical_through_hf_and_the_openai_server(runs, env):
    def trace(run):
        return {e["episode_id"]: [(s["response"], s["action"]) for s in e["steps"]] for e in run["episodes"]}

    hf, openai = trace(runs[env]["hf"]), trace(runs[env]["openai"])
    assert hf.keys() == openai.keys() and sum(len(v) for v in hf.values()) >= 2
    assert hf == openai


@pytest.mark.parametrize("env", sorted(ENVS))
def test_every_step_records_prompt_response_tokens_and_latency(runs, env):
    for path in ("hf", "openai"):
        for episode in runs[env][path]["episodes"]:
            for step in episode["steps"]:
                meta = step["meta"]
                assert step["prompt"] and step["response"] is not None
                assert meta["template"].startswith(env.split("-")[0]) and len(meta["prompt_sha"]) == 16
                assert meta["prompt_tokens"] > 0 and 0 < meta["completion_tokens"] <= 24
                assert meta["latency_s"] is not None and meta["latency_s"] >= 0
                assert isinstance(step["valid_format"], bool) and isinstance(meta["parse_flags"], list)


def test_an_untrained_model_goes_down_the_invalid_action_path_without_crashing(runs):
    steps = [s for e in runs["alfworld"]["hf"]["episodes"] for s in e["steps"]]
    bad = [s for s in steps if not s["valid_format"]]
    assert bad and all(s["invalid_action"] for s in bad if s["action"] == "")


def test_a_missing_model_folder_is_a_clear_error(tmp_path):
    result = cli("eval", "--agent", f"hf:{tmp_path}/nothing", "--env", "webshop", "--split", "test", "-n", "1",
                 "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "not a model folder" in result.stderr


def test_error_messages_keep_their_brackets(tmp_path):
    """Install hints name extras like ``seed-gym[hf]``: the CLI must not read them as rich markup."""
    result = cli("eval", "--agent", "vllm", "--env", "webshop", "--split", "test", "-n", "1", "--out", str(tmp_path))
    assert result.returncode == 2 and "vllm:models/tiny" in result.stderr
    bad = cli("eval", "--agent", "1bad", "--env", "webshop", "--out", str(tmp_path))
    assert "kind[:target][@key=value,...]" in " ".join(bad.stderr.split())
