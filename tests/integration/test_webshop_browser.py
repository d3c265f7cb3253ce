"""WebShop in real headless Chromium against a real uvicorn server on 127.0.0.1."""

from __future__ import annotations

import shutil

import httpx
import pytest

pytestmark = pytest.mark.integration

selenium = pytest.importorskip("selenium")
if not (shutil.which("chromium") and shutil.which("chromedriver")):
    pytest.skip("needs chromium and chromium-driver", allow_module_level=True)

N = 300


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("SEED_GYM_HOME", str(tmp_path_factory.mktemp("home")))
    yield
    mp.undo()


@pytest.fixture(scope="module")
def envs(home):
    from seed_gym.envs.webshop.browser import WebShopBrowserEnv
    from seed_gym.envs.webshop.env import WebShopEnv

    pairs = {mode: (WebShopEnv(num_products=N, seed=5, expert=True, observation_mode=mode),
                    WebShopBrowserEnv(num_products=N, seed=5, expert=True, observation_mode=mode))
             for mode in ("text", "text_rich")}
    yield pairs
    for _, browser in pairs.values():
        browser.close()


def both(text_env, browser_env, action):
    a, b = text_env.step(action), browser_env.step(action)
    label = repr(action)[:80]
    assert b[0] == a[0], label
    assert (b[1], b[2], b[3]) == (a[1], a[2], a[3]), label
    for key in ("admissible_actions", "won", "score", "invalid_action", "expert_action"):
        assert b[4][key] == a[4][key], (label, key)
    return a


@pytest.mark.parametrize("mode", ["text", "text_rich"])
def test_scripted_episode_same_observations_and_rewards(envs, mode):
    text_env, browser_env = envs[mode]
    task = "fixed_7"
    a, b = text_env.reset(options={"task_id": task}), browser_env.reset(options={"task_id": task})
    assert a[0] == b[0] and a[1]["admissible_actions"] == b[1]["admissible_actions"]
    goal = text_env.shop.goal(task)
    script = ["click[nothing]", f"search[{goal['query']}]", "click[next >]", "click[< prev]", "bogus",
              f"search[{goal['name'].lower()}]", f"click[{goal['asin'].lower()}]", "click[description]",
              "click[< prev]", "click[features]", "click[back to search]"]
    for action in script:
        both(text_env, browser_env, action)
    info = text_env._info(invalid_action=False)
    while True:
        obs, reward, term, trunc, info = both(text_env, browser_env, info["expert_action"])
        if term or trunc:
            break
    assert term and reward == 1.0 and "Your score" in obs


def test_html_and_js_in_search_terms_never_execute(envs):
    text_env, browser_env = envs["text"]
    browser_env.reset(options={"task_id": "fixed_1"})
    evil = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
    obs, _, _, _, info = browser_env.step(f"search[{evil}]")
    assert not info["invalid_action"] and "Page 1" in obs
    driver = browser_env.driver
    assert driver.execute_script("return typeof window.pwned") == "undefined"
    assert driver.execute_script("return document.querySelectorAll('script').length") == 0
    assert "<script>window.pwned=1</script>" in driver.find_element("css selector", ".ws-query").text


def test_bad_actions_in_the_browser_are_no_ops(envs):
    text_env, browser_env = envs["text"]
    text_env.reset(options={"task_id": "fixed_2"})
    browser_env.reset(options={"task_id": "fixed_2"})
    for bad in ("", "click[search]", "x" * 100_000, "click[日本語]", "search[]", None):
        both(text_env, browser_env, bad)
    both(text_env, browser_env, "search[" + "ünï " * 2000 + "]")  # 8 KB of unicode keywords


def test_real_server_http(home):
    from seed_gym.envs.webshop.browser import start_server
    from seed_gym.envs.webshop.server import create_app

    server, base = start_server(create_app(num_products=N, seed=5))
    try:
        with httpx.Client(base_url=base, follow_redirects=True, timeout=30) as client:
            assert client.get("/fixed_0-h").status_code == 200
            page = client.post("/fixed_0-h", data={"search_query": "y" * 100_000})
            assert page.status_code == 200 and "Page 1 (Total results:" in page.text
            assert client.post("/fixed_0-h", data={"search_query": "<b>x</b>"}).text.count("&lt;b&gt;x&lt;/b&gt;") == 1
            assert client.get("/").status_code == 200
            assert client.get("/item_page/fixed_0-h/NOPE/x/1/%7B%7D").status_code == 404
    finally:
        server.should_exit = True
