"""``seed-gym view``: a static page to browse real runs (scripted agents through the CLI, and a SDAR
training run whose rollouts carry the model's prompts and responses and the teacher's skills),
loaded in headless Chromium, filtered, and checked against the records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import OVERFLOWING_JS, chromium, console_errors, full_page_screenshot
from cli_runs import seed_gym

pytestmark = pytest.mark.integration


def records(folder: Path) -> list[dict]:
    return [json.loads(line) for path in sorted(folder.rglob("episodes.jsonl")) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_model_dir) -> Path:
    from seed_gym.training.config import TrainConfig
    from seed_gym.training.trainer import train

    root = tmp_path_factory.mktemp("view")
    seed_gym("eval", "-a", "expert", "-a", "random", "--env", "webshop", "--split", "test", "-n", "4",
             "--workers", "1", "--out", str(root / "eval"))
    train(TrainConfig(algo="sdar", env="webshop", model=str(tiny_model_dir), out=str(root / "train"), updates=1,
                      tasks_per_update=2, group=2, max_new_tokens=12, max_steps=3, env_backend="inline", workers=1,
                      micro_batch=8, eval_every=0))
    return root


def test_the_page_is_one_offline_file_with_every_episode(runs):
    out = seed_gym("view", str(runs / "eval"))
    page = runs / "eval" / "view.html"
    assert str(page) in out
    html = page.read_text()
    assert html.count('<details class="episode"') == len(records(runs / "eval")) == 8
    for remote in ("http://", "https://", "<link", "src="):
        assert remote not in html  # nothing is fetched


def test_filters_in_a_browser_show_exactly_the_matching_episodes(runs, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    seed_gym("view", str(runs / "eval"))
    expected = records(runs / "eval")
    with chromium(tmp_path) as driver:
        driver.get((runs / "eval" / "view.html").as_uri())
        assert console_errors(driver) == []
        visible = lambda: [e for e in driver.find_elements(By.CSS_SELECTOR, "details.episode") if e.is_displayed()]
        assert len(visible()) == 8
        Select(driver.find_element(By.ID, "filter-outcome")).select_by_value("won")
        assert len(visible()) == sum(r["won"] for r in expected) == 4
        assert all("won" in e.find_element(By.CSS_SELECTOR, "summary .badge").text for e in visible())
        family = expected[0]["task"]["family"]
        Select(driver.find_element(By.ID, "filter-family")).select_by_value(family)
        matching = [r for r in expected if r["won"] and r["task"]["family"] == family]
        assert len(visible()) == len(matching) > 0
        assert driver.find_element(By.ID, "shown").text == str(len(matching))
        record = next(r for r in expected if not r["won"])
        Select(driver.find_element(By.ID, "filter-outcome")).select_by_value("lost")
        Select(driver.find_element(By.ID, "filter-family")).select_by_value(record["task"]["family"])
        Select(driver.find_element(By.ID, "filter-status")).select_by_value(record["status"])
        shown = visible()
        assert len(shown) == sum(not r["won"] and r["status"] == record["status"]
                                 and r["task"]["family"] == record["task"]["family"] for r in expected)
        first = shown[0]
        first.find_element(By.TAG_NAME, "summary").click()  # open it: its steps show
        steps = first.find_elements(By.CSS_SELECTOR, "tr.step")
        assert len(steps) == len(record["steps"]) and steps[0].is_displayed()
        assert record["steps"][0]["action"][:20] in steps[0].text
        assert driver.execute_script(OVERFLOWING_JS) == []


def test_a_training_rollout_shows_prompts_responses_flags_and_the_skill_used(runs, tmp_path):
    from selenium.webdriver.common.by import By

    page = runs / "train" / "view.html"
    seed_gym("view", str(runs / "train"), "--out", str(page))
    [teacher_file] = (runs / "train" / "rollouts").rglob("teacher.jsonl")
    skills = {json.loads(line)["episode_id"]: json.loads(line) for line in teacher_file.read_text().splitlines()}
    assert {s["teacher"] for s in skills.values()} == {"skill-bank"}
    with chromium(tmp_path) as driver:
        driver.get(page.as_uri())
        assert console_errors(driver) == []
        episode = driver.find_elements(By.CSS_SELECTOR, "details.episode")[0]
        episode.find_element(By.TAG_NAME, "summary").click()
        body = episode.find_element(By.CSS_SELECTOR, ".body")
        skill = body.find_element(By.CSS_SELECTOR, ".skill")
        assert "skill used" in skill.text and "General skills" in skill.text
        step = body.find_element(By.CSS_SELECTOR, "tr.step")
        assert "prompt (" in step.text and "response" in step.text and "completion tokens" in step.text
        step.find_element(By.CSS_SELECTOR, "details.prompt summary").click()  # unfold the prompt
        episode_id = episode.find_elements(By.CSS_SELECTOR, "summary span")[1].text
        [record] = [r for r in records(runs / "train" / "rollouts") if r["episode_id"] == episode_id]
        assert record["steps"][0]["prompt"].strip().splitlines()[0][:40] in step.text
        assert skills[episode_id]["skill"].splitlines()[0] in skill.text
        assert driver.execute_script(OVERFLOWING_JS) == []
        shot = full_page_screenshot(driver, "view-training.png", max_height=3000)
    print(f"\nseed-gym view screenshot: {shot}")
