"""Refactors change no behaviour: per built-in env, the same seeds give the same results as the
snapshot in ``tests/golden/behaviour.json``, taken from the code before the #15 refactor.

What the snapshot covers, per env: the split and data fingerprints and the env version; seeded
random-agent and expert episodes; tiny-model episodes (the prompt template, the tokenizer built
from the env corpus, sampling); the RL step samples made from them (reward scale and format
penalty); the rule analyzer's skills with the env's ground truth; the static SkillBank skills;
and the per-env training defaults (step cap, tasks per update, token budgets). Plus the loss
presets of every algorithm and the tiny model's tokenizer hash.

Regenerate only when a change of behaviour is intended (and say so in the change):
``python tests/integration/test_behaviour_snapshot.py > tests/golden/behaviour.json``.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "behaviour.json"
ENVS: dict[str, dict[str, Any]] = {
    # ALFWorld generates a split's games when it is first used: only the played one is fingerprinted
    # (the other splits would cost minutes of game generation).
    "alfworld": {"split": "unseen", "env_kwargs": {"sizes": {"unseen": 6}}, "splits": ["unseen"]},
    "webshop": {"split": "test", "env_kwargs": {}},
    "searchqa": {"split": "test", "env_kwargs": {}},
}
ALGOS = ("grpo", "opsd", "grpo-opsd", "sdar", "seed", "skill-sd")


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def episodes(records: dict[str, Any]) -> list[dict[str, Any]]:
    """What an episode did, without wall time or backend diagnostics."""
    rows = []
    for episode_id in sorted(records):
        record = records[episode_id]
        rows.append({"id": episode_id, "seed": record.seed, "won": record.won, "score": record.score,
                     "status": record.status, "final": record.final_observation,
                     "steps": [{"observation": s.observation, "action": s.action, "reward": s.reward,
                                "invalid": s.invalid_action, "admissible": s.admissible_actions,
                                "response": s.response, "prompt": s.prompt} for s in record.steps]})
    return rows


def played(env_id: str, agent: str, out: Path, n: int, max_steps: int | None = None) -> dict[str, Any]:
    from seed_gym.evaluate import EvalConfig, evaluate
    from seed_gym.records import RunDir

    case = ENVS[env_id]
    evaluate(EvalConfig(env=env_id, split=case["split"], agent=agent, out=out, n=n, seed=3, max_steps=max_steps,
                        backend="inline", workers=1, env_kwargs=case["env_kwargs"]))
    return RunDir(out).finished()


def env_snapshot(env_id: str, model_dir: Path, scratch: Path) -> dict[str, Any]:
    from seed_gym.registry import make
    from seed_gym.training.analyzer import ground_truth_from_env, make_analyzer
    from seed_gym.training.batch import samples_from_records
    from seed_gym.training.config import TrainConfig
    from seed_gym.training.skills import SkillBank
    from seed_gym.training.policy import Policy

    env = make(env_id, **ENVS[env_id]["env_kwargs"])
    tasks = env.task_set()
    snapshot: dict[str, Any] = {
        "env_version": env.version, "data_fingerprint": tasks.data_fingerprint,
        "splits": {name: tasks.split(name).fingerprint for name in ENVS[env_id].get("splits", sorted(tasks.names()))},
    }
    random_runs = played(env_id, "random", scratch / "random", n=3, max_steps=6)
    expert_runs = played(env_id, "expert", scratch / "expert", n=2)
    model_runs = played(env_id, f"hf:{model_dir}@max_new_tokens=16,temperature=1.0,tokens=1", scratch / "model",
                        n=2, max_steps=3)
    snapshot["random"] = digest(episodes(random_runs))
    snapshot["expert"] = digest(episodes(expert_runs))
    snapshot["model"] = digest(episodes(model_runs))
    records = [model_runs[k] for k in sorted(model_runs)]
    policy = Policy.load(str(model_dir))
    samples = samples_from_records(records, policy.tokenizer, env_id)
    snapshot["samples"] = digest([[s.messages, s.response_ids, s.reward, s.valid_format, s.family] for s in samples])
    everything = records + [expert_runs[k] for k in sorted(expert_runs)] + [random_runs[k] for k in sorted(random_runs)]
    analyzer = make_analyzer("rule", env_id=env_id, ground_truth=ground_truth_from_env(env))
    snapshot["rule_skills"] = digest([None if s is None else [s.episode_summary, s.episode_skill]
                                      for s in analyzer.analyze(everything)])
    bank = SkillBank.for_env(env_id)
    snapshot["bank_skills"] = digest([bank.skills_for(r.task) for r in everything])
    config = TrainConfig(algo="grpo", env=env_id, model=str(model_dir), out=str(scratch / "train"))
    snapshot["train_defaults"] = {"rl_max_steps": config.rl_max_steps(), "rl_tasks": config.rl_tasks(),
                                  "new_tokens": config.new_tokens(), "prompt_tokens": config.prompt_tokens()}
    env.close()
    return snapshot


def snapshot(model_dir: Path, scratch: Path) -> dict[str, Any]:
    from seed_gym.training.losses import LossConfig

    result: dict[str, Any] = {
        # The tokenizer, not the corpus fingerprint: collecting the env texts by sorted env id
        # reordered the documents (same texts, same tokenizer).
        "tiny_model": {"tokenizer": hashlib.sha256((model_dir / "tokenizer.json").read_bytes()).hexdigest()[:16]},
        # The preset coefficients; ``algo`` itself is left out: grpo+opsd's canonical name changed.
        "losses": {algo: {k: v for k, v in vars(LossConfig.for_algo(algo)).items() if k != "algo"} for algo in ALGOS},
    }
    for env_id in ENVS:
        result[env_id] = env_snapshot(env_id, model_dir, scratch / env_id)
    return result


@pytest.fixture(scope="module")
def current(tiny_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return snapshot(tiny_model_dir, tmp_path_factory.mktemp("snapshot"))


@pytest.mark.parametrize("part", ["tiny_model", "losses", *ENVS])
def test_same_seeds_give_the_same_results_as_before_the_refactor(current: dict[str, Any], part: str) -> None:
    golden = json.loads(GOLDEN.read_text())
    found = current[part]
    if part == "losses":  # fields added later (GiGPO's step-level term) must leave the old algorithms as they were
        assert not any(found[algo].get("step_adv_coef") for algo in golden[part])
        found = {algo: {k: v for k, v in found[algo].items() if k in golden[part][algo]} for algo in golden[part]}
    assert found == golden[part]


if __name__ == "__main__":  # regenerate: see the module docstring
    from seed_gym.agents.tiny import build_tiny_model

    with tempfile.TemporaryDirectory() as folder:
        model = build_tiny_model(Path(folder) / "model", seed=0, size="tiny")
        json.dump(snapshot(model, Path(folder) / "scratch"), sys.stdout, indent=2, sort_keys=True)
        print()
