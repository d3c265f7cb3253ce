"""A plugin env gets the whole of seed-gym without a line of seed-gym naming it.

The plugin author's guide (``docs/adding-an-env.md``) shows a separate distribution
(``seed-gym-lamps``, also in ``docs/examples/``) with its own env, profile, prompt template, rule
analyzer and sample texts, found through the ``seed_gym.envs`` entry-point group. The package is
written here *from the guide's code blocks* and installed as a real package (pip, into a folder of
its own), then listed by ``doctor``, played with ``play``, evaluated from the CLI with scripted and
model agents, trained with one GRPO and one SEED update (SEED's analyzer being the plugin's rule),
and checked by ``seed_gym.check_text_env``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_guide import REPO, write_example

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package the guide shows, installed by pip into its own folder."""
    root = tmp_path_factory.mktemp("plugin")
    source, site = write_example(root / "src"), root / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(site), str(source)], check=True)
    assert (site / "seed_gym_lamps" / "prompts" / "lamps.toml").exists()
    return site


@pytest.fixture
def lamps_registered(plugin_site: Path, monkeypatch: pytest.MonkeyPatch):
    """The plugin visible to this process, as it would be once pip-installed; the registry is
    restored afterwards."""
    from seed_gym import registry

    monkeypatch.syspath_prepend(str(plugin_site))
    monkeypatch.setattr(registry, "_SPECS", dict(registry._SPECS))
    registry.load_entry_points(force=True)
    assert "lamps" in registry._SPECS
    yield
    registry.load_entry_points(force=True)


