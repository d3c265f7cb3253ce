"""The SEED analyzer: the trajectory serialiser, the skill schema and its strict parser, the analyzer
prompts, the model analyzer's batching / repair / drop rules, and the rule analyzers on real
episodes (scripted agents played through the rollout engine on WebShop and Search-QA; real
ALFWorld engine text for ALFWorld)."""

from __future__ import annotations

import json

import pytest

import seed_gym
from seed_gym.agent import make_agent
from seed_gym.agents.backends.base import Generation
from seed_gym.pools import make_pool
from seed_gym.records import EpisodeRecord, StepRecord
from seed_gym.registry import register
from seed_gym.rollout import plan_episodes, run_rollouts
from seed_gym.envs.alfworld.rule import parse_alfworld_goal
from seed_gym.envs.webshop.rule import parse_item_page, parse_shop_goal
from seed_gym.training.analyzer import (Analyzer, ModelAnalyzer, RuleAnalyzer, Skill, analyzer_prompt,
                                        ground_truth_from_env, make_analyzer, parse_skill, repair_prompt)
from seed_gym.training.trajectory import MIN_BODY_CHARS, serialize_trajectory

VALID = '{"episode_summary": "The agent heated the egg.", "episode_skill": "Take the egg, heat it, place it."}'


# -- records ----------------------------------------------------------------------------------------
def make_record(steps, *, won=False, score=None, status=None, final="", task=None, episode_id="t#0"):
    """An EpisodeRecord from ``(observation, action[, response[, invalid]])`` tuples."""
    records = []
    for t, step in enumerate(steps):
        observation, action = step[0], step[1]
        response = step[2] if len(step) > 2 else None
        invalid = step[3] if len(step) > 3 else False
        reward = 1.0 if won and t == len(steps) - 1 else 0.0
        records.append(StepRecord(t=t, observation=observation, action=action, reward=reward,
                                  invalid_action=invalid, response=response))
    return EpisodeRecord(
        episode_id=episode_id, task=task or {"id": "t", "split": "test", "family": "fam", "instruction": "do it"},
        agent="test", group_index=0, seed=0, steps=records, final_observation=final, won=won,
        score=float(won) if score is None else score, total_reward=float(won),
        status=status or ("completed" if won else "truncated"), wall_seconds=0.0)


# Real ALFWorld engine text (valid_unseen games played by the expert and random agents).
ROOM = ("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, you "
        "see a cabinet 2, a cabinet 1, a countertop 1, a fridge 1, a garbagecan 1, a microwave 1, a sinkbasin 1, "
        "and a toaster 1.\n\nYour task is to: heat some egg and put it in garbagecan.")
COUNTER = "You arrive at loc 11. On the countertop 1, you see a egg 1, and a soapbottle 2."
HEAT_TASK = {"id": "valid_unseen/pick_heat_then_place_in_recep-Egg-None-GarbageCan-10/trial_T1", "split": "unseen",
             "family": "pick_heat_then_place_in_recep", "instruction": "heat some egg and put it in garbagecan."}


def heat_success() -> EpisodeRecord:
    return make_record([
        (ROOM, "go to sinkbasin 1"),
        ("You arrive at loc 29. On the sinkbasin 1, you see a cup 3, a potato 3, and a tomato 2.", "go to fridge 1"),
        ("You arrive at loc 30. The fridge 1 is closed.", "go to countertop 1"),
        (COUNTER, "take egg 1 from countertop 1"),
        ("You pick up the egg 1 from the countertop 1.", "go to microwave 1"),
        ("You arrive at loc 16. The microwave 1 is closed.", "heat egg 1 with microwave 1"),
        ("You heat the egg 1 using the microwave 1.", "go to garbagecan 1"),
        ("You arrive at loc 31. On the garbagecan 1, you see a lettuce 3.", "put egg 1 in/on garbagecan 1"),
    ], won=True, final="You put the egg 1 in/on the garbagecan 1.", task=HEAT_TASK)


