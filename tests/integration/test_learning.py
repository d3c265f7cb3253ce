"""RL that learns: GRPO, GRPO+OPSD and SEED raise held-out success on a task the tiny model can learn on
CPU (pure OPSD does not: see its test).

The task is ``toy-pick`` (tests/learning_env.py): one step, "take the <colour> <object>", three
colours to choose from, held-out objects in ``unseen``. The start is behaviour cloning of a weak
demonstrator (right half the time, else a random colour): the policy answers in format but reads
the colour only sometimes. Each algorithm then runs a fixed number of updates from the same start
and seed, and the test asserts that success on ``unseen`` (60 held-out tasks, sampled at T = 1,
evaluated by the trainer, not the training rollouts) rose by at least ``RISE``. Measured on 2 CPU
cores: GRPO 0.233 -> 0.450 and SEED (rule analyzer) 0.233 -> 0.483 after 20 updates. With learning
broken (lr = 0, or advantages zeroed) the same assertion fails: the evaluation stays at its start.

The settings are tiny-scale ones (lr 1e-3, not the paper's 1e-6 for 3B models); they live here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

torch = pytest.importorskip("torch", reason="training needs torch (the [train] extra)")

from learning_env import ENV_ID, register_pick_env  # noqa: E402

#: The stated rise: held-out success after UPDATES must beat the start by at least this much.
RISE = 0.15
UPDATES = 20
COMMON = {"env": ENV_ID, "env_backend": "inline", "workers": 1, "eval_splits": ["unseen"], "eval_n": None,
          "eval_temperature": 1.0, "keep_checkpoints": 1, "seed": 0}
RL = {"updates": UPDATES, "group": 8, "tasks_per_update": 6, "lr": 1e-3, "eval_every": UPDATES, "eval_initial": True}


@pytest.fixture(scope="module")
def weak_start(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model after 8 epochs of cloning 30 weak demonstrations (sft_lr 1e-3)."""
    from seed_gym.training.config import TrainConfig
    from seed_gym.training.trainer import train

    register_pick_env()
    out = tmp_path_factory.mktemp("learning") / "sft"
    train(TrainConfig(algo="sft", model=str(tiny_model_dir), out=str(out), sft_tasks=30, sft_epochs=8, sft_lr=1e-3,
                      sft_batch=4, eval_every=0, **{**COMMON, "env_args": {"demo_accuracy": 0.5}}))
    return out / "checkpoints" / "update-000008"


def held_out_success(run: Path) -> dict[int, float]:
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    return {row["update"]: row["success_rate"] for row in rows if row.get("split") == "unseen"}


def assert_learned(run: Path) -> None:
    success = held_out_success(run)
    start, end = success[0], success[UPDATES]
    assert end >= start + RISE, f"held-out success went {start:.3f} -> {end:.3f}; wanted a rise of {RISE}"


def rl_run(algo: str, start: Path, out: Path, **settings) -> Path:
    from seed_gym.training.config import TrainConfig
    from seed_gym.training.trainer import train

    train(TrainConfig(algo=algo, model=str(start), out=str(out), **{**COMMON, **RL, **settings}))
    return out


def test_grpo_raises_held_out_success(weak_start, tmp_path):
    assert_learned(rl_run("grpo", weak_start, tmp_path / "grpo"))


def test_seed_with_the_rule_analyzer_raises_held_out_success(weak_start, tmp_path):
    run = rl_run("seed", weak_start, tmp_path / "seed", analyzer="rule")
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if '"algo"' in line]
    assert all(row["teacher_coverage"] == 1.0 for row in rows)  # every sample had a skill to distil from
    assert_learned(run)


def test_grpo_with_opsd_raises_held_out_success(weak_start, tmp_path):
    """GRPO+OPSD (the paper's baseline arm): the GRPO term with the ground-truth teacher's distillation
    term (β = 0, so g = 0.5; the rule analyzer with the env's answer key writes the privileged context)."""
    run = rl_run("grpo-opsd", weak_start, tmp_path / "grpo-opsd")
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines() if '"algo"' in line]
    assert all(row["teacher_coverage"] == 1.0 for row in rows)  # every sample had its privileged teacher
    assert_learned(run)


# The papers' own "OPSD only" rows collapse too (seed-method.md 12.3, Qwen2.5-7B: Search 33.9 -> 6.2).
@pytest.mark.xfail(strict=True, reason=(
    "measured: OPSD collapses here (held-out success 0.23 -> 0, format-valid 0.88 -> 0 by update 5). The tiny "
    "model never saw a skill in a prompt, so its skill-prompted teacher rates the sampled tokens lower "
    "(teacher_gap_mean -0.05..-0.17): the gated term is a near-uniform NLL on its own samples, which sharpens "
    "junk. Strict: it fails CI once OPSD learns here."))
def test_opsd_raises_held_out_success(weak_start, tmp_path):
    # pure distillation: no PG term, so λ is raised from the paper's 0.01 to carry the whole update
    assert_learned(rl_run("opsd", weak_start, tmp_path / "opsd", opd_coef=1.0))