def seed_gym_cli(site: Path, *args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
           "COLUMNS": "300"}
    result = subprocess.run([sys.executable, "-m", "seed_gym.cli", *args], cwd=cwd, env=env, input=stdin,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


def first_episode(folder: Path) -> dict:
    return json.loads((folder / "episodes.jsonl").read_text().splitlines()[0])


def test_no_seed_gym_code_names_the_plugin():
    tracked = subprocess.run(["git", "grep", "-l", "-e", "seed_gym_lamps", "-e", "seed-gym-lamps", "-e", "lamps-react",
                              "--", ".", ":!tests", ":!docs", ":!README.md"], cwd=REPO, capture_output=True, text=True)
    assert tracked.stdout == ""


def test_doctor_lists_the_plugin_env_and_where_it_comes_from(plugin_site, tmp_path):
    out = seed_gym_cli(plugin_site, "doctor", cwd=tmp_path).stdout
    [line] = [line for line in out.splitlines() if "env lamps" in line]
    assert "plugin seed-gym-lamps 0.1.0" in line and "seed_gym_lamps:register_envs" in line


def test_a_person_plays_the_plugin_env_at_the_terminal(plugin_site, tmp_path):
    moves = "look\nswitch on lamp 1\n2\nswitch on lamp 3\nswitch on lamp 4\n"  # 2: the second choice listed
    out = seed_gym_cli(plugin_site, "play", "lamps", "--split", "test", "--index", "0", cwd=tmp_path,
                       stdin=moves).stdout
    assert "You are in a dark room with 4 lamps" in out and "Lamps on: none." in out
    assert "won after 5 steps, score 1.00" in out


def test_seed_gym_eval_runs_scripted_agents_on_the_plugin_env(plugin_site, tmp_path):
    listed = seed_gym_cli(plugin_site, "list", cwd=tmp_path).stdout
    assert "lamps" in listed
    seed_gym_cli(plugin_site, "eval", "--env", "lamps", "--split", "test", "-a", "random", "-a", "expert",
                 "-n", "4", "--workers", "1", "--out", str(tmp_path / "runs"), cwd=tmp_path)
    expert = summary(tmp_path / "runs" / "expert")
    assert expert["episodes"] == 4 and expert["success_rate"] == 1.0
    manifest = json.loads((tmp_path / "runs" / "expert" / "manifest.json").read_text())
    assert manifest["identity"]["env"] == "lamps"
    assert "seed-gym-lamps" in manifest["provenance"]["packages"]  # the profile's packages
    assert summary(tmp_path / "runs" / "random")["episodes"] == 4


def test_a_model_agent_reads_the_plugins_own_prompt_template(plugin_site, tiny_model_dir, tmp_path):
    result = seed_gym_cli(plugin_site, "eval", "--env", "lamps", "--split", "unseen", "--backend", "inline",
                          "-a", f"hf:{tiny_model_dir}@max_new_tokens=16", "--out", str(tmp_path / "runs"), cwd=tmp_path)
    assert "steps/s" in result.stderr and "tok/s" in result.stderr  # a model agent's progress shows its tokens
    [folder] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    assert summary(folder)["episodes"] == 2
    step = first_episode(folder)["steps"][0]
    assert step["prompt"].startswith("LAMPS. Your task is to:")
    assert step["meta"]["template"] == "lamps-react-v1"


def test_one_grpo_and_one_seed_update_train_on_the_plugin_env(lamps_registered, tiny_model_dir, tmp_path):
    from seed_gym.records import EpisodeRecord
    from seed_gym.training.batch import samples_from_records
    from seed_gym.training.config import TrainConfig
    from seed_gym.training.trainer import train
    from seed_gym_lamps import rule

    small = {"env": "lamps", "model": str(tiny_model_dir), "updates": 1, "group": 2, "max_new_tokens": 12,
             "eval_every": 0, "env_backend": "inline", "workers": 1, "micro_batch": 8}
    grpo = TrainConfig(algo="grpo", out=str(tmp_path / "grpo"), **small)
    assert (grpo.rl_tasks(), grpo.rl_max_steps()) == (2, 6)  # from the plugin's profile
    train(grpo)
    [row] = [json.loads(line) for line in (tmp_path / "grpo" / "metrics.jsonl").read_text().splitlines()]
    assert row["episodes"] == 4 and row["samples"] >= 4 and row["loss"] == row["loss"]
    rollouts = tmp_path / "grpo" / "rollouts" / "update-000001" / "episodes.jsonl"
    records = [EpisodeRecord.from_dict(json.loads(line)) for line in rollouts.read_text().splitlines()]
    assert all(len(r.steps) <= 6 for r in records)
    from transformers import AutoTokenizer

    samples = samples_from_records(records, AutoTokenizer.from_pretrained(tiny_model_dir), "lamps")
    won = {record.episode_id: record.won for record in records}
    assert len(samples) == sum(len(r.steps) for r in records)
    for sample in samples:  # the profile's reward_scale 5.0 x won, minus 0.2 per format-invalid step
        assert sample.reward == pytest.approx(5.0 * won[sample.episode_id] - (0.0 if sample.valid_format else 0.2))

    rule.SEEN_TRUTHS.clear()
    train(TrainConfig(algo="seed", analyzer="rule", out=str(tmp_path / "seed"), **small))
    [row] = [json.loads(line) for line in (tmp_path / "seed" / "metrics.jsonl").read_text().splitlines()]
    assert row["episodes"] == 4 and row["skill_parse_rate"] == 1.0 and row["teacher_coverage"] == 1.0
    assert len(rule.SEEN_TRUTHS) >= 4 and all(set(t) == {"order"} for t in rule.SEEN_TRUTHS)


def test_the_plugin_env_passes_the_contract_checker_and_feeds_the_tiny_models_corpus(lamps_registered):
    from seed_gym import check_text_env, make
    from seed_gym.agents.corpus import CorpusConfig, build_corpus, corpus_sources

    assert "seed_gym_lamps.rule:sample_texts" in corpus_sources()
    assert "Lamp 3 is on." in build_corpus(CorpusConfig(seed=0))

    env = make("lamps")
    try:
        check_text_env(env)
    finally:
        env.close()