def heat_in_microwave_failure() -> EpisodeRecord:
    """Takes the egg but puts it into the microwave instead of heating it."""
    return make_record([
        (ROOM, "go to countertop 1"),
        (COUNTER, "take egg 1 from countertop 1"),
        ("You pick up the egg 1 from the countertop 1.", "go to microwave 1"),
        ("You arrive at loc 16. The microwave 1 is closed.", "open microwave 1"),
        ("You open the microwave 1. The microwave 1 is open. In it, you see a apple 1.", "put egg 1 in/on microwave 1"),
        ("You put the egg 1 in/on the microwave 1.", "heat the egg", None, True),
    ], final="Nothing happens.", task=HEAT_TASK)


def never_found_failure() -> EpisodeRecord:
    return make_record([
        (ROOM, "go to cabinet 1"),
        ("You arrive at loc 1. The cabinet 1 is closed.", "go to toaster 1"),
        ("You arrive at loc 2. On the toaster 1, you see nothing.", "go to cabinet 1"),
        ("You arrive at loc 1. The cabinet 1 is closed.", "go to toaster 1"),
        ("You arrive at loc 2. On the toaster 1, you see nothing.", "go to cabinet 1"),
    ], final="You arrive at loc 1. The cabinet 1 is closed.", task=HEAT_TASK)


LOOK_TASK = {"id": "valid_unseen/look_at_obj_in_light-Mug-None-DeskLamp-308/trial_T1", "split": "unseen",
             "family": "look_at_obj_in_light", "instruction": "examine the mug with the desklamp."}


def look_seen_not_taken() -> EpisodeRecord:
    first = ("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, "
             "you see a bed 1, a desk 1, a garbagecan 1, a shelf 2, and a shelf 1.\n\nYour task is to: examine "
             "the mug with the desklamp.")
    return make_record([
        (first, "go to garbagecan 1"),
        ("You arrive at loc 26. On the garbagecan 1, you see a cd 3.", "go to shelf 2"),
        ("You arrive at loc 12. On the shelf 2, you see a mug 1, and a pencil 1.", "go to shelf 1"),
        ("You arrive at loc 6. On the shelf 1, you see a alarmclock 1.", "inventory"),
    ], final="You are not carrying anything.", task=LOOK_TASK)


# -- serialiser ---------------------------------------------------------------------------------------
def test_serialiser_lists_task_steps_and_outcome():
    record = make_record([("start", "go", "<think>x</think><action>go</action>"), ("mid", "bad", None, True)],
                         final="the end", task={"id": "t1", "family": "fam", "instruction": "win"})
    text = serialize_trajectory(record)
    assert text.startswith("Task: win\nTask type: fam\n\nStep 0\nObservation: start\n")
    assert "Response: <think>x</think><action>go</action>\nReturn: 0\n" in text
    assert "Step 1\nObservation: mid\nResponse: bad\nReturn: 0 (invalid action)" in text  # no response: the action
    assert text.endswith("Final observation: the end\n\nOutcome: failure (score 0.00, 2 steps, total reward 0, "
                         "ran out of steps)")


def test_serialiser_reports_success_and_score():
    text = serialize_trajectory(heat_success())
    assert text.splitlines()[-1] == "Outcome: success (score 1.00, 8 steps, total reward 1)"
    assert "Return: 1" in text.split("Step 7")[1]


def test_budget_trims_middles_of_long_bodies_only():
    long = "HEAD" + "x" * 5000 + "TAIL"
    task = {"id": "t", "family": "", "instruction": "T" * 300}
    record = make_record([(long, "a1"), ("short", "a2"), (long, "a3")], final="over", task=task)
    full = serialize_trajectory(record)
    text = serialize_trajectory(record, max_chars=2000)
    assert len(full) > 10000 and len(text) <= 2000
    assert text.startswith("Task: " + "T" * 300)  # the task is never trimmed
    assert text.endswith(full.splitlines()[-1])  # nor the outcome
    assert "Observation: short\nResponse: a2" in text  # short bodies stay whole
    assert text.count("HEAD") == 2 and text.count("TAIL") == 2
    kept = text.split("Observation: ")[1].split("\nResponse")[0]
    trimmed = int(kept.split("…[")[1].split(" chars trimmed]…")[0])
    assert len(kept) - len(f" …[{trimmed} chars trimmed]… ") + trimmed == len(long)  # the marker counts the cut
    assert serialize_trajectory(record, max_chars=2000) == text  # deterministic
    assert serialize_trajectory(record, max_chars=len(full)) == full  # no trim when it fits


