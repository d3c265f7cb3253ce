"""The WebShop server keeps state per session and bounds it per session and per client: one
session's or one client's traffic never changes another's pages (issue 20, defect 4)."""

from __future__ import annotations

import gc
import html
import re
import time
import tracemalloc

import pytest
from fastapi.testclient import TestClient

from seed_gym.envs.webshop.env import WebShopEnv
from seed_gym.envs.webshop.pages import MAX_QUERY_CHARS
from seed_gym.envs.webshop.server import create_app

N = 300
NODE_RE = re.compile(r'<(?:div|a|button)[^>]*class="ws-node[^"]*"[^>]*>(.*?)</(?:div|a|button)>', re.S)
HREF_RE = re.compile(r'data-click="([^"]*)"[^>]*href="([^"]*)"', re.S)


@pytest.fixture(scope="module")
def env():
    return WebShopEnv(num_products=N, seed=5)


def page_text(body: str) -> str:
    return " [SEP] ".join(t for t in (html.unescape(m) for m in NODE_RE.findall(body)) if t != "")


def links(body: str) -> dict[str, str]:
    return {html.unescape(k): html.unescape(v) for k, v in HREF_RE.findall(body)}


def long_query(env, words: int = 220) -> str:
    """Over a thousand characters of catalogue words (so the search finds pages of results)."""
    vocabulary = " ".join(g["instruction_text"].lower() for g in env.shop.goals[:40]).split()
    return " ".join(vocabulary[:words])


def client_at(app, address: str) -> TestClient:
    return TestClient(app, client=(address, 40000))


def test_one_sessions_long_queries_leave_another_sessions_next_page_alone(env):
    app = create_app(shop=env.shop)
    client = client_at(app, "10.0.0.1")
    query = long_query(env)
    assert len(query) > 1000
    results = client.post("/fixed_3-mine", data={"search_query": query})
    next_url = links(results.text)["next >"]
    for i in range(1002):  # another session posts many distinct long queries
        client.post("/fixed_4-other", data={"search_query": f"{i} {query}"}, follow_redirects=False)
    env.reset(options={"task_id": "fixed_3"})
    env.step(f"search[{query}]")
    expected, *_ = env.step("click[next >]")
    page = client.get(next_url)
    assert page.status_code == 200 and page_text(page.text) == expected
    assert "Total results: 0" not in expected


def test_long_queries_do_not_pile_up_in_memory(env):
    app = create_app(shop=env.shop)
    client = client_at(app, "10.0.0.1")
    client.post("/fixed_1-warm", data={"search_query": "warm up " * 200}, follow_redirects=False)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for i in range(40):  # 40 distinct 200 kB queries: 8 MB if the server kept them
            client.post("/fixed_1-big", data={"search_query": f"q{i} " + "abcdefgh " * 22_000},
                        follow_redirects=False)
        gc.collect()
        grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
    finally:
        tracemalloc.stop()
    assert grown < 2 * 2**20, f"the server kept {grown} bytes of 40 posted queries"


def test_a_query_over_the_cap_is_searched_by_its_first_characters_in_both_envs(env):
    app = create_app(shop=env.shop)
    client = client_at(app, "10.0.0.1")
    query = long_query(env, words=400)
    assert len(query) > MAX_QUERY_CHARS
    env.reset(options={"task_id": "fixed_2"})
    long_obs, *_ = env.step(f"search[{query}]")
    env.reset(options={"task_id": "fixed_2"})
    capped_obs, *_ = env.step(f"search[{query[:MAX_QUERY_CHARS]}]")
    assert long_obs == capped_obs
    client.get("/fixed_2-cap")
    assert page_text(client.post("/fixed_2-cap", data={"search_query": query}).text) == long_obs


