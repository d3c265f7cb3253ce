"""The policy server over HTTP: a real uvicorn server on a loopback port serving the tiny model
through the real ``hf`` backend, and the ``openai`` backend talking to it (directly, through a
flaky real proxy, and to addresses where nothing answers properly)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

from seed_gym.agents.backends.base import BackendError, Generation, Prompt, SamplingParams
from seed_gym.agents.backends.openai import OpenAIBackend
from seed_gym.agents.server import create_app

pytestmark = pytest.mark.integration
MODEL = "tiny-policy"
GREEDY = SamplingParams(max_new_tokens=16, temperature=0)
PROMPTS: list[Prompt] = [
    "You are in the kitchen. Your task is to",
    "go to the",
    [{"role": "user", "content": "Take the apple from the table."}],
    [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "look"}],
]


class CountingBackend:
    """The real backend, recording the size of every ``generate`` call (what batching did)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.tokenizer = inner.tokenizer
        self.sizes: list[int] = []

    def generate(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[Generation]:
        self.sizes.append(len(prompts))
        return self.inner.generate(prompts, params)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def hf(tiny_model_dir):
    from seed_gym.agents.backends.hf import HFBackend

    backend = HFBackend(tiny_model_dir, dtype="float32", device="cpu")
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def counting(hf) -> CountingBackend:
    return CountingBackend(hf)


@contextmanager
def running(app: Any) -> Iterator[str]:
    """A real uvicorn server for ``app`` on a free 127.0.0.1 port (the OS picks it); yields the API root."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:  # readiness poll, not a timed assertion
            if not thread.is_alive():
                raise RuntimeError("the policy server did not start")
            time.sleep(0.02)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture(scope="module")
def url(counting) -> Iterator[str]:
    with running(create_app(counting, model_name=MODEL, max_tokens_limit=64)) as api:
        yield api


def one_by_one(backend: Any, prompts: Sequence[Prompt], params: SamplingParams) -> list[Generation]:
    """The reference: the backend on each prompt alone."""
    return [backend.generate([p], params)[0] for p in prompts]


def pick_stop(text: str, rendered_prompt: str) -> str | None:
    """A stop string that greedy decoding must meet: two characters from inside the greedy text, or
    one when no pair fits. Avoided: U+FFFD (it stands for bytes a longer decoding may complete into
    another character) and a pair starting with the prompt's last character (transformers matches
    stop strings across the prompt boundary, which would end generation before the text has it)."""
    for start in range(1, len(text) - 1):
        pair = text[start:start + 2]
        if "\ufffd" not in pair and not rendered_prompt.endswith(pair[0]):
            return pair
    return next((c for c in text if c != "\ufffd"), None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- the same text as the backend in-process ------------------------------------------------------
def test_greedy_text_matches_the_hf_backend(hf, url) -> None:
    client = OpenAIBackend(url, concurrency=1)
    remote = client.generate(PROMPTS, GREEDY)
    local = one_by_one(hf, PROMPTS, GREEDY)
    assert [g.text for g in remote] == [g.text for g in local]
    assert [g.finish_reason for g in remote] == [g.finish_reason for g in local]
    assert [g.completion_tokens for g in remote] == [g.completion_tokens for g in local]
    assert [g.prompt_tokens for g in remote] == [g.prompt_tokens for g in local]
    assert client.model == MODEL  # from GET /v1/models
    assert any(g.text for g in local)  # the comparison is not between empty strings


def test_stop_strings_are_stripped_on_the_wire_and_kept_by_the_client(hf, url) -> None:
    checked = 0
    for prompt, reference in zip(PROMPTS, one_by_one(hf, PROMPTS, GREEDY)):
        stop = pick_stop(reference.text, hf.render(prompt))
        if stop is None:
            continue
        checked += 1
        params = SamplingParams(max_new_tokens=16, temperature=0, stop=(stop,))
        [local] = hf.generate([prompt], params)
        [remote] = OpenAIBackend(url).generate([prompt], params)
        assert local.text.endswith(stop) and local.finish_reason == "stop"
        assert (remote.text, remote.finish_reason) == (local.text, local.finish_reason)
        path, body = ("/chat/completions", {"messages": prompt}) if isinstance(prompt, list) else \
            ("/completions", {"prompt": prompt})
        wire = httpx.post(url + path, json={**body, "max_tokens": 16, "temperature": 0, "stop": [stop, "\x00never"]},
                          timeout=60).json()["choices"][0]
        wire_text = wire["message"]["content"] if isinstance(prompt, list) else wire["text"]
        assert wire_text + stop == local.text and wire["stop_reason"] == stop  # OpenAI's form: stripped
    assert checked == len(PROMPTS), "the tiny model's greedy texts gave too few stop strings to test"


def test_logprobs_and_token_ids_travel(hf, url) -> None:
    params = SamplingParams(max_new_tokens=8, temperature=0, logprobs=True)
    remote = OpenAIBackend(url).generate(PROMPTS[1:3], params)
    local = one_by_one(hf, PROMPTS[1:3], params)
    for r, l in zip(remote, local):
        assert l.token_ids and r.token_ids == l.token_ids
        # the server ran both prompts in one batch: float32 sums differ in the last bits
        assert r.logprobs == pytest.approx(l.logprobs, rel=1e-4, abs=1e-4)


# -- batching ---------------------------------------------------------------------------------------
def test_concurrent_requests_are_batched_and_each_gets_its_own_answer(hf, counting) -> None:
    references = [g.text for g in one_by_one(hf, PROMPTS, GREEDY)]
    # a window far longer than the client waits, so only a full batch can end it: 4 concurrent
    # requests must make exactly one call of 4 (a batcher that waited out the window would time out)
    app = create_app(counting, model_name=MODEL, batch_window_s=3600, max_batch=len(PROMPTS))
    with running(app) as api:
        counting.sizes.clear()
        client = OpenAIBackend(api, concurrency=len(PROMPTS), timeout=300, max_retries=0)
        texts = [g.text for g in client.generate(PROMPTS, GREEDY)]
        assert texts == references
        assert counting.sizes == [len(PROMPTS)]

        def separate_client(prompt: Prompt) -> str:  # four independent HTTP clients
            path, body = ("/chat/completions", {"messages": prompt}) if isinstance(prompt, list) else \
                ("/completions", {"prompt": prompt})
            choice = httpx.post(api + path, json={**body, "max_tokens": 16, "temperature": 0},
                                timeout=120).json()["choices"][0]
            return choice["message"]["content"] if isinstance(prompt, list) else choice["text"]

        with ThreadPoolExecutor(len(PROMPTS)) as pool:
            assert list(pool.map(separate_client, PROMPTS)) == references
        assert counting.sizes == [len(PROMPTS), len(PROMPTS)]
        health = httpx.get(api.removesuffix("/v1") + "/health", timeout=10).json()
        assert (health["batches"], health["max_batch_seen"], health["requests"]) == (2, 4, 8)


# -- bad input and failing servers ------------------------------------------------------------------
@pytest.mark.parametrize("path, body, status, fragment", [
    ("/chat/completions", {"messages": [{"role": "user", "content": "x"}], "n": 3}, 400, "only n=1"),
    ("/chat/completions", {"messages": [{"role": "user", "content": "x"}], "stream": True}, 400, "stream"),
    ("/completions", {"prompt": "x", "max_tokens": 65}, 400, "at most 64"),
    ("/completions", {"prompt": "x", "model": "gpt-4o"}, 404, "gpt-4o"),
    ("/completions", {"prompt": [[1, 2, 3]]}, 400, "prompt"),
    ("/completions", {"prompt": ""}, 400, "must not be empty"),  # #20 defect 3: was a 500
    ("/completions", {"prompt": ["x", ""]}, 400, "must not be empty"),
])
def test_bad_input_is_a_4xx_with_a_message(url, path, body, status, fragment) -> None:
    response = httpx.post(url + path, json=body, timeout=30)
    assert response.status_code == status
    assert fragment in response.json()["error"]["message"]


def test_client_reports_a_rejection_without_retrying(url) -> None:
    with pytest.raises(BackendError, match=r"\(404\): The model `nope` does not exist"):
        OpenAIBackend(url, model="nope", max_retries=3, backoff=5).generate(["x"], GREEDY)  # 5 s backoff unused


def test_unreachable_url_fails_after_retries() -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(BackendError, match=rf"cannot reach {dead}/completions.*after 3 attempts"):
        OpenAIBackend(dead, model="m", max_retries=2, backoff=0.01).generate(["x"], GREEDY)


def test_a_server_that_hangs_up_is_retried_each_time() -> None:
    """A real socket that accepts and closes at once: every attempt reaches it, all fail."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[int] = []

    def hang_up() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            accepted.append(1)
            conn.close()

    threading.Thread(target=hang_up, daemon=True).start()
    port = listener.getsockname()[1]
    try:
        with pytest.raises(BackendError, match=r"after 3 attempts"):
            OpenAIBackend(f"http://127.0.0.1:{port}/v1", model="m", max_retries=2, backoff=0.01).generate(["x"], GREEDY)
        assert len(accepted) == 3
    finally:
        listener.close()


def test_flaky_endpoint_is_retried(hf, url, flaky_proxy) -> None:
    """A real HTTP proxy in front of the server answers 503 to the first two POSTs, then forwards."""
    proxy = flaky_proxy(url.removesuffix("/v1"), failures=2)
    client = OpenAIBackend(f"{proxy.url}/v1", max_retries=3, backoff=0.01)
    [remote] = client.generate([PROMPTS[0]], GREEDY)
    assert remote.text == hf.generate([PROMPTS[0]], GREEDY)[0].text
    assert proxy.left == 0