def test_budget_never_cuts_a_body_below_the_floor():
    record = make_record([("o" * 1000, "a" * 1000)] * 20)
    text = serialize_trajectory(record, max_chars=100)
    assert all(len(line) >= MIN_BODY_CHARS for line in text.splitlines() if line.startswith("Observation: o"))


# -- schema -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    VALID,
    f"```json\n{VALID}\n```",
    f"Here is the analysis:\n{VALID}\nHope this helps.",
    "<think>the agent {probably} won</think>\n" + VALID,  # braces in prose before the object are skipped
    '{"episode_summary": "s {with braces} and \\"quotes\\"", "episode_skill": "k", "extra": 1}',
])
def test_parse_skill_accepts(text):
    skill = parse_skill(text)
    assert isinstance(skill, Skill) and skill.episode_summary and skill.episode_skill


def test_parse_skill_reads_fields_and_step_skills():
    skill = parse_skill('{"episode_summary": " s ", "episode_skill": "k", "step_skills": {"3": "open the fridge"}}')
    assert skill == Skill("s", "k", {3: "open the fridge"})
    assert parse_skill('{"episode_summary": "s", "episode_skill": "k", "step_skills": null}').step_skills == {}


@pytest.mark.parametrize("text", [
    "",
    "no json here",
    '{"episode_summary": "s"}',
    '{"episode_summary": "s", "episode_skill": ""}',
    '{"episode_summary": "s", "episode_skill": "   "}',
    '{"episode_summary": "s", "episode_skill": 3}',
    '{"episode_summary": "s", "episode_skill": ["k"]}',
    "{'episode_summary': 's', 'episode_skill': 'k'}",  # Python, not JSON
    '{"episode_summary": "s", "episode_skill": "k",}',  # trailing comma
    '{"episode_summary": "s", "episode_skill": "k", "step_skills": ["x"]}',
    '{"episode_summary": "s", "episode_skill": "k", "step_skills": {"first": "x"}}',
    '{"episode_summary": "s", "episode_skill": "k", "step_skills": {"1": ""}}',
    '{"episode_summary": "s", "episode_skill": "k", "score": NaN}',
    '{"episode_summary": "s", "episode_skill": "k"',  # unbalanced
    '{"note": "a valid object without the fields comes first"} ' + VALID,
])
def test_parse_skill_rejects(text):
    assert parse_skill(text) is None


def test_a_skill_label_round_trips_through_the_parser():
    skill = Skill("summary", "skill with \"quotes\" and {braces}", {2: "do x"}, backend="rule:x")
    assert json.loads(skill.to_json()) == {"episode_summary": "summary", "episode_skill": skill.episode_skill,
                                           "step_skills": {"2": "do x"}}
    assert parse_skill(skill.to_json()) == Skill("summary", skill.episode_skill, {2: "do x"})


# -- prompts ------------------------------------------------------------------------------------------
def test_success_prompt_asks_for_a_workflow():
    content = analyzer_prompt(heat_success())[0]["content"]
    assert "Return ONLY valid JSON" in content and "workflow" in content and "core decision rule" in content
    assert "avoidance rule extracted" not in content
    assert "episode_success: success" in content
    assert '"episode_summary"' in content and '"episode_skill"' in content
    assert serialize_trajectory(heat_success(), max_chars=9000) in content


def test_failure_prompt_asks_for_an_avoidance_rule():
    content = analyzer_prompt(never_found_failure())[0]["content"]
    assert "avoidance rule" in content and "core mistake" in content and "warning signs" in content
    assert "workflow extracted" not in content and "episode_success: failure" in content


def test_step_skills_are_asked_for_only_when_wanted():
    assert "step_skills" not in analyzer_prompt(heat_success())[0]["content"]
    assert "at most 2 critical step(s)" in analyzer_prompt(heat_success(), step_skills=2)[0]["content"]


def test_repair_prompt_quotes_the_bad_reply_and_restates_the_schema():
    reason = "the reply held no JSON object"
    content = repair_prompt(heat_success(), "Sure! The agent did well.", reason=reason)[0]["content"]
    assert "Sure! The agent did well." in content and "the reply held no JSON object" in content
    assert content.rstrip().endswith("must be non-empty strings.")
    assert content.count('"episode_skill"') == 2  # in the request and restated
    long = repair_prompt(heat_success(), "z" * 10_000)[0]["content"]
    assert long.count("z") < 2000


