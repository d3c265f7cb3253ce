"""HTTP tests of the WebShop web app (FastAPI TestClient): routes, sessions, bad input, escaping."""

from __future__ import annotations

import html
import re
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from seed_gym.envs.webshop.env import WebShopEnv
from seed_gym.envs.webshop.server import create_app

N = 300
NODE_RE = re.compile(r'<(?:div|a|button)[^>]*class="ws-node[^"]*"[^>]*>(.*?)</(?:div|a|button)>', re.S)
HREF_RE = re.compile(r'data-click="([^"]*)"[^>]*href="([^"]*)"', re.S)


@pytest.fixture(scope="module")
def env():
    return WebShopEnv(num_products=N, seed=5, expert=True)  # tests/conftest.py isolates the cache


@pytest.fixture(scope="module")
def client(env):
    return TestClient(create_app(shop=env.shop, state_api=True))


def test_the_goal_revealing_state_api_is_off_by_default(env):
    closed = TestClient(create_app(shop=env.shop))
    closed.get("/fixed_3-x")
    response = closed.get("/api/fixed_3-x/state")
    assert response.status_code == 404 and "instruction" not in response.text
    assert env.shop.goal("fixed_3")["instruction_text"] not in response.text


def page_text(body: str) -> str:
    return " [SEP] ".join(t for t in (html.unescape(m) for m in NODE_RE.findall(body)) if t != "")


def links(body: str) -> dict[str, str]:
    return {html.unescape(k): html.unescape(v) for k, v in HREF_RE.findall(body)}


def test_scripted_episode_matches_text_env(env, client):
    obs, info = env.reset(options={"task_id": "fixed_3"})
    response = client.get("/fixed_3-ep1")
    assert response.status_code == 200 and page_text(response.text) == obs
    while True:
        action = info["expert_action"]
        obs, reward, term, _, info = env.step(action)
        arg = action[action.index("[") + 1:-1]
        if action.startswith("search["):
            response = client.post("/fixed_3-ep1", data={"search_query": arg})
        else:
            response = client.get(links(response.text)[arg])
        assert response.status_code == 200
        assert page_text(response.text) == obs
        if term:
            break
    assert reward == 1.0 and 'data-reward="1.0"' in response.text
    state = client.get("/api/fixed_3-ep1/state").json()
    assert state["done"] and state["reward"] == 1.0


def test_sessions_are_per_episode(client, env):
    client.get("/fixed_0-a")
    client.get("/fixed_1-b")
    client.post("/fixed_0-a", data={"search_query": "tea"})
    assert client.get("/api/fixed_0-a/state").json()["page"] == "results"
    assert client.get("/api/fixed_1-b/state").json()["page"] == "start"
    assert client.get("/api/fixed_1-b/state").json()["goal"] == env.shop.goal("fixed_1")["instruction_text"]


def test_root_redirects_to_a_new_session(client):
    response = client.get("/", follow_redirects=False)
    assert response.status_code == 303 and re.fullmatch(r"/[0-9a-f]{32}", response.headers["location"])


def test_html_in_search_terms_is_escaped(client):
    evil = '<script>window.pwned=1</script><img src=x onerror="alert(1)">'
    response = client.post("/fixed_2-x", data={"search_query": evil})
    assert response.status_code == 200
    assert "<script>window.pwned" not in response.text and "<img src=x" not in response.text
    assert "&lt;script&gt;window.pwned=1&lt;/script&gt;" in response.text


@pytest.mark.parametrize("query", ["x" * 100_000, "ünïcödé 日本語 ☃", "a/b/c", "  ", "%2F..%2F", "\x00\x1f"])
def test_bad_search_input_never_breaks_the_server(client, query):
    response = client.post("/fixed_4-bad", data={"search_query": query})
    assert response.status_code == 200
    assert client.get("/fixed_4-bad").status_code == 200


def test_bad_urls_are_client_errors(client):
    assert client.get("/item_page/fixed_0-z/NOPE/tea/1/%7B%7D").status_code == 404
    assert client.get("/item_sub_page/fixed_0-z/NOPE/tea/1/secret/%7B%7D").status_code == 404
    assert client.get("/fixed_99999999").status_code == 404
    assert client.get("/search_results/fixed_0-z/tea/notanumber").status_code == 422
    # malformed options are ignored, not errors
    asin = next(iter(client.app.state.shop.products))
    assert client.get(f"/item_page/fixed_0-z/{asin}/tea/1/%7Bbroken").status_code == 200
    assert client.get(f"/done/fixed_0-z/{asin}/%5B1%2C2%5D").status_code == 200


@pytest.mark.parametrize("options", ["[" * 5000, '{"a": ' + "[" * 5000, '{"size": ' + "[" * 900 + "]" * 900 + "}"])
def test_deeply_nested_options_in_a_url_are_no_options_not_a_500(client, env, options):
    client.get("/fixed_2-deep")
    asin = env.shop.goal("fixed_2")["asin"]
    response = client.get(f"/item_page/fixed_2-deep/{asin}/shoes/1/{quote(options, safe='')}")
    assert response.status_code == 200


def test_a_body_over_the_cap_is_413(client):
    from seed_gym.envs.webshop.server import MAX_BODY_BYTES

    response = client.post("/fixed_1-big", data={"search_query": "x" * (MAX_BODY_BYTES + 1)})
    assert response.status_code == 413
    assert client.post("/fixed_1-big", data={"search_query": "shoes"}, follow_redirects=False).status_code in (302, 303)
