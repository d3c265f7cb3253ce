"""Skill insertion H(h, s) on the real prompts of each env, and SDAR's static skill bank."""

from __future__ import annotations

import json

import pytest

from seed_gym.agents.prompts import EpisodeView, PromptBuilder, template_for_env
from seed_gym.envs.alfworld.data import TASK_TYPES
from seed_gym.envs.searchqa.protocol import information_block, make_prompt
from seed_gym.envs.searchqa.questions import SEEN_SOURCES, UNSEEN_SOURCES
from seed_gym.envs.webshop.taxonomy import MEDIAN_PRICE
from seed_gym.training.skills import (SkillBank, insert_skill, insert_skill_messages, parse_markdown_skills,
                                      prepend_privileged, prepend_privileged_messages, skill_block)

SKILL = "Take the egg, heat it with microwave 1, then put it in/on garbagecan 1."
BLOCK = ("**Episode-Level Skill**\nRefer to this episode-level skill when deciding what action to take in the "
         f"current episode:\n[{SKILL}]")

# Real engine text: ALFWorld's first observation holds the task line; WebShop's pages; Search-R1's prompt.
ALF_FIRST = ("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly around you, "
             "you see a countertop 1, a fridge 1, a garbagecan 1, and a microwave 1.\n\n"
             "Your task is to: heat some egg and put it in garbagecan.")
ALF_STEPS = [(ALF_FIRST, "go to countertop 1",
              "<think>eggs are on counters</think><action>go to countertop 1</action>"),
             ("You arrive at loc 11. On the countertop 1, you see a egg 1.", "take egg 1 from countertop 1", "")]
WS_TASK = "Find me sulfate free hair shampoo with scent: lavender, and price lower than 30.00 dollars"
WS_FIRST = f"WebShop [SEP] Instruction: [SEP] {WS_TASK} [SEP] Search"
QA_QUESTION = "In which city was the band of Driofy Quioweand formed?"


def prompts_of(env_id: str, task: str, first: str, steps, admissible):
    """The builder's prompt text at step 0 and at every later step of the episode."""
    builder = PromptBuilder(template_for_env(env_id))
    texts = [builder.text(EpisodeView(task, first, []), first, admissible)]
    for k in range(1, len(steps) + 1):
        current = steps[k][0] if k < len(steps) else "You pick up the egg 1 from the countertop 1."
        texts.append(builder.text(EpisodeView(task, first, steps[:k]), current, admissible))
    return texts


def assert_inserted_after(text: str, out: str, marker: str):
    """The block sits on its own lines right after the first line holding ``marker``; nothing else moved."""
    assert out.count(BLOCK) == 1
    before, after = out.split(BLOCK)
    assert before + after.removeprefix("\n") == text  # the rest is byte-identical
    assert marker in before.splitlines()[-1] and before.endswith("\n")
    assert marker not in "".join(before.splitlines()[:-1])  # the *first* such line


def test_alfworld_prompts_get_the_block_after_the_task_line_at_every_step():
    texts = prompts_of("alfworld", "heat some egg and put it in garbagecan.", ALF_FIRST, ALF_STEPS,
                       ["go to countertop 1", "go to fridge 1"])
    assert len(texts) == 3
    for text in texts:
        out = insert_skill(text, SKILL)
        assert_inserted_after(text, out, "Your task is to:")
        assert out.index(BLOCK) < out.index("Now it's your turn")
    # step 0: the task line is inside the observation, so the block follows it there
    assert "Your task is to: heat some egg and put it in garbagecan.\n" + BLOCK in insert_skill(texts[0], SKILL)
    # later steps: the template's own task line comes first, before the history that quotes the observation
    assert insert_skill(texts[1], SKILL).index(BLOCK) < insert_skill(texts[1], SKILL).index("-= Welcome")


def test_webshop_prompts_get_the_block_after_the_task_line():
    steps = [(WS_FIRST, "search[sulfate free shampoo]", "")]
    for text in prompts_of("webshop", WS_TASK, WS_FIRST, steps, ["search[x]"]):
        out = insert_skill(text, SKILL)
        assert_inserted_after(text, out, "Your task is to:")
        assert f"Your task is to: {WS_TASK}.\n{BLOCK}\n" in out


def test_search_r1_prompts_get_the_block_after_the_question_line():
    first = make_prompt(QA_QUESTION)
    response = "<think>find the band</think><search> Driofy Quioweand band </search>"
    info = information_block(['"The Tisix Archives"\nThe Tisix Archives is a band formed in Krovenn.'])
    steps = [(first, response, response), (info, "<answer> Krovenn </answer>", "<answer> Krovenn </answer>")]
    builder = PromptBuilder(template_for_env("searchqa"))
    texts = [builder.text(EpisodeView(QA_QUESTION, first, []), first, None),
             builder.text(EpisodeView(QA_QUESTION, first, steps[:1]), info, None)]
    for text in texts:
        out = insert_skill(text, SKILL)
        assert_inserted_after(text, out, "Question:")
        assert out.index(BLOCK) < len(first) + len(BLOCK) + 1  # before the history
    assert insert_skill(texts[1], SKILL).endswith(response + info)


def test_your_question_line_is_a_task_line():
    text = "You are an expert agent tasked with answering the given question step-by-step.\nYour question: who?\nGo."
    assert insert_skill(text, SKILL) == text.replace("who?\n", f"who?\n{BLOCK}\n")


def test_fallbacks_before_the_turn_line_then_at_the_start():
    text = "Some preamble.\nObservation: x\nNow it's your turn to take an action.\nAnswer in tags."
    expected = f"Some preamble.\nObservation: x\n{BLOCK}\n\nNow it's your turn to take an action.\nAnswer in tags."
    assert insert_skill(text, SKILL) == expected
    assert insert_skill("no markers at all", SKILL) == f"{BLOCK}\n\nno markers at all"