# -- model analyzer -----------------------------------------------------------------------------------
class ScriptedBackend:
    """A fake backend: call k answers with ``script[k]`` (one reply per prompt, in order)."""

    name = "scripted"

    def __init__(self, *script):
        self.script = list(script)
        self.calls = []

    def generate(self, prompts, params):
        self.calls.append((list(prompts), params))
        replies = self.script[len(self.calls) - 1]
        return [Generation(text=r[0], prompt_tokens=0, completion_tokens=0, finish_reason=r[1]) if isinstance(r, tuple)
                else Generation(text=r, prompt_tokens=0, completion_tokens=0) for r in replies]

    def describe(self):
        return {}

    def close(self):
        pass


def test_junk_then_valid_json_is_repaired_in_one_batched_retry():
    backend = ScriptedBackend(["I think it went fine.", VALID], [f"```json\n{VALID}\n```"])
    analyzer = ModelAnalyzer(backend)
    skills = analyzer.analyze([never_found_failure(), heat_success()])
    assert isinstance(analyzer, Analyzer)
    assert [s.episode_skill for s in skills] == ["Take the egg, heat it, place it."] * 2
    assert len(backend.calls) == 2
    first, second = backend.calls
    assert len(first[0]) == 2 and len(second[0]) == 1  # all at once, then only the failure
    assert "I think it went fine." in second[0][0][0]["content"]
    assert first[1].temperature == 0 and first[1].max_new_tokens == 768
    assert skills[0].error == "the reply held no JSON object" and skills[1].error is None
    assert skills[0].backend == "scripted"
    assert analyzer.stats.as_dict() | {"reasons": None} == {
        "attempted": 2, "parsed_first_try": 1, "repaired": 1, "failed": 0, "skipped": 0, "replies": 3, "cut": 0,
        "parse_failure_rate": 0.0, "reasons": None}


