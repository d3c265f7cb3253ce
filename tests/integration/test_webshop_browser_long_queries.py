"""Long queries in real headless Chromium: a query over the URL limit travels as its session's token
and one over the query cap is cut, and the browser env still agrees with the text env step for step."""

from __future__ import annotations

import shutil

import pytest

pytestmark = pytest.mark.integration

selenium = pytest.importorskip("selenium")
if not (shutil.which("chromium") and shutil.which("chromedriver")):
    pytest.skip("needs chromium and chromium-driver", allow_module_level=True)

N = 300


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("SEED_GYM_HOME", str(tmp_path_factory.mktemp("home")))
    from seed_gym.envs.webshop.browser import WebShopBrowserEnv
    from seed_gym.envs.webshop.env import WebShopEnv

    text_env = WebShopEnv(num_products=N, seed=5, expert=True)
    browser_env = WebShopBrowserEnv(num_products=N, seed=5, expert=True)
    yield text_env, browser_env
    browser_env.close()
    mp.undo()


def test_long_queries_from_the_search_box_and_from_other_pages_agree(pair):
    from seed_gym.envs.webshop.pages import MAX_QUERY_CHARS
    from seed_gym.envs.webshop.server import MAX_URL_KEYWORDS

    text_env, browser_env = pair
    words = " ".join(g["instruction_text"].lower() for g in text_env.shop.goals[:60]).split()
    over_url = " ".join(words[:60])
    over_cap = " ".join(words[:400])
    assert MAX_URL_KEYWORDS < len(over_url) <= MAX_QUERY_CHARS < len(over_cap)
    assert text_env.reset(options={"task_id": "fixed_5"})[0] == browser_env.reset(options={"task_id": "fixed_5"})[0]
    script = [f"search[{over_url}]",  # typed into the search box
              "click[next >]", f"search[{over_cap}]",  # from a results page: the results URL
              "click[next >]", "click[< prev]", "click[back to search]", f"search[{over_cap}]", "click[next >]"]
    for action in script:
        a, b = text_env.step(action), browser_env.step(action)
        assert b[0] == a[0] and "Total results: 0" not in a[0], action[:60]
        assert b[4]["admissible_actions"] == a[4]["admissible_actions"], action[:60]


def test_a_search_at_the_action_size_limit_shows_the_same_page_in_both_envs(pair):
    """Found by the env fuzz suite: a megabyte of multi-byte characters typed whole was posted as a
    form over the server's body cap, and the browser env saw an empty 413 page."""
    from seed_gym.core import MAX_TEXT_LENGTH

    text_env, browser_env = pair
    for env in pair:
        env.reset(options={"task_id": "fixed_7"})
    for action in ["search[" + "é" * (MAX_TEXT_LENGTH - 8) + "]", "click[back to search]",
                   "search[" + "jeans é " * (MAX_TEXT_LENGTH // 8 - 1) + "]", "click[next >]"]:
        a, b = text_env.step(action), browser_env.step(action)
        assert b[0] == a[0] and a[0], action[:20]
        assert b[4]["admissible_actions"] == a[4]["admissible_actions"] and not b[4]["invalid_action"], action[:20]