def test_a_task_line_that_ends_the_text():
    assert insert_skill("Your task is to: win", SKILL) == f"Your task is to: win\n{BLOCK}"


def test_messages_get_the_block_in_the_user_message_only():
    messages = [{"role": "system", "content": "Your task is to: (system text is left alone)"},
                {"role": "user", "content": "Intro.\nYour task is to: heat some egg.\nNow it's your turn."}]
    out = insert_skill_messages(messages, SKILL)
    assert out[0] == messages[0] and out[1]["content"] == insert_skill(messages[1]["content"], SKILL)
    assert messages[1]["content"] == "Intro.\nYour task is to: heat some egg.\nNow it's your turn."  # not mutated
    with pytest.raises(ValueError):
        insert_skill_messages([{"role": "system", "content": "x"}], SKILL)


def test_skill_block_strips_the_skill():
    assert skill_block(f"  {SKILL}\n") == BLOCK


def test_sdar_prepends_privileged_skills():
    assert prepend_privileged("prompt", "- a\n- b") == "[Privileged Skill Information]\n- a\n- b\n\nprompt"
    out = prepend_privileged_messages([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}], "- a")
    assert out == [{"role": "system", "content": "s"},
                   {"role": "user", "content": "[Privileged Skill Information]\n- a\n\nu"}]


# -- skill bank -----------------------------------------------------------------------------------
def test_every_alfworld_task_type_has_its_own_skills():
    bank = SkillBank.for_env("alfworld")
    assert len(bank.general) >= 3
    for family in TASK_TYPES:
        assert bank.family_for({"family": family}) == family
        text = bank.skills_for({"family": family})
        assert text.startswith("General skills:\n- ") and f"Skills for {family} tasks:\n- " in text
    assert "microwave" in bank.skills_for({"family": "pick_heat_then_place_in_recep"})
    assert "sinkbasin" in bank.skills_for({"family": "pick_clean_then_place_in_recep"})
    assert "fridge" in bank.skills_for({"family": "pick_cool_then_place_in_recep"})
    assert bank.family_for({"family": "pick_clean"}) == "pick_clean_then_place_in_recep"  # prefix match


def test_every_webshop_category_and_searchqa_source_matches():
    webshop = SkillBank.for_env("webshop")
    for category in MEDIAN_PRICE:  # the catalogue's five categories
        assert webshop.family_for({"family": category}) == category
    assert webshop.family_for({"family": "food"}) == "grocery"  # upstream's category names
    assert SkillBank.for_env("webshop-browser").families == webshop.families
    search = SkillBank.for_env("searchqa")
    for source in SEEN_SOURCES + UNSEEN_SOURCES:
        assert search.family_for({"family": source}) == source.removeprefix("syn_")
    assert search.family_for({"family": "2wikimultihopqa"}) == "2wiki"  # Search-R1's data_source names


def test_keyword_match_then_general_only():
    webshop = SkillBank.for_env("webshop")
    assert webshop.family_for({"family": "", "instruction": "I need beauty products"}) == "beauty"
    text = webshop.skills_for({"family": "toys", "instruction": "a kite"})
    assert "Skills for" not in text and text.startswith("General skills:")
    assert webshop.all_skills().count("Skills for") == len(webshop.families)
    with pytest.raises(ValueError, match="declares no skill bank"):
        SkillBank.for_env("toy-counter")


def test_markdown_folder_with_sdar_mapping(tmp_path):
    (tmp_path / "general_skills.md").write_text("# General\n\n- Be careful.\n- Check twice,\n  then act.\n")
    (tmp_path / "heat.md").write_text("Use the microwave.\n\nThen place it.\n")
    (tmp_path / "skill_mapping.json").write_text(json.dumps({"pick_heat_then_place_in_recep": "heat.md"}))
    bank = SkillBank.load(tmp_path, env="alfworld")
    assert bank.general == ["Be careful.", "Check twice, then act."]
    assert bank.families == {"pick_heat_then_place_in_recep": ["Use the microwave.", "Then place it."]}
    assert "- Use the microwave." in bank.skills_for({"family": "pick_heat_then_place_in_recep"})


def test_markdown_folder_by_file_names_and_json_file(tmp_path):
    (tmp_path / "md").mkdir()
    (tmp_path / "md" / "general.md").write_text("1. One.\n2. Two.\n")
    (tmp_path / "md" / "beauty.md").write_text("* Pick the scent.\n")
    bank = SkillBank.load(tmp_path / "md")
    assert bank.general == ["One.", "Two."] and bank.families == {"beauty": ["Pick the scent."]}
    path = tmp_path / "bank.json"
    path.write_text(json.dumps({"general": "Only one.", "families": {"syn_NQ": ["Search once."]},
                                "aliases": {"naturalquestions": "nq"}}))
    loaded = SkillBank.load(path)
    assert loaded.general == ["Only one."] and loaded.family_for({"family": "naturalquestions"}) == "nq"
    assert loaded.family_for({"family": "syn_nq"}) == "nq"


def test_a_saved_bank_loads_back(tmp_path):
    bank = SkillBank.for_env("searchqa")
    loaded = SkillBank.load(bank.save(tmp_path / "bank"), env="searchqa")
    assert (loaded.general, loaded.families) == (bank.general, bank.families)


def test_markdown_parsing_rules():
    assert parse_markdown_skills("# Title\n- a\n  more\n- b\n") == ["a more", "b"]
    assert parse_markdown_skills("para one\nline\n\npara two") == ["para one line", "para two"]
    with pytest.raises(FileNotFoundError):
        SkillBank.load("/nonexistent/bank")
