"""Fuzzing every endpoint of the three servers (#20 "keep it fixed"): the WebShop server, the
retriever (``seed-gym serve retriever``) and the policy server (``seed-gym serve policy``, the tiny
model), each a real uvicorn server on a loopback port with the limits ``seed-gym serve`` uses.

Each example is one request: paths, query strings, forms and JSON bodies drawn from the endpoint's
grammar and from junk (unicode, lone-surrogate escapes, nesting thousands deep, NaN, numbers past
int64, bodies at and over the size caps). The client's timeout is the per-call bound: a request
left unanswered is a failure, nothing is timed. What must hold: no 5xx, a body in the endpoint's
shape (HTML pages; the retriever's ``result`` rows; OpenAI's choices or error object), and the
server answering its health route after the run. Budgets (``BUDGET``) are fixed examples under the
derandomized ``fuzz`` profile; ``test_every_route_is_fuzzed`` keeps the route lists honest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import pytest
from hypothesis import given, settings, strategies as st

pytestmark = pytest.mark.integration

BUDGET = {"webshop": 300, "retriever": 200, "policy": 50}
BOUND_S = 60.0
JUNK_TEXT = st.one_of(st.text(max_size=40), st.text(st.characters(categories=["Cs", "Ll", "Nd", "Cc"]), max_size=8),
                      st.sampled_from(["", " ", "..", "%", "%00", "%ff", "~k00000000ff", "/", "\\", "?", "#",
                                       "[" * 5000, "é" * 300, "a" * 20000]))
NUMBERS = st.one_of(st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0, 1, -1, 3, 100, 101, 2**31, 2**63, True, False]))
JSON_LEAVES = st.one_of(st.none(), st.booleans(), NUMBERS, st.text(max_size=20))
JSON_VALUES = st.recursive(JSON_LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                                  st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                           max_leaves=12)


def raw_json(value: Any) -> bytes:
    """JSON as Python writes it: NaN and Infinity bare, as a careless client sends them."""
    return json.dumps(value, allow_nan=True).encode()


RAW_BODIES = st.one_of(st.binary(max_size=64), st.sampled_from([
    b"", b"{", b'{"queries": ["a"', b"\xff\xfe{}", b"[" * 100_000 + b"]" * 100_000, b"null", b"[]", b"1e999999",
    b'{"a": ' * 50_000 + b"1" + b"}" * 50_000]))


@pytest.fixture(scope="module")
def servers(tiny_model_dir) -> Iterator[dict[str, str]]:
    """The three servers, up for the module; yields their base URLs."""
    from seed_gym.agents.backends.hf import HFBackend
    from seed_gym.agents.server import create_app as policy_app
    from seed_gym.envs.searchqa.data import load_data
    from seed_gym.envs.searchqa.server import create_app as retriever_app
    from seed_gym.envs.webshop.server import create_app as webshop_app
    from seed_gym.envs.webshop.shop import get_shop
    from seed_gym.serving import serve_in_thread

    qa = load_data(entities=300)
    backend = HFBackend(tiny_model_dir, dtype="float32", device="cpu")
    apps = {"webshop": webshop_app(shop=get_shop(num_products=300)),
            "retriever": retriever_app(qa.retriever("bm25s"), qa.passages),
            "policy": policy_app(backend, model_name="tiny", max_tokens_limit=64)}
    running = {name: serve_in_thread(app) for name, app in apps.items()}
    yield {name: url for name, (_, url) in running.items()} | {"apps": apps}  # type: ignore[dict-item]
    for server, _ in running.values():
        server.should_exit = True
    backend.close()


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=BOUND_S, follow_redirects=False) as http:
        yield http


def fuzz(name: str):  # noqa: ANN201 (a decorator)
    return settings(settings.get_profile("fuzz"), max_examples=BUDGET[name])


def no_server_error(response: httpx.Response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])


# -- WebShop --------------------------------------------------------------------------------------
ASINS = st.sampled_from(["B000000000", "b0", "", "B0" + "Z" * 8, "x" * 300])
SIDS = st.one_of(st.sampled_from(["fixed_0", "fixed_3", "fixed_3-tag", "fixed_99999", "fixed_-1", "fixed_", "abc"]),
                 JUNK_TEXT)
PAGES = st.one_of(st.integers(-5, 10).map(str), st.sampled_from(["0", "99999999999999999999999", "1.5", "abc", "\u0661", ""]))
OPTIONS = st.one_of(st.just("{}"), JSON_VALUES.map(json.dumps), st.sampled_from(["[" * 5000, "{", "null", '{"a": {"b": 1}}']),
                    JUNK_TEXT)
SUB = st.sampled_from(["description", "features", "reviews", "nosuch", ""])


def webshop_request(shop_asins: list[str]) -> st.SearchStrategy[tuple[str, str, Any]]:
    asin = st.one_of(st.sampled_from(shop_asins), ASINS)
    seg = lambda s: s.map(lambda v: quote(str(v), safe="", errors="surrogatepass"))  # noqa: E731
    keywords = st.one_of(seg(JUNK_TEXT), st.sampled_from(["jeans", "a/b/c", "~k00000000ff"]))
    return st.one_of(
        st.just(("GET", "/", None)),
        st.builds(lambda s: ("GET", f"/{s}", None), seg(SIDS)),
        st.builds(lambda s, q: ("POST", f"/{s}", {"search_query": q}), seg(SIDS),
                  st.one_of(JUNK_TEXT, st.sampled_from(["é" * 400_000, "a " * 600_000]))),  # at and over the cap
        st.builds(lambda s, b: ("POST", f"/{s}", b), seg(SIDS), RAW_BODIES),
        st.builds(lambda s, k, p: ("GET", f"/search_results/{s}/{k}/{p}", None), seg(SIDS), keywords, seg(PAGES)),
        st.builds(lambda s, a, k, p, o: ("GET", f"/item_page/{s}/{a}/{k}/{p}/{o}", None),
                  seg(SIDS), seg(asin), keywords, seg(PAGES), seg(OPTIONS)),
        st.builds(lambda s, a, k, p, sub, o: ("GET", f"/item_sub_page/{s}/{a}/{k}/{p}/{sub}/{o}", None),
                  seg(SIDS), seg(asin), keywords, seg(PAGES), SUB, seg(OPTIONS)),
        st.builds(lambda s, a, o: ("GET", f"/done/{s}/{a}/{o}", None), seg(SIDS), seg(asin), seg(OPTIONS)),
        st.builds(lambda s: ("GET", f"/api/{s}/state", None), seg(SIDS)),
        st.builds(lambda p: ("GET", "/item_page/" + p, None), st.sampled_from(["x/" * 3000, "[" * 5000 + "/1/{}"])),
    )


def send(client: httpx.Client, base: str, method: str, path: str, body: Any) -> httpx.Response:
    url = base + path
    if isinstance(body, dict):  # encoded here: a lone surrogate goes out as the invalid UTF-8 a broken client sends
        form = urlencode(body, encoding="utf-8", errors="surrogatepass")
        return client.request(method, url, content=form, headers={"Content-Type": "application/x-www-form-urlencoded"})
    if isinstance(body, bytes):
        return client.request(method, url, content=body, headers={"Content-Type": "application/json"})
    return client.request(method, url)


def test_fuzzed_webshop_requests_get_pages_or_4xx(servers, client):
    base = servers["webshop"]
    shop = servers["apps"]["webshop"].state.shop
    asins = sorted(shop.products)[:20]

    @fuzz("webshop")
    @given(request=webshop_request(asins))
    def request(request: tuple[str, str, Any]) -> None:
        response = send(client, base, *request)
        no_server_error(response)
        if response.status_code == 200:
            assert response.headers["content-type"].startswith("text/html") or request[1].startswith("/api/")

    request()
    assert client.get(base + "/fixed_0").status_code == 200


def test_a_search_form_with_invalid_utf8_gets_a_page_or_4xx(servers, client):
    """The example CI's fuzzer found: a lone surrogate in the search form (invalid UTF-8 on the wire)."""
    response = send(client, servers["webshop"], "POST", "/fixed_0", {"search_query": "\ud800"})
    no_server_error(response)


