"""Sharded training (``--set parallel=fsdp``) with 2 CPU ranks on gloo: one update gives the same
parameters as data parallelism, each rank holds about half the weights, checkpoints are ordinary
``save_pretrained`` folders, and a killed run resumes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SMALL = {"tasks_per_update": 4, "group": 2, "max_new_tokens": 8, "max_steps": 2, "eval_every": 0,
         "env_backend": "inline", "workers": 1, "micro_batch": 8, "lr": 0.001, "keep_checkpoints": 5}
#: The two runs differ only in how gradients are reduced (all-reduce vs reduce-scatter, in another
#: order): the updated weights agree to float32 rounding, far below the update itself.
RELATIVE_TOL = 1e-4


def torchrun(model: Path, out: Path, updates: int, **overrides) -> list[str]:
    args = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "seed_gym.cli", "train",
            "--algo", "sdar", "--env", "searchqa", "--model", str(model), "--updates", str(updates), "--out", str(out)]
    for key, value in {**SMALL, **overrides}.items():
        args += ["--set", f"{key}={json.dumps(value)}"]
    return args


def metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_one_fsdp_update_gives_the_ddp_parameters_in_a_save_pretrained_folder(tiny_model_dir, tmp_path):
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    for mode in ("ddp", "fsdp"):
        result = subprocess.run(torchrun(tiny_model_dir, tmp_path / mode, 1, parallel=mode), capture_output=True,
                                text=True, cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-3000:]
    ddp_row, fsdp_row = metrics(tmp_path / "ddp")[0], metrics(tmp_path / "fsdp")[0]
    assert ddp_row["ranks"] == fsdp_row["ranks"] == 2 and ddp_row["rank_param_spread"] == 0.0
    assert 0.45 < fsdp_row["rank_param_share"] < 0.55  # rank 0 holds half the weights
    assert fsdp_row["loss"] == pytest.approx(ddp_row["loss"], rel=1e-5)

    folder = Path("checkpoints") / "update-000001"
    start = load_file(str(tiny_model_dir / "model.safetensors"))
    ddp = load_file(str(tmp_path / "ddp" / folder / "model.safetensors"))
    fsdp = load_file(str(tmp_path / "fsdp" / folder / "model.safetensors"))
    assert sorted(fsdp) == sorted(ddp)  # the same tensors (tied ones saved once)
    moved = sum(float((ddp[k] - start[k]).double().norm() ** 2) for k in ddp) ** 0.5
    apart = sum(float((ddp[k] - fsdp[k]).double().norm() ** 2) for k in ddp) ** 0.5
    assert moved > 1e-3 and apart <= RELATIVE_TOL * moved, (moved, apart)
    AutoModelForCausalLM.from_pretrained(str(tmp_path / "fsdp" / folder))  # a model folder any agent loads
    assert (tmp_path / "fsdp" / folder / "optimizer.pt").exists()


def test_a_killed_fsdp_run_resumes_from_its_checkpoint(tiny_model_dir, tmp_path, kill_after_first_checkpoint):
    out = tmp_path / "run"
    args = torchrun(tiny_model_dir, out, 3, parallel="fsdp")
    checkpointed = kill_after_first_checkpoint(args, out, cwd=tmp_path)
    assert 1 <= checkpointed < 3

    second = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert [r["update"] for r in metrics(out)] == [1, 2, 3]  # each update logged exactly once
    assert (out / "checkpoints" / "LATEST").read_text() == "update-000003"
    # the resumed optimizer state went back into the shards: the last update still trained
    assert all(0.45 < r["rank_param_share"] < 0.55 and r["loss"] == r["loss"] for r in metrics(out))
