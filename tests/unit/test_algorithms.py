"""The algorithm table is the one place an algorithm is defined: config, losses, teachers and
the CLI all read it."""

import pytest

pytest.importorskip("torch", reason="the losses need torch (the [train] extra)")

from seed_gym.training.analyzer import RuleAnalyzer
from seed_gym.training.algorithms import ALGORITHMS, SFT, UnknownAlgorithmError, algorithm, names
from seed_gym.training.config import ConfigError, build_config
from seed_gym.training.losses import LossConfig
from seed_gym.training.teachers import TeacherSource

BASE = {"env": "toy", "model": "m", "out": "o"}


def test_every_table_entry_is_a_valid_config_and_loss():
    for name, entry in ALGORITHMS.items():
        assert build_config({**BASE, "algo": name}).algo == name
        loss = LossConfig.for_algo(name)
        for term, value in entry.loss.items():
            assert getattr(loss, term) == value


def test_sft_is_accepted_but_is_no_rl_algorithm():
    assert build_config({**BASE, "algo": SFT}).algo == SFT
    assert SFT not in ALGORITHMS and names(with_sft=True)[0] == SFT


def test_an_alias_resolves_to_its_one_name_everywhere():
    assert algorithm("grpo+opsd") is ALGORITHMS["grpo-opsd"]
    assert build_config({**BASE, "algo": "grpo+opsd"}).algo == "grpo-opsd"
    assert LossConfig.for_algo("grpo+opsd").algo == "grpo-opsd"


def test_an_unknown_algorithm_is_refused_with_the_choices():
    with pytest.raises(UnknownAlgorithmError, match="choose from grpo, opsd"):
        algorithm("ppo")
    with pytest.raises(ConfigError, match="seed, skill-sd"):
        build_config({**BASE, "algo": "ppo"})


@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_the_teacher_source_follows_the_table(name, tmp_path):
    teacher = ALGORITHMS[name].teacher
    # "hindsight" uses the rule analyzer here so that no model is needed
    bank = str(tmp_path / "bank.json") if teacher == "offline-skills" else None  # built offline: a file
    if bank:
        (tmp_path / "bank.json").write_text('{"families": {"clean": "Clean it first."}}')
    source = TeacherSource(name, "alfworld", analyzer="rule", skill_bank=bank)
    assert (source.bank is not None) == (teacher in ("skill-bank", "offline-skills"))
    assert (source.analyzer is not None) == (teacher in ("hindsight", "ground-truth"))
    if teacher == "ground-truth":
        assert isinstance(source.analyzer, RuleAnalyzer)