# -- retriever ------------------------------------------------------------------------------------
QUERY_LISTS = st.one_of(st.lists(JUNK_TEXT, max_size=6), st.sampled_from([[], ["paris"] * 1024, ["paris"] * 1025,
                                                                          ["x" * 10_000], ["x" * 10_001]]))
TOPKS = st.one_of(NUMBERS, st.sampled_from(["3", "3.0", "abc", None, [3], {"k": 3}]))


def retrieve_body() -> st.SearchStrategy[bytes]:
    fields = st.fixed_dictionaries({}, optional={"queries": st.one_of(QUERY_LISTS, JSON_VALUES), "query": st.one_of(
        JUNK_TEXT, JSON_VALUES), "topk": TOPKS, "return_scores": st.one_of(st.booleans(), JSON_VALUES)})
    return st.one_of(fields.map(raw_json), JSON_VALUES.map(raw_json), RAW_BODIES,
                     st.just(raw_json({"queries": ["a" * 10_000] * 1024, "topk": 3})),  # the largest legal body
                     st.just(b'{"queries": ["' + b"a" * (MAX_RETRIEVER_BODY + 1) + b'"]}'))


from seed_gym.envs.searchqa.server import MAX_BODY_BYTES as MAX_RETRIEVER_BODY  # noqa: E402