def test_a_reply_cut_at_the_token_limit_is_counted_and_named_in_the_repair():
    cut_json = VALID[: len(VALID) // 2]  # what a skill longer than max_new_tokens leaves
    backend = ScriptedBackend([(cut_json, "length"), (VALID, "length")], [(cut_json, "length")])
    analyzer = ModelAnalyzer(backend, max_new_tokens=256)
    skills = analyzer.analyze([never_found_failure(), heat_success()])
    assert skills[0] is None and skills[1] is not None  # a reply that fits exactly at the limit still parses
    assert (analyzer.stats.replies, analyzer.stats.cut, analyzer.stats.failed) == (3, 3, 1)
    reason = "the reply stopped at the 256-token limit before its JSON object closed"
    assert skills[0] is None and analyzer.stats.reasons[reason] == 2
    assert reason in backend.calls[1][0][0][0]["content"]  # the repair tells the model why


def test_junk_twice_is_dropped_and_counted():
    backend = ScriptedBackend(["junk", VALID], ['{"episode_summary": "only this"}'])
    analyzer = ModelAnalyzer(backend)
    skills = analyzer.analyze([never_found_failure(), heat_success()])
    assert skills[0] is None and skills[1] is not None
    assert (analyzer.stats.failed, analyzer.stats.repaired, analyzer.stats.attempted) == (1, 0, 2)
    assert analyzer.stats.parse_failure_rate == 0.5
    assert sum(analyzer.stats.reasons.values()) == 2


def test_stats_accumulate_and_retries_zero_means_no_repair():
    backend = ScriptedBackend(["junk"], ["junk"])
    analyzer = ModelAnalyzer(backend, retries=0)
    assert analyzer.analyze([heat_success()]) == [None]
    assert analyzer.analyze([heat_success()]) == [None]
    assert len(backend.calls) == 2 and analyzer.stats.failed == 2 and analyzer.stats.attempted == 2


def test_error_records_are_not_sent():
    broken = make_record([], status="error")
    backend = ScriptedBackend([VALID])
    analyzer = ModelAnalyzer(backend)
    skills = analyzer.analyze([broken, heat_success()])
    assert skills[0] is None and skills[1] is not None
    assert len(backend.calls[0][0]) == 1 and analyzer.stats.skipped == 1 and analyzer.stats.attempted == 1


def test_a_backend_returning_the_wrong_count_is_an_error():
    with pytest.raises(RuntimeError, match="1 generations for 2 prompts"):
        ModelAnalyzer(ScriptedBackend([VALID])).analyze([heat_success(), heat_success()])


def test_make_analyzer_kinds():
    assert isinstance(make_analyzer("rule", env_id="alfworld"), RuleAnalyzer)
    policy = make_analyzer("policy", env_id="alfworld", backend=ScriptedBackend([VALID]))
    assert isinstance(policy, ModelAnalyzer) and policy.name == "model:scripted"
    external = make_analyzer("openai", env_id="webshop", base_url="http://127.0.0.1:9/v1", model="glm")
    assert isinstance(external, ModelAnalyzer) and type(external.backend).__name__ == "OpenAIBackend"
    with pytest.raises(ValueError, match="backend"):
        make_analyzer("policy", env_id="alfworld")
    with pytest.raises(ValueError, match="base_url"):
        make_analyzer("openai", env_id="alfworld")
    with pytest.raises(ValueError, match="unknown analyzer kind"):
        make_analyzer("oracle", env_id="alfworld")


# -- rule analyzers: ALFWorld ----------------------------------------------------------------------
@pytest.mark.parametrize("instruction, family, expected", [
    ("put a pencil in shelf.", "pick_and_place_simple", ("place", "pencil", "shelf")),
    ("put some spraybottle on toilet.", "pick_and_place_simple", ("place", "spraybottle", "toilet")),
    ("examine the mug with the desklamp.", "look_at_obj_in_light", ("look", "mug", "")),
    ("look at bowl under the floorlamp.", "look_at_obj_in_light", ("look", "bowl", "")),
    ("clean some bowl and put it in cabinet.", "pick_clean_then_place_in_recep", ("clean", "bowl", "cabinet")),
    ("put a clean mug in coffeemachine.", "pick_clean_then_place_in_recep", ("clean", "mug", "coffeemachine")),
    ("heat some egg and put it in garbagecan.", "pick_heat_then_place_in_recep", ("heat", "egg", "garbagecan")),
    ("put a hot apple in fridge.", "pick_heat_then_place_in_recep", ("heat", "apple", "fridge")),
    ("cool some lettuce and put it in countertop.", "pick_cool_then_place_in_recep", ("cool", "lettuce", "countertop")),
    ("put a cool slice of bread in microwave.", "pick_cool_then_place_in_recep",
     ("cool", "slice of bread", "microwave")),
    ("find two cd and put them in safe.", "pick_two_obj_and_place", ("two", "cd", "safe")),
    ("put two alarmclock in dresser.", "", ("two", "alarmclock", "dresser")),
])
def test_alfworld_goals_are_read_from_every_instruction_template(instruction, family, expected):
    goal = parse_alfworld_goal(instruction, family)
    assert (goal.kind, goal.obj, goal.dest) == expected
    if goal.kind == "look":
        assert goal.lamp in ("desklamp", "floorlamp")


def test_alfworld_success_is_the_action_order_actually_taken():
    skill = RuleAnalyzer("alfworld").analyze([heat_success()])[0]
    order = ["go to countertop 1", "take egg 1 from countertop 1", "go to microwave 1", "heat egg 1 with microwave 1",
             "go to garbagecan 1", "put egg 1 in/on garbagecan 1"]
    assert " -> ".join(order) in skill.episode_skill
    assert skill.episode_skill.startswith("Workflow")
    assert "sinkbasin 1 and fridge 1" in skill.episode_summary  # where it looked before finding the egg
    assert skill.backend == "rule:alfworld" and parse_skill(skill.to_json()) is not None


def test_alfworld_failure_names_the_broken_link_and_the_right_workflow():
    records = [heat_in_microwave_failure(), never_found_failure(), look_seen_not_taken()]
    skills = RuleAnalyzer("alfworld").analyze(records)
    into, lost, seen = (s.episode_skill for s in skills)
    assert into.startswith("Avoid") and "never heated it with the microwave" in into
    assert "put it into microwave 1 instead of using 'heat egg 1 with microwave 1'" in into
    assert "1 of 6 actions were invalid" in into
    assert "never found an egg" in lost and "countertop 1" in lost  # the unvisited place that held it
    assert "'go to cabinet 1' x3" in lost and "step budget ran out" in lost
    assert "mug 1 was visible at shelf 2" in seen and "use desklamp" in seen
    for skill in skills:
        assert "Correct workflow" in skill.episode_skill and parse_skill(skill.to_json()) is not None


def test_alfworld_pick_two_with_one_object_placed():
    task = {"id": "two", "split": "unseen", "family": "pick_two_obj_and_place", "instruction": "put two cd in safe."}
    record = make_record([
        ("You arrive at loc 3. On the desk 1, you see a cd 1, and a cd 2.", "take cd 1 from desk 1"),
        ("You pick up the cd 1 from the desk 1.", "go to safe 1"),
        ("You arrive at loc 5. The safe 1 is open. In it, you see nothing.", "put cd 1 in/on safe 1"),
    ], final="You put the cd 1 in/on the safe 1.", task=task)
    skill = RuleAnalyzer("alfworld").analyze([record])[0]
    assert "put only one cd (cd 1) in/on safe 1" in skill.episode_skill


# -- rule analyzers on rollouts -------------------------------------------------------------------
def rollouts(env_id: str, agent: str, n: int, **env_kwargs):
    spec = make_agent(agent)
    env = seed_gym.make(env_id, **env_kwargs)
    task_ids = env.task_set().split("test").task_ids[:n]
    pool = make_pool("inline", env_id, {**env_kwargs, "expert": spec.requires_expert}, num_slots=n)
    return run_rollouts(pool, spec, plan_episodes(task_ids)), ground_truth_from_env(env)


@pytest.fixture(scope="module")
def webshop_runs():
    expert, truth = rollouts("webshop", "expert", 4, split="test")
    random, _ = rollouts("webshop", "random", 4, split="test")
    return expert, random, truth


@pytest.fixture(scope="module")
def searchqa_runs():
    expert, truth = rollouts("searchqa", "expert", 3, split="test")
    closed, _ = rollouts("searchqa", "closed-book", 3, split="test")
    random, _ = rollouts("searchqa", "random", 2, split="test")
    return expert, closed, random, truth


def bought(record: EpisodeRecord) -> str:
    buy = next(s for s in record.steps if s.action == "click[buy now]")
    return parse_item_page(buy.observation, buy.admissible_actions).title


def test_webshop_success_names_the_item_options_and_query(webshop_runs):
    expert, _, _ = webshop_runs
    assert expert and all(r.won for r in expert)
    for record, skill in zip(expert, RuleAnalyzer("webshop").analyze(expert)):
        goal = parse_shop_goal(record.task["instruction"])
        assert skill.episode_skill.startswith("Workflow") and bought(record) in skill.episode_skill
        search = next(s.action for s in record.steps if s.action.startswith("search["))[7:-1]
        assert f"'{search}'" in skill.episode_skill
        for name, value in goal.options.items():
            assert f"{name}: {value}" in skill.episode_skill
        assert f"${goal.price_cap:.2f}" in skill.episode_skill
        assert parse_skill(skill.to_json()) is not None


def test_webshop_failures_say_what_went_wrong(webshop_runs):
    _, random, truth = webshop_runs
    assert random and not any(r.won for r in random)
    for record, skill in zip(random, RuleAnalyzer("webshop", ground_truth=truth).analyze(random)):
        text = skill.episode_skill
        assert text.startswith("Avoid") and "Correct workflow" in text
        if any(s.action == "click[buy now]" for s in record.steps):
            assert f"bought '{bought(record)}'" in text or bought(record) in text
        else:
            assert "never clicked Buy Now" in text
        assert truth(record.task["id"])["name"] in skill.episode_summary  # the target, from ground truth


def test_webshop_wrong_option_is_named():
    page = ("Instruction: [SEP] Find me x [SEP] Back to Search [SEP] < Prev [SEP] scent [SEP] lavender [SEP] rose "
            "[SEP] Kive Essential Shampoo [SEP] Price: $9.35 [SEP] Rating: N.A. [SEP] Description [SEP] Features "
            "[SEP] Reviews [SEP] Buy Now")
    admissible = ["click[back to search]", "click[< prev]", "click[lavender]", "click[rose]", "click[buy now]"]
    task = {"id": "fixed_9", "split": "test", "family": "beauty",
            "instruction": "Find me sulfate free hair shampoo with scent: lavender, and price lower than 30.00 dollars"}
    record = make_record([(page, "click[rose]"), (page, "click[buy now]")], score=0.5, status="completed",
                         final="Thank you for shopping with us!", task=task)
    for step in record.steps:
        step.admissible_actions = admissible
    skill = RuleAnalyzer("webshop").analyze([record])[0]
    assert "it selected scent: rose but the task asked for scent: lavender" in skill.episode_skill


def test_searchqa_success_verifies_the_answer_from_evidence(searchqa_runs):
    expert, _, _, truth = searchqa_runs
    for record, skill in zip(expert, RuleAnalyzer("searchqa", ground_truth=truth).analyze(expert)):
        gold = truth(record.task["id"])
        assert record.won and f"answer '{gold['golden_answers'][0]}'" in skill.episode_skill
        for hop in gold["metadata"]["hops"]:
            assert hop["query"] in skill.episode_skill
        assert "verify the answer from retrieved evidence" in skill.episode_skill


def test_searchqa_wrong_answer_with_and_without_ground_truth(searchqa_runs):
    _, closed, random, truth = searchqa_runs
    with_gold = RuleAnalyzer("searchqa", ground_truth=truth).analyze(closed)
    without = RuleAnalyzer("searchqa").analyze(closed)
    for record, skill, blind in zip(closed, with_gold, without):
        predicted = record.steps[0].response.split("<answer>")[1].split("</answer>")[0].strip()
        assert f"answered '{predicted}' from memory without searching" in skill.episode_skill
        assert f"The gold answer is '{truth(record.task['id'])['golden_answers'][0]}'" in skill.episode_skill
        assert "gold answer is not in the record" in blind.episode_skill
    for skill in RuleAnalyzer("searchqa").analyze(random):
        assert "no turn held a valid <search>" in skill.episode_skill


def test_rule_analyzers_write_a_valid_skill_for_every_record_deterministically(webshop_runs, searchqa_runs):
    records = {"webshop": webshop_runs[0] + webshop_runs[1], "searchqa": [r for run in searchqa_runs[:3] for r in run],
               "alfworld": [heat_success(), heat_in_microwave_failure(), never_found_failure(), look_seen_not_taken()]}
    for env_id, batch in records.items():
        first = RuleAnalyzer(env_id).analyze(batch)
        assert first == RuleAnalyzer(env_id).analyze(batch)
        assert all(isinstance(s, Skill) and parse_skill(s.to_json()) is not None for s in first)
    assert RuleAnalyzer("alfworld").analyze([make_record([], status="error")]) == [None]


register("toy-counter-analyzer", "toy_envs:CounterEnv")  # an env whose profile names no rule


def test_other_envs_get_the_generic_rule():
    skill = RuleAnalyzer("toy-counter-analyzer").analyze([make_record([("count", "up"), ("1", "up")], won=True)])[0]
    assert "up -> up" in skill.episode_skill


@pytest.mark.integration
def test_rule_analyzer_on_the_real_alfworld_engine(official_alfworld):
    """The expert (a success) and a random agent (a failure) on one real official game."""
    env = seed_gym.make("alfworld", data=str(official_alfworld))
    task_ids = env.task_set().split("unseen").task_ids[:1]
    records = []
    for agent in ("expert", "random"):
        spec = make_agent(agent)
        pool = make_pool("inline", "alfworld", {"data": str(official_alfworld), "expert": spec.requires_expert,
                                                "max_steps": 30}, num_slots=1)
        records += run_rollouts(pool, spec, plan_episodes(task_ids))
    assert [r.won for r in records] == [True, False]
    for record, skill in zip(records, RuleAnalyzer("alfworld").analyze(records)):
        obj = parse_alfworld_goal(record.task["instruction"], record.task["family"]).obj
        assert obj in skill.episode_skill
        assert skill.episode_skill.startswith("Workflow" if record.won else "Avoid")
        if record.won:
            take = next(s.action for s in record.steps if s.action.startswith("take "))
            assert take in skill.episode_skill
