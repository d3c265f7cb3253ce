"""The retrieval server over HTTP: a real `seed-gym serve retriever` (uvicorn) on a free loopback port."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from seed_gym.envs.searchqa import protocol
from seed_gym.envs.searchqa.data import load_data

pytestmark = pytest.mark.integration
ENTITIES = 300


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    data = load_data(entities=ENTITIES)
    data.retriever("bm25s")  # build once here, the server loads it
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "seed_gym.cli", "serve", "retriever", "--entities",
                                str(ENTITIES), "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env=dict(os.environ))
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):  # wait for startup (not a timed assertion: only a readiness poll)
            if process.poll() is not None:
                raise RuntimeError(process.stdout.read().decode() if process.stdout else "server exited")
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url, data
    finally:
        process.terminate()
        process.wait(timeout=30)


class SearchR1Client:
    """Search-R1's retrieval client path, written from its documented shape (docs/benchmarks.md 3.1,
    3.2): every turn posts the batch's search queries (possibly none) with ``requests``-style JSON,
    reads ``response.json()["result"]`` and formats each row as ``_passages2string`` does."""

    ACTION = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)

    def __init__(self, url: str, topk: int = 3) -> None:
        self.url, self.topk = url, topk

    def batch_search(self, queries: list[str]) -> list[str]:
        payload = {"queries": queries, "topk": self.topk, "return_scores": True}
        results = httpx.post(self.url + "/retrieve", json=payload, timeout=60).json()["result"]
        return [self.passages2string(result) for result in results]

    @staticmethod
    def passages2string(retrieval: list[dict]) -> str:
        reference = ""
        for idx, doc_item in enumerate(retrieval):
            content = doc_item["document"]["contents"]
            title, text = content.split("\n")[0], "\n".join(content.split("\n")[1:])
            reference += f"Doc {idx + 1}(Title: {title}) {text}\n"
        return reference

    def execute_predictions(self, responses: list[str]) -> list[str]:
        """One turn of a batch: the next observation per row (search, answer or invalid)."""
        actions = []
        for response in responses:
            match = self.ACTION.search(response)
            actions.append((match.group(1), match.group(2).strip()) if match else (None, ""))
        results = self.batch_search([content for action, content in actions if action == "search"])
        assert len(results) == sum(action == "search" for action, _ in actions)
        observations = []
        for action, _ in actions:
            if action == "answer":
                observations.append("")
            elif action == "search":
                observations.append(f"\n\n<information>{results.pop(0).strip()}</information>\n\n")
            else:
                observations.append(protocol.INVALID_TURN_MESSAGE)
        return observations


def test_health(server) -> None:
    url, data = server
    health = httpx.get(url + "/health").json()
    assert health["status"] == "ok" and health["passages"] == len(data.passages) and health["backend"] == "bm25s"


def test_search_r1_client_matches_the_env(server) -> None:
    url, data = server
    questions = [q for q in data.questions.values() if q["split"] == "test"][:20]
    queries = [q["metadata"]["hops"][0]["query"] for q in questions]
    observations = SearchR1Client(url).execute_predictions([f"<search> {q} </search>" for q in queries])
    retriever = data.retriever("bm25s")
    for observation, hits in zip(observations, retriever.search(queries, 3)):
        assert observation == protocol.information_block([data.passages[h.doc_id] for h in hits])


def test_search_r1_client_turn_where_no_row_searches(server) -> None:
    """Search-R1 posts ``queries: []`` on such a turn and reads ``result``: it must get ``[]``."""
    url, _ = server
    before = httpx.get(url + "/health").json()["queries"]
    client = SearchR1Client(url)
    assert client.execute_predictions(["<answer> Paris </answer>", "no tags"]) == ["", protocol.INVALID_TURN_MESSAGE]
    assert client.execute_predictions([]) == []
    assert httpx.get(url + "/health").json()["queries"] == before  # nothing was searched


def test_search_r1_client_mixed_batch(server) -> None:
    url, data = server
    query = next(iter(data.questions.values()))["metadata"]["hops"][0]["query"]
    observations = SearchR1Client(url).execute_predictions(
        ["<answer> x </answer>", f"<think>hm</think><search> {query} </search>", "junk"])
    hits = data.retriever("bm25s").search([query], 3)[0]
    assert observations == ["", protocol.information_block([data.passages[h.doc_id] for h in hits]),
                            protocol.INVALID_TURN_MESSAGE]


@pytest.mark.parametrize("payload", [
    {"queries": []},
    {"queries": [], "topk": 3, "return_scores": True},
    {"queries": [], "topk": 0, "return_scores": False},
])
def test_empty_batch_is_an_empty_result(server, payload) -> None:
    url, _ = server
    response = httpx.post(url + "/retrieve", json=payload)
    assert response.status_code == 200 and response.json() == {"result": []}


@pytest.mark.parametrize("extra, rows", [({}, 3), ({"topk": None}, 3), ({"topk": 0}, 3), ({"topk": 2}, 2),
                                         ({"topk": "2"}, 2), ({"topk": 2.0}, 2)])
def test_topk_as_search_r1_reads_it(server, extra, rows) -> None:
    """Missing, null or zero: the server's default (3); otherwise pydantic's lax int."""
    url, _ = server
    body = httpx.post(url + "/retrieve", json={"queries": ["capital", "river"], "return_scores": True, **extra})
    assert body.status_code == 200 and [len(r) for r in body.json()["result"]] == [rows, rows]


def test_scores_and_document_fields(server) -> None:
    url, data = server
    query = next(iter(data.questions.values()))["metadata"]["hops"][0]["query"]
    (row,) = httpx.post(url + "/retrieve", json={"queries": [query], "topk": 2, "return_scores": True}).json()["result"]
    hits = data.retriever("bm25s").search([query], 2)[0]
    assert [r["document"]["id"] for r in row] == [h.doc_id for h in hits]
    assert [r["score"] for r in row] == pytest.approx([h.score for h in hits])
    doc = row[0]["document"]
    assert doc["contents"] == f'"{doc["title"]}"\n{doc["text"]}'


def test_single_query_form(server) -> None:
    url, data = server
    body = httpx.post(url + "/retrieve", json={"query": "capital", "topk": 3, "return_scores": False}).json()
    assert len(body["result"]) == 1 and len(body["result"][0]) == 3
    assert set(body["result"][0][0]) == {"id", "contents", "title", "text"}
    default = httpx.post(url + "/retrieve", json={"queries": ["capital"]}).json()["result"][0]
    assert len(default) == 3  # the server's default top-k


def test_concurrent_requests_each_get_their_own_results(server) -> None:
    url, data = server
    retriever = data.retriever("bm25s")
    hops = [h["query"] for q in data.questions.values() for h in q["metadata"]["hops"]][:256]
    jobs = [(hops[i:i + 4], 1 + i % 5) for i in range(0, len(hops), 4)]

    def call(job):
        queries, k = job
        body = httpx.post(url + "/retrieve", json={"queries": queries, "topk": k, "return_scores": True},
                          timeout=60).json()
        return [[d["document"]["id"] for d in row] for row in body["result"]]

    with ThreadPoolExecutor(32) as pool:
        got = list(pool.map(call, jobs))
    for (queries, k), ids in zip(jobs, got):
        assert ids == [[h.doc_id for h in hits] for hits in retriever.search(queries, k)]
    health = httpx.get(url + "/health").json()
    assert health["queries"] >= len(hops) and health["batches"] <= health["queries"]


@pytest.mark.parametrize("payload, fragment", [
    ({}, "exactly one of"),
    ({"queries": ["a"], "query": "b"}, "exactly one of"),
    ({"queries": "not a list"}, "queries"),
    ({"queries": [1, 2]}, "queries"),
    ({"queries": ["a"] * 2000}, "queries"),
    ({"queries": ["a"], "topk": -1}, "topk"),
    ({"queries": ["a"], "topk": 10_000}, "topk"),
    ({"queries": ["a"], "topk": "three"}, "topk"),
    ({"queries": ["a"], "topk": 2.5}, "topk"),
    ({"query": "x" * 20_000}, "at most"),
    ({"queries": ["a"], "return_scores": "maybe"}, "return_scores"),
])
def test_bad_input_is_422_with_a_message(server, payload, fragment) -> None:
    url, _ = server
    response = httpx.post(url + "/retrieve", json=payload)
    assert response.status_code == 422
    assert fragment in response.text


@pytest.mark.parametrize("topk", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_topk_is_422_not_500(server, topk) -> None:
    url, _ = server
    body = '{"queries": ["a"], "topk": %s}' % topk  # what Python's json.dumps writes for nan / inf
    response = httpx.post(url + "/retrieve", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422 and "topk" in response.text


def test_a_422_does_not_echo_a_large_input(server) -> None:
    url, _ = server
    response = httpx.post(url + "/retrieve", json={"queries": ["a"], "topk": "x" * 5_000_000}, timeout=60)
    assert response.status_code == 422 and "topk" in response.text
    assert len(response.content) < 10_000


def test_a_body_over_the_cap_is_413_before_it_is_parsed(server) -> None:
    from seed_gym.envs.searchqa.server import MAX_BODY_BYTES

    url, _ = server
    response = httpx.post(url + "/retrieve", content=b" " * (MAX_BODY_BYTES + 1),
                          headers={"content-type": "application/json"}, timeout=60)
    assert response.status_code == 413

    def chunks():  # no Content-Length: the cap applies as the body streams in
        for _ in range(MAX_BODY_BYTES // 2**20 + 2):
            yield b" " * 2**20

    response = httpx.post(url + "/retrieve", content=chunks(), headers={"content-type": "application/json"}, timeout=60)
    assert response.status_code == 413
    assert httpx.post(url + "/retrieve", json={"query": "the"}).status_code == 200


def test_malformed_json_and_server_survives(server) -> None:
    url, _ = server
    response = httpx.post(url + "/retrieve", content=b"{nope", headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert httpx.post(url + "/retrieve", json={"query": "\x00\u2603 the"}).json() == {"result": [[]]}
    assert httpx.get(url + "/health").status_code == 200


def test_env_through_the_server(server) -> None:
    import seed_gym

    url, data = server
    local = seed_gym.make("searchqa", entities=ENTITIES)
    remote = seed_gym.make("searchqa", entities=ENTITIES, server=url)
    task_id = local.task_set().split("syn_hotpotqa").task_ids[0]
    query = data.questions[task_id]["metadata"]["hops"][0]["query"]
    for env in (local, remote):
        env.reset(options={"task_id": task_id})
    assert local.step(f"<search>{query}</search>")[0] == remote.step(f"<search>{query}</search>")[0]
    remote.close()


def test_env_with_a_dead_server_fails_clearly() -> None:
    import seed_gym
    from seed_gym.core import MissingDataError

    with pytest.raises(MissingDataError, match="no retrieval server"):
        seed_gym.make("searchqa", entities=ENTITIES, server=f"http://127.0.0.1:{_free_port()}")


def test_env_retries_a_server_that_fails_then_recovers(server, flaky_proxy) -> None:
    """A real HTTP proxy in front of the real server answers 503 twice, then passes through."""
    import seed_gym

    url, data = server
    proxy = flaky_proxy(url, failures=2)
    local = seed_gym.make("searchqa", entities=ENTITIES)
    remote = seed_gym.make("searchqa", entities=ENTITIES, server=proxy.url)
    task_id = local.task_set().split("syn_nq").task_ids[0]
    query = data.questions[task_id]["metadata"]["hops"][0]["query"]
    for env in (local, remote):
        env.reset(options={"task_id": task_id})
    assert remote.step(f"<search>{query}</search>")[0] == local.step(f"<search>{query}</search>")[0]
    assert proxy.left == 0
    remote.close()