def test_one_clients_session_flood_evicts_only_its_own_sessions(env):
    app = create_app(shop=env.shop, max_sessions=100, state_api=True)
    mine, flood = client_at(app, "10.0.0.1"), client_at(app, "10.0.0.2")
    mine.get("/fixed_3-mine")
    mine.post("/fixed_3-mine", data={"search_query": "tea"})
    for i in range(300):
        flood.get(f"/fixed_0-flood{i}")
    assert len(app.state.sessions) <= 100
    assert mine.get("/api/fixed_3-mine/state").json()["page"] == "results"


def test_a_flood_from_the_shared_loopback_address_never_evicts_a_live_episode(env):
    """Every local client is 127.0.0.1: a flood must be refused, not paid for with others' episodes."""
    app = create_app(shop=env.shop, max_sessions=50, state_api=True)
    mine, flood = client_at(app, "127.0.0.1"), client_at(app, "127.0.0.1")
    mine.get("/fixed_3-mine")
    mine.post("/fixed_3-mine", data={"search_query": "tea"})
    statuses = [flood.get(f"/fixed_0-flood{i}").status_code for i in range(200)]
    assert statuses == [200] * 49 + [503] * 151
    refused = flood.get("/fixed_0-one-more")
    assert refused.status_code == 503 and "live sessions are never evicted" in refused.json()["detail"]
    assert 0 < int(refused.headers["Retry-After"]) <= 600
    assert mine.get("/api/fixed_3-mine/state").json()["page"] == "results"


def test_a_client_at_its_quota_of_live_sessions_is_refused_with_429(env):
    app = create_app(shop=env.shop, max_sessions_per_client=5, state_api=True)
    mine, other = client_at(app, "10.0.0.1"), client_at(app, "10.0.0.2")
    other.post("/fixed_3-other", data={"search_query": "tea"})
    statuses = [mine.post(f"/fixed_0-s{i}", data={"search_query": "tea"}).status_code for i in range(8)]
    assert statuses == [200] * 5 + [429] * 3
    assert sum(f"fixed_0-s{i}" in app.state.sessions for i in range(8)) == 5
    assert mine.get("/api/fixed_0-s0/state").json()["page"] == "results"
    assert other.get("/api/fixed_3-other/state").json()["page"] == "results"


def test_an_idle_session_makes_room_for_a_new_one(env):
    app = create_app(shop=env.shop, max_sessions=3, session_idle_s=0.5, state_api=True)
    client = client_at(app, "127.0.0.1")
    for i in range(3):
        client.get(f"/fixed_0-s{i}")
    assert client.get("/fixed_0-s3").status_code == 503
    time.sleep(0.6)
    client.get("/fixed_0-s1")  # used again: live, while s0 and s2 stay idle
    assert client.get("/fixed_0-s3").status_code == 200
    assert "fixed_0-s0" not in app.state.sessions
    assert all(sid in app.state.sessions for sid in ("fixed_0-s1", "fixed_0-s2", "fixed_0-s3"))


def test_a_finished_episode_makes_room_for_a_new_one(env):
    app = create_app(shop=env.shop, max_sessions=2, state_api=True)
    client = client_at(app, "127.0.0.1")
    client.post("/fixed_3-live", data={"search_query": "tea"})
    bought = client.post("/fixed_3-bought", data={"search_query": "tea"})
    asin = next(iter(app.state.sessions["fixed_3-bought"].session.page_results()))
    assert client.get(f"/done/fixed_3-bought/{asin}/%7B%7D").status_code == 200 and bought.status_code == 200
    assert client.get("/fixed_0-new").status_code == 200
    assert "fixed_3-bought" not in app.state.sessions
    assert client.get("/api/fixed_3-live/state").json()["page"] == "results"


@pytest.mark.parametrize("limits", [{"max_sessions": 0}, {"max_sessions_per_client": 0}, {"session_idle_s": 0}])
def test_bad_session_limits_are_one_clear_error(env, limits):
    with pytest.raises(ValueError, match=next(iter(limits))):
        create_app(shop=env.shop, **limits)