def test_fuzzed_retrieve_bodies_get_results_or_4xx(servers, client):
    base = servers["retriever"]

    @fuzz("retriever")
    @given(body=retrieve_body())
    def request(body: bytes) -> None:
        response = client.post(base + "/retrieve", content=body, headers={"Content-Type": "application/json"})
        no_server_error(response)
        assert response.status_code in (200, 400, 413, 422), response.text[:300]
        if response.status_code == 200:
            sent = json.loads(body)
            rows = response.json()["result"]
            assert len(rows) == (len(sent["queries"]) if sent.get("queries") is not None else 1) or rows == []
        elif response.status_code == 422:
            assert len(response.content) < 20_000  # the input is never echoed back

    request()
    assert client.get(base + "/health").json()["status"] == "ok"


# -- policy ---------------------------------------------------------------------------------------
MESSAGES = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant", "tool", "robot", ""]),
                                           "content": st.one_of(JUNK_TEXT, JSON_VALUES,
                                                                st.just([{"type": "text", "text": "hi"}]))}),
                    max_size=4)
SAMPLING = {"max_tokens": st.one_of(st.integers(-2, 6), st.sampled_from([64, 65, 2**63, 1.5, "4", None])),
            "temperature": st.one_of(st.floats(-1, 3), st.sampled_from([0, float("nan"), "hot", None])),
            "top_p": st.one_of(st.floats(-0.5, 1.5), st.sampled_from([0, float("inf")])), "top_k": NUMBERS,
            "n": st.one_of(st.integers(-1, 17), st.just(1)), "seed": NUMBERS,
            "stop": st.one_of(JUNK_TEXT, st.lists(st.text(max_size=4), max_size=18), JSON_VALUES),
            "stream": st.one_of(st.booleans(), JSON_VALUES), "logprobs": st.one_of(st.booleans(), st.integers(-1, 3)),
            "model": st.sampled_from(["tiny", "other", "", None]), "echo": st.booleans(),
            "tools": st.sampled_from([[], [{"type": "function"}]]), "unknown_field": JSON_VALUES}
MAX_PROMPT_CHARS = 1_000_000


