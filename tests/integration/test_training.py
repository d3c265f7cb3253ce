"""Training on the shared harness: every RL algorithm runs updates end to end on real envs with
the tiny model, SFT learns, and a killed run resumes from its checkpoint without losing or
redoing work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

SMALL = {"updates": 2, "tasks_per_update": 2, "group": 2, "max_new_tokens": 12, "max_steps": 2,
         "eval_every": 0, "env_backend": "inline", "workers": 1, "micro_batch": 8}
ALF_SIZES = {"train": 3, "seen": 2, "unseen": 2}


def run_training(tiny_model_dir: Path, out: Path, algo: str, env: str, **overrides) -> list[dict]:
    from seed_gym.training.config import TrainConfig
    from seed_gym.training.trainer import train

    env_args = {"sizes": ALF_SIZES} if env == "alfworld" else {}
    config = TrainConfig(algo=algo, env=env, model=str(tiny_model_dir), out=str(out),
                         env_args=env_args, **{**SMALL, **overrides})
    train(config)
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("env", ["webshop", "searchqa", "alfworld"])
@pytest.mark.parametrize("algo", ["grpo", "opsd", "sdar", "seed"])
def test_every_algorithm_runs_updates_end_to_end_on_every_env(tiny_model_dir, tmp_path, algo, env):
    # SEED's own analyzer is the untrained tiny model here: short analyses keep the test quick,
    # and its (unparseable) skills simply give no distillation signal.
    rows = run_training(tiny_model_dir, tmp_path / "run", algo, env, analyzer_max_new_tokens=16)
    updates = [r for r in rows if "split" not in r]
    assert [r["update"] for r in updates] == [1, 2]
    for row in updates:
        assert row["episodes"] == 4 and row["samples"] >= 4 and row["response_tokens"] > 0
        assert row["loss"] == row["loss"]  # not NaN
        if algo in ("opsd", "sdar"):
            # ground-truth and skill-bank teachers cover every sample; the gate statistics are logged
            assert row["teacher_coverage"] == 1.0
            assert 0.0 < row["gate_mean"] < 1.0 and 0.0 <= row["gate_active_ratio"] <= 1.0
            assert "teacher_gap_mean" in row and "opd_loss" in row
        if algo == "seed":
            assert "skill_parse_rate" in row
    checkpoint = tmp_path / "run" / "checkpoints" / (tmp_path / "run" / "checkpoints" / "LATEST").read_text()
    assert (checkpoint / "config.json").exists() and (checkpoint / "model.safetensors").exists()


def test_ranked_rollouts_act_only_admissibly_and_train_on_the_chosen_candidates_tokens(tiny_model_dir, tmp_path):
    """rollout_choose=rank: every rollout step is an admissible action, recorded with the tokens the
    policy is trained on (the candidate's encoding + EOS) and their log-probs under the policy."""
    from transformers import AutoTokenizer

    from seed_gym.agents.parsing import response_for
    from seed_gym.records import RunDir

    out = tmp_path / "run"
    rows = run_training(tiny_model_dir, out, "grpo", "webshop", updates=1, rollout_choose="rank", temperature=1.0)
    assert rows[0]["invalid_action_rate"] == 0.0 and rows[0]["format_valid_rate"] == 1.0
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    steps = [s for r in RunDir(out / "rollouts" / "update-000001").finished().values() for s in r.steps]
    assert steps
    for step in steps:
        assert step.action in step.admissible_actions and step.meta["choice"] == "rank"
        encoded = tokenizer(response_for(step.action), add_special_tokens=False)["input_ids"]
        assert list(step.token_ids) == encoded + [tokenizer.eos_token_id]


def test_seed_with_parsed_hindsight_skills_logs_the_gate_statistics(tiny_model_dir, tmp_path):
    rows = run_training(tiny_model_dir, tmp_path / "run", "seed", "webshop", analyzer="rule", updates=1)
    row = rows[0]
    assert row["skill_parse_rate"] == 1.0 and row["teacher_coverage"] == 1.0
    assert 0.0 < row["gate_mean"] < 1.0 and row["opd_loss"] != 0.0
    # the skill each episode's teacher saw, kept beside the rollout for `seed-gym view`
    rollout = tmp_path / "run" / "rollouts" / "update-000001"
    context = [json.loads(line) for line in (rollout / "teacher.jsonl").read_text().splitlines()]
    episodes = [json.loads(line)["episode_id"] for line in (rollout / "episodes.jsonl").read_text().splitlines()]
    assert sorted(c["episode_id"] for c in context) == sorted(episodes)
    assert {c["teacher"] for c in context} == {"hindsight"} and all(c["skill"] for c in context)


def test_updates_change_the_weights_and_checkpoints_load_as_agents(tiny_model_dir, tmp_path):
    from safetensors.torch import load_file

    # GRPO alone has no gradient while every episode fails alike (zero advantages); SDAR's
    # distillation term always has one.
    rows = run_training(tiny_model_dir, tmp_path / "run", "sdar", "webshop", updates=1, lr=1e-3,
                        eval_every=1, eval_n=1)
    before = load_file(str(tiny_model_dir / "model.safetensors"))
    after = load_file(str(tmp_path / "run" / "checkpoints" / "update-000001" / "model.safetensors"))
    assert any(not (before[k] == after[k]).all() for k in before if k in after)
    evals = [r for r in rows if "split" in r]
    assert {r["split"] for r in evals} == {"test", "unseen"} and all(r["episodes"] == 1 for r in evals)


@pytest.mark.parametrize("options", [{}, {"sft_prompt_weight": 0.5, "autocast": "auto"}], ids=["plain", "prompt-loss-autocast"])
def test_sft_on_expert_trajectories_lowers_the_loss(tiny_model_dir, tmp_path, options):
    import torch

    from seed_gym.training.sft import resolve_autocast

    rows = run_training(tiny_model_dir, tmp_path / "run", "sft", "webshop", sft_tasks=6, sft_epochs=3,
                        sft_lr=3e-3, sft_batch=8, max_steps=None, **options)
    epochs = [r for r in rows if "split" not in r]
    assert [r["update"] for r in epochs] == [1, 2, 3]
    assert epochs[0]["examples"] > 6 and epochs[-1]["loss"] < epochs[0]["loss"]
    # auto: bf16 where this CPU runs it natively, else float32 (emulated bf16 is many times slower)
    assert epochs[0]["autocast"] == resolve_autocast(options.get("autocast"), torch.device("cpu"))


def test_sft_learns_from_existing_run_folders_without_collecting(tiny_model_dir, tmp_path):
    from seed_gym.evaluate import EvalConfig, evaluate
    from seed_gym.records import RunDir
    from seed_gym.training.config import ConfigError

    demos = tmp_path / "demos"
    evaluate(EvalConfig(env="webshop", split="train", agent="expert", out=demos, n=3, backend="inline"))
    won_steps = sum(len(r.steps) for r in RunDir(demos).finished().values() if r.won)
    rows = run_training(tiny_model_dir, tmp_path / "run", "sft", "webshop", sft_tasks=0, sft_runs=[str(demos)],
                        sft_epochs=1, sft_lr=3e-3, sft_batch=8, max_steps=None)
    assert rows[0]["episodes"] == 3 and rows[0]["examples"] == won_steps > 0
    assert not (tmp_path / "run" / "data").exists()  # nothing was collected
    with pytest.raises(ConfigError, match="webshop"):  # another env's episodes are refused
        run_training(tiny_model_dir, tmp_path / "alf", "sft", "alfworld", sft_tasks=0, sft_runs=[str(demos)])
    with pytest.raises(ConfigError, match="not a run folder"):
        run_training(tiny_model_dir, tmp_path / "none", "sft", "webshop", sft_tasks=0, sft_runs=[str(tmp_path)])


def test_prompt_loss_keeps_the_target_loss_and_adds_the_weighted_mean_prompt_nll(tiny_model_dir):
    from seed_gym.agents.backends.scoring import continuation_logprobs
    from seed_gym.training.policy import Policy
    from seed_gym.training.sft import Example, nll_loss

    policy = Policy.load(tiny_model_dir)
    batch = [Example([11, 12, 13, 14, 15], [16, 17]), Example([18, 19], [20, 21, 22])]
    plain, plain_tokens = nll_loss(policy, batch)
    weighted, weighted_tokens = nll_loss(policy, batch, prompt_weight=0.5)
    prompts = [e.prompt_ids for e in batch]
    rows = continuation_logprobs(policy.model, [p[:1] for p in prompts], [p[1:] for p in prompts],
                                 pad_id=policy.tokenizer.pad_token_id)
    prompt_nll = -sum(sum(r) for r in rows) / sum(len(r) for r in rows)
    assert plain_tokens == weighted_tokens == 5  # only target tokens are counted
    assert weighted.item() == pytest.approx(plain.item() + 0.5 * prompt_nll, abs=1e-4)


def test_a_bad_config_is_a_clear_error(tiny_model_dir, tmp_path):
    from seed_gym.training.config import ConfigError, build_config

    with pytest.raises(ConfigError, match="group"):
        build_config({"algo": "grpo", "env": "webshop", "model": "m", "out": "o"}, overrides=["group=0"])
    with pytest.raises(ConfigError, match="algo"):
        build_config({"algo": "ppo", "env": "webshop", "model": "m", "out": "o"})
    with pytest.raises(ConfigError, match="extra|not permitted|lrr"):
        build_config({"algo": "grpo", "env": "webshop", "model": "m", "out": "o"}, overrides=["lrr=1"])


def test_a_killed_training_run_resumes_from_its_checkpoint(tiny_model_dir, tmp_path, kill_after_first_checkpoint):
    out = tmp_path / "run"
    args = [sys.executable, "-m", "seed_gym.cli", "train", "--algo", "grpo", "--env", "searchqa",
            "--model", str(tiny_model_dir), "--updates", "4", "--out", str(out)]
    for key, value in SMALL.items():
        if key != "updates":
            args += ["--set", f"{key}={json.dumps(value)}"]
    checkpointed = kill_after_first_checkpoint(args, out)
    assert 1 <= checkpointed < 4
    kept = {u: (out / "rollouts" / f"update-{u:06d}" / "episodes.jsonl").read_text()
            for u in range(1, checkpointed + 1)}

    second = subprocess.run(args, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [1, 2, 3, 4]  # each update logged exactly once
    for update, text in kept.items():  # finished rollouts were reused, not replayed
        assert (out / "rollouts" / f"update-{update:06d}" / "episodes.jsonl").read_text() == text
    assert (out / "checkpoints" / "LATEST").read_text() == "update-000004"
    again = subprocess.run(args, capture_output=True, text=True)  # a finished run does nothing more
    assert again.returncode == 0
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 4


def test_two_torchrun_ranks_train_one_model_in_sync(tiny_model_dir, tmp_path):
    """Data parallelism on CPU (gloo): each rank rolls out half the tasks, gradients are summed,
    and the replicas end every update with identical weights."""
    out = tmp_path / "run"
    args = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "seed_gym.cli", "train",
            "--algo", "sdar", "--env", "searchqa", "--model", str(tiny_model_dir), "--updates", "2",
            "--out", str(out), "--set", "tasks_per_update=4", "--set", "lr=0.001"]
    for key, value in SMALL.items():
        if key not in ("updates", "tasks_per_update"):
            args += ["--set", f"{key}={json.dumps(value)}"]
    result = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == [1, 2]
    for row in rows:
        assert row["ranks"] == 2 and row["episodes"] == 8  # 4 tasks x group 2, over both ranks
        assert row["rank_param_spread"] == 0.0 and row["gate_mean"] > 0
    assert sorted(p.name for p in (out / "rollouts" / "update-000001").iterdir()) == ["rank-0", "rank-1"]


def test_hindsight_skill_sft_learns_to_write_the_analyzers_skills(tiny_model_dir, tmp_path):
    """SEED stage 1: base-policy episodes, labelled by the rule analyzer, NLL on the skill JSON."""
    rows = run_training(tiny_model_dir, tmp_path / "run", "sft", "searchqa", sft_data="skills", analyzer="rule",
                        sft_tasks=3, sft_epochs=2, sft_lr=3e-3, sft_batch=4, max_steps=2)
    epochs = [r for r in rows if "split" not in r]
    assert [r["update"] for r in epochs] == [1, 2] and epochs[0]["sft_data"] == "skills"
    assert epochs[0]["examples"] == 6  # 3 tasks x group 2, every episode labelled
    assert epochs[-1]["loss"] < epochs[0]["loss"]


def test_prompts_rebuilt_from_records_are_the_prompts_the_model_saw(tiny_model_dir, tmp_path):
    """Behaviour cloning replays records through the template; it must reproduce the agent's prompts."""
    from seed_gym.agents.prompts import PromptBuilder, template_for_env
    from seed_gym.evaluate import EvalConfig, evaluate
    from seed_gym.records import RunDir
    from seed_gym.training.batch import rebuilt_prompts, step_messages

    for env in ("webshop", "searchqa"):
        out = tmp_path / env
        evaluate(EvalConfig(env=env, split="test", agent=f"hf:{tiny_model_dir}@max_new_tokens=12,history=2",
                            out=out, n=2, max_steps=4, backend="inline", workers=1))
        builder = PromptBuilder(template_for_env(env), history_length=2)
        for record in RunDir(out).finished().values():
            assert len(record.steps) >= 2
            # whole messages: Search-QA's later prompts continue an assistant turn (its segments too)
            assert rebuilt_prompts(record, builder) == [step_messages(step) for step in record.steps]


def test_train_shows_a_first_data_build_in_its_output(tiny_model_dir, tmp_path):
    """The first ALFWorld run on a machine generates its games before the first update (minutes at
    the default sizes): the command says so as it starts and ends, in a log file too."""
    args = [sys.executable, "-m", "seed_gym.cli", "train", "--algo", "grpo", "--env", "alfworld",
            "--model", str(tiny_model_dir), "--updates", "1", "--out", str(tmp_path / "run"),
            "--env-arg", 'sizes={"train": 4, "seen": 1, "unseen": 1}']
    for key, value in SMALL.items():
        if key != "updates":
            args += ["--set", f"{key}={json.dumps(value)}"]
    home = tmp_path / "home"  # nothing generated yet
    result = subprocess.run(args, capture_output=True, text=True, env={**os.environ, "SEED_GYM_HOME": str(home)})
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert "generating ALFWorld train games: 0/4 ..." in lines
    assert "generating ALFWorld train games: 4/4 done" in lines
    assert lines.index("generating ALFWorld train games: 4/4 done") < next(
        i for i, line in enumerate(lines) if line.startswith("update 1"))
