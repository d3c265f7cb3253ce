"""A board people read, checked in headless Chromium at 1,280 px: real runs (scripted agents and the
tiny model through the CLI, two boards of one split that differ in their step budget, a submission
with a one-point learning curve); nothing runs off the page, chart titles are whole, the papers'
rows are folded until opened, and a row's name opens its episodes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import OVERFLOWING_JS, chromium, console_errors, full_page_screenshot
from cli_runs import seed_gym

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def board(tmp_path_factory, tiny_model_dir) -> Path:
    root = tmp_path_factory.mktemp("board")
    common = ("--env", "webshop", "--split", "test", "-n", "4", "--workers", "1")
    seed_gym("eval", "-a", "expert", "-a", "random", *common, "--out", str(root / "runs"))
    seed_gym("eval", "-a", "expert", "-a", "random", "-a", f"hf:{tiny_model_dir}@max_new_tokens=8,dtype=float32",
             *common, "--max-steps", "3", "--out", str(root / "short"))
    submission = root / "submissions" / "sft"
    submission.mkdir(parents=True)
    (root / "runs" / "expert").rename(submission / "run")
    (submission / "submission.json").write_text(json.dumps({
        "name": "a-behaviour-cloning-checkpoint-with-a-long-name", "model": "models/small-sft-epoch-3",
        "contact": "me@example.org", "date": "2026-12-01"}))
    (submission / "metrics.jsonl").write_text('{"update": 3, "split": "test", "success_rate": 0.25}\n')
    seed_gym("leaderboard", "build", str(root / "runs"), str(root / "short"), str(root / "submissions"),
             "--out", str(root / "board"))
    return root / "board"


def test_the_board_reads_at_1280_px(board, tmp_path):
    from selenium.webdriver.common.by import By

    with chromium(tmp_path, width=1280) as driver:
        driver.get((board / "index.html").as_uri())
        assert console_errors(driver) == []
        assert driver.execute_script(OVERFLOWING_JS) == []  # no element runs off the page
        for folded in driver.find_elements(By.CSS_SELECTOR, "section.board details"):
            folded.find_element(By.TAG_NAME, "summary").click()  # run metadata too
        scrolled = driver.execute_script(
            "return [...document.querySelectorAll('div.scroll')].filter(d => d.scrollWidth > d.clientWidth)"
            ".map(d => d.querySelector('caption').textContent)")
        assert scrolled == []  # no table needs a horizontal scroll bar either
        clipped = driver.execute_script(
            "return [...document.querySelectorAll('figcaption')].filter(c => c.scrollWidth > c.clientWidth + 1)"
            ".map(c => c.textContent)")
        assert clipped == [] and len(driver.find_elements(By.TAG_NAME, "figcaption")) >= 3

        titles = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "section.board h3")]
        assert sorted(titles) == ["webshop / test · max steps 15", "webshop / test · max steps 3"]
        long_label = driver.find_element(By.XPATH, "//td[@title='a-behaviour-cloning-checkpoint-with-a-long-name (expert)']")
        assert "…" in long_label.text  # shortened, the full name on hover
        tiny = [td for td in driver.find_elements(By.CSS_SELECTOR, "td[title^='hf:']") if td.text]
        assert tiny and all(len(td.text) <= 48 for td in tiny)  # 40 in the ranked tables, 48 for agent specs
        family = driver.find_element(By.CSS_SELECTOR, "td[data-metric^='family:']")
        assert "n=" in family.text
        assert driver.find_elements(By.XPATH, "//td[text()='best']")
        paired = driver.find_elements(By.CSS_SELECTOR, "td[data-metric='paired_p']")
        assert paired and all(" p " in td.text for td in paired)
        usage = driver.find_element(By.XPATH, "//caption[contains(., 'tokens, latency and format validity')]")
        assert usage.is_displayed()

        papers = driver.find_element(By.CSS_SELECTOR, "details.reported-papers")
        reported = papers.find_element(By.CSS_SELECTOR, "table.reported")
        assert papers.get_attribute("open") is None and not reported.is_displayed()  # folded by default
        curve = driver.find_element(By.XPATH, "//figure[figcaption[contains(., 'validation success')]]")
        assert "25.0%" in curve.text and "one evaluation so far" in curve.text
        shot = full_page_screenshot(driver, "board.png")
        papers.find_element(By.TAG_NAME, "summary").click()
        assert reported.is_displayed()

        link = driver.find_element(By.LINK_TEXT, "random")
        link.click()
        assert "random" in driver.title and driver.find_elements(By.CSS_SELECTOR, "details.episode")
    print(f"\nboard screenshot: {shot}")
