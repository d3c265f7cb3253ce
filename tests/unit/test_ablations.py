"""SEED's ablations (the paper's Table 2) as settings of `seed-gym train`, and the teacher context each gives:

* w/o self-evolution: ``analyzer = "frozen"`` — the policy analyzer on the starting weights' backend,
  never on the live policy's;
* static offline skills: ``algo = "seed-static"`` — a library built once by an analyzer
  (:func:`offline_skill_bank`), looked up per task family, inserted where SEED inserts its skill;
* w/o hindsight-skill SFT: a recipe choice (RL from the plain SFT checkpoint), checked in the
  reproduce preset's tests.
"""

import pytest

pytest.importorskip("torch", reason="the trainer needs torch (the [train] extra)")

from seed_gym.agents.backends.base import Generation
from seed_gym.records import EpisodeRecord, StepRecord
from seed_gym.training.analyzer import ModelAnalyzer, RuleAnalyzer
from seed_gym.training.batch import StepSample
from seed_gym.training.config import build_config
from seed_gym.training.skills import EPISODE_SKILL_HEADER, PRIVILEGED_HEADER, SkillBank, offline_skill_bank
from seed_gym.training.teachers import TeacherSource

PROMPT = "You are in a room.\nYour task is to: put a clean mug in the sink.\nNow: you see a mug."


def record(episode, family, won=True, instruction="put a clean mug in the sink"):
    step = StepRecord(t=0, observation="you see a mug", action="take mug 1", reward=float(won), invalid_action=False,
                      prompt=PROMPT, response="<think></think><action>take mug 1</action>")
    return EpisodeRecord(episode_id=episode, task={"id": episode.split("#")[0], "family": family,
                                                   "instruction": instruction},
                         agent="hf:x", group_index=0, seed=0, steps=[step], final_observation="", won=won,
                         score=float(won), total_reward=float(won), status="completed", wall_seconds=0.0)


def sample(episode):
    return StepSample(messages=[{"role": "user", "content": PROMPT}], response_ids=[1], episode_id=episode,
                      group_id=episode.split("#")[0], reward=1.0)


class Skill:
    def __init__(self, text):
        self.episode_skill = text


def test_the_frozen_analyzer_writes_with_the_starting_weights_not_the_live_policy():
    live, start = object(), object()  # two generation backends: the policy's and θ_sft's
    source = TeacherSource("seed", "alfworld", policy_backend=live, analyzer="frozen", frozen_backend=start)
    assert isinstance(source.analyzer, ModelAnalyzer) and source.analyzer.backend is start
    policy = TeacherSource("seed", "alfworld", policy_backend=live)  # SEED itself: the live policy
    assert policy.analyzer.backend is live
    with pytest.raises(ValueError, match="frozen_backend"):
        TeacherSource("seed", "alfworld", policy_backend=live, analyzer="frozen")
    assert build_config({"algo": "seed", "env": "alfworld", "model": "m", "out": "o"},
                        overrides=["analyzer=frozen"]).analyzer == "frozen"


def test_an_offline_library_keeps_the_most_frequent_skills_per_family():
    records = [record("a#0", "clean"), record("a#1", "clean"), record("b#0", "clean"), record("c#0", "heat"),
               record("d#0", "heat")]
    skills = [Skill("Clean it in the sink first."), Skill("Clean it in the sink first."), Skill("Find the mug."),
              Skill("Heat it in the microwave."), None]  # an analyzer failure is skipped
    bank = offline_skill_bank("alfworld", records, skills, per_family=1, general=1)
    assert bank.families == {"clean": ["Clean it in the sink first."], "heat": ["Heat it in the microwave."]}
    assert bank.general == ["Clean it in the sink first."]


def test_seed_static_inserts_its_familys_offline_skills_after_the_task_line(tmp_path):
    bank = SkillBank("alfworld", [], {"clean": ["Clean it in the sink first."]})
    folder = bank.save(tmp_path / "bank")
    source = TeacherSource("seed-static", "alfworld", skill_bank=str(folder))
    records = [record("a#0", "clean"), record("b#0", "cool", instruction="cool a mug")]  # "cool" has no skill in the library
    messages, _ = source.teacher_messages(records, [sample("a#0"), sample("b#0")])
    teacher = messages[0][-1]["content"]
    lines = teacher.splitlines()
    assert lines[1].startswith("Your task is to:") and lines[2] == EPISODE_SKILL_HEADER
    assert "Clean it in the sink first." in teacher and PRIVILEGED_HEADER not in teacher
    assert messages[1] is None  # no skill for the family: no teacher signal, as a failed parse
    with pytest.raises(ValueError, match="skill_bank"):
        TeacherSource("seed-static", "alfworld")


def test_the_rule_analyzer_can_build_the_offline_library_from_sft_data():
    records = [record("a#0", "clean"), record("b#0", "clean", won=False)]
    bank = offline_skill_bank("alfworld", records, RuleAnalyzer("alfworld").analyze(records))
    assert set(bank.families) == {"clean"} and 1 <= len(bank.families["clean"]) <= 3


def test_seed_reports_the_share_of_analyzer_replies_cut_at_the_token_limit():
    valid = '{"episode_summary": "It worked.", "episode_skill": "Clean it in the sink first."}'

    class Backend:  # one reply cut at the limit, one complete
        name = "scripted"

        def generate(self, prompts, params):
            cut = Generation(text=valid[:30], prompt_tokens=0, completion_tokens=params.max_new_tokens,
                             finish_reason="length")
            done = Generation(text=valid, prompt_tokens=0, completion_tokens=20)
            return [cut, done][: len(prompts)] if len(prompts) == 2 else [cut] * len(prompts)

    source = TeacherSource("seed", "alfworld", policy_backend=Backend(), analyzer_max_new_tokens=32)
    _, stats = source.teacher_messages([record("a#0", "clean"), record("b#0", "clean")], [sample("a#0"), sample("b#0")])
    assert stats["skill_parse_rate"] == 0.5
    assert stats["skill_cut_rate"] == 2 / 3  # the first try twice (one cut), then the cut one's repair (cut again)


def test_the_seed_analyzer_reads_the_trajectory_within_the_configured_character_budget():
    seen: list[str] = []

    class Backend:  # records the prompts it is sent
        name = "scripted"

        def generate(self, prompts, params):
            seen.extend(p[-1]["content"] for p in prompts)
            return [Generation(text='{"episode_summary": "s", "episode_skill": "k"}', prompt_tokens=0,
                               completion_tokens=9) for _ in prompts]

    long = record("a#0", "clean")
    long.steps[0].observation = "You see a countertop. " * 400  # ~8,800 characters
    for budget in (9000, 1000):
        seen.clear()
        TeacherSource("seed", "alfworld", policy_backend=Backend(), analyzer_max_chars=budget).teacher_messages(
            [long], [sample("a#0")])
        trajectory = seen[0].split("Trajectory:\n", 1)[1]
        assert len(trajectory) <= budget
    assert "countertop. You see" in trajectory and "…" in trajectory  # the middle was trimmed, not the ends