def completion_body() -> st.SearchStrategy[tuple[str, bytes]]:
    prompts = st.one_of(JUNK_TEXT, st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=3), JSON_VALUES,
                        st.sampled_from(["x" * MAX_PROMPT_CHARS, "x" * (MAX_PROMPT_CHARS + 1), [""], [1, 2, 3],
                                         ["go"] * 257]))
    sampling = st.fixed_dictionaries({}, optional=SAMPLING)
    chat = st.builds(lambda m, s, c: {"messages": m, **s, **c}, st.one_of(MESSAGES, JSON_VALUES), sampling,
                     st.fixed_dictionaries({}, optional={"continue_final_message": st.booleans(),
                                                         "add_generation_prompt": st.booleans(),
                                                         "top_logprobs": st.integers(-1, 2),
                                                         "max_completion_tokens": st.integers(-1, 4)}))
    completion = st.builds(lambda p, s: {"prompt": p, **s}, prompts, sampling)
    return st.one_of(st.tuples(st.just("/v1/chat/completions"), st.one_of(chat.map(raw_json), RAW_BODIES)),
                     st.tuples(st.just("/v1/completions"), st.one_of(completion.map(raw_json), RAW_BODIES)),
                     st.tuples(st.just("/v1/completions"), st.just(b'{"prompt": "' + b"a" * (9 * 2**20) + b'"}')))


def test_fuzzed_policy_requests_get_completions_or_openai_errors(servers, client):
    base = servers["policy"]

    @fuzz("policy")
    @given(request=completion_body())
    def request(request: tuple[str, bytes]) -> None:
        path, body = request
        response = client.post(base + path, content=body, headers={"Content-Type": "application/json"})
        no_server_error(response)
        if response.status_code == 200:
            sent = json.loads(body)
            prompts = 1 if "messages" in sent or isinstance(sent["prompt"], str) else len(sent["prompt"])
            choices = response.json()["choices"]
            assert len(choices) == prompts * sent.get("n", 1)
            assert all(isinstance(c.get("text", c.get("message", {}).get("content")), str) for c in choices)
        elif response.status_code != 413:
            error = response.json()["error"]
            assert isinstance(error["message"], str) and len(response.content) < 20_000

    request()
    for path in ("/health", "/v1/models", "/v1/models/tiny"):
        assert client.get(base + path).status_code == 200
    for model in ("other", "a/b", "é" * 100):
        assert client.get(base + "/v1/models/" + quote(model, safe="/")).status_code == 404


# -- coverage of the route lists ------------------------------------------------------------------
FUZZED_ROUTES = {
    "webshop": {"/", "/{sid}", "/search_results/{sid}/{keywords:path}/{page_num}",
                "/item_page/{sid}/{asin}/{keywords:path}/{page_num}/{options}",
                "/item_sub_page/{sid}/{asin}/{keywords:path}/{page_num}/{sub_page}/{options}",
                "/done/{sid}/{asin}/{options}", "/api/{sid}/state"},
    "retriever": {"/health", "/retrieve"},
    "policy": {"/health", "/v1/models", "/v1/models/{model:path}", "/v1/chat/completions", "/v1/completions"},
}


def test_every_route_is_fuzzed(servers):
    for name, app in servers["apps"].items():
        routes = {route.path for route in app.routes if not route.path.startswith(("/docs", "/openapi", "/redoc"))}
        assert routes == FUZZED_ROUTES[name], name


def test_nan_and_infinity_are_4xx_where_a_number_is_expected(servers, client):
    """JSON's non-standard NaN/Infinity (Python clients send them) are refused by name, never a 500."""
    for value in (b"NaN", b"Infinity", b"-Infinity"):
        retrieve = client.post(servers["retriever"] + "/retrieve", content=b'{"queries": ["a"], "topk": ' + value + b"}",
                               headers={"Content-Type": "application/json"})
        assert retrieve.status_code == 422 and retrieve.json()["detail"][0]["loc"] == ["body", "topk"]
        policy = client.post(servers["policy"] + "/v1/completions", headers={"Content-Type": "application/json"},
                             content=b'{"prompt": "go", "max_tokens": 2, "temperature": ' + value + b"}")
        assert policy.status_code == 400 and policy.json()["error"]["param"] == "temperature"
