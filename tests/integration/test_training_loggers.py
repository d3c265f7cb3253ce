"""``loggers=["tensorboard", "wandb"]``: a short real training run (the tiny model on WebShop) writes
TensorBoard event files whose scalars read back as metrics.jsonl has them, and an offline W&B run."""

from __future__ import annotations

import json
import struct
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def wandb_history(run_file: Path) -> list[dict[str, float]]:
    """The logged rows of an offline ``.wandb`` file: W&B's record log (a 7-byte header, then
    32 KiB blocks of records with 7-byte headers: crc32, length, type) of protobuf ``Record``s."""
    from wandb.proto import wandb_internal_pb2

    data, block, pos, pending, rows = run_file.read_bytes(), 32768, 7, b"", []
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        room = block - pos % block
        if room < 7:
            pos += room
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        if (kind == 0 and length == 0) or pos + 7 + length > len(data):
            break  # the end, or a record still being written
        pending += data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # a full record, or the last piece of one
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            pending = b""
            if record.WhichOneof("record_type") == "history":
                rows.append({item.key or "/".join(item.nested_key): json.loads(item.value_json)
                             for item in record.history.item})
    return rows


def test_training_logs_every_metrics_row_to_tensorboard_and_offline_wandb(tiny_model_dir, tmp_path, monkeypatch):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from seed_gym.training.config import TrainConfig
    from seed_gym.training.trainer import train

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "run"
    train(TrainConfig(algo="grpo", env="webshop", model=str(tiny_model_dir), out=str(out), updates=1,
                      tasks_per_update=2, group=2, max_new_tokens=12, max_steps=2, env_backend="inline", workers=1,
                      micro_batch=8, eval_every=1, eval_splits=["test"], eval_n=2, eval_max_steps=2,
                      loggers=["tensorboard", "wandb"]))
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    updates = [row for row in rows if "split" not in row]
    [evaluation] = [row for row in rows if "split" in row]

    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    numeric = {key for row in updates for key, value in row.items()
               if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "update"}
    assert {f"train/{key}" for key in numeric} <= tags
    loss = events.Scalars("train/loss")
    assert [(e.step, pytest.approx(e.value, rel=1e-5)) for e in loss] == [(r["update"], r["loss"]) for r in updates]
    [success] = events.Scalars("eval/test/success_rate")
    assert (success.step, success.value) == (1, pytest.approx(evaluation["success_rate"]))

    [run_file] = (out / "wandb").glob("offline-run-*/run-*.wandb")
    assert run_file.stem == "run-" + (out / "wandb-run-id").read_text().strip()
    deadline = time.monotonic() + 60  # W&B's service process writes the file after finish() returns
    while len(history := wandb_history(run_file)) < 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert [row["update"] for row in history] == [1, 1]  # the update row, then the evaluation row
    logged_losses = [row["train/loss"] for row in history if "train/loss" in row]
    assert logged_losses == pytest.approx([row["loss"] for row in updates])
    assert any(row.get("eval/test/success_rate") == pytest.approx(evaluation["success_rate"]) for row in history)
