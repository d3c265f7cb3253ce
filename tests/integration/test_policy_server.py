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
    ("/chat/completions", {"messages": [{"role": "user", "content": "x"}], "n": 17}, 400, "n"),
    ("/completions", {"prompt": ["x"] * 100, "n": 3}, 400, "over 256 generations"),
    ("/completions", {"prompt": ["x" * 600_000, "y" * 600_000]}, 400, "exceed 1000000 characters"),
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


@pytest.mark.parametrize("path, raw, status, fragment", [
    # found by the server fuzz suite (tests/integration/test_fuzz_servers.py):
    ("/chat/completions", b"\x80", 400, "parsing the body"),  # was {"detail": ...}, not OpenAI's shape
    ("/completions", b"[" * 100_000 + b"]" * 100_000, 400, "parsing the body"),  # likewise
    ("/completions", b'{"prompt": "ok \\ud800", "max_tokens": 2}', 400, "valid Unicode"),  # was a 500
    ("/chat/completions", b'{"messages": [{"role": "user", "content": "\\udfff"}], "max_tokens": 2}', 400,
     "valid Unicode"),  # was a 500
    ("/completions", b'{"prompt": "ok", "max_tokens": 2, "stop": ["\\ud800"]}', 400, "valid Unicode"),
    ("/completions", b'{"prompt": "ok", "max_tokens": 2, "model": "\\ud800"}', 404, "does not exist"),  # was a 500
])
def test_bodies_it_cannot_read_and_text_that_is_not_unicode_get_openai_errors(url, path, raw, status,
                                                                               fragment) -> None:
    response = httpx.post(url + path, content=raw, headers={"Content-Type": "application/json"}, timeout=30)
    assert response.status_code == status, response.text[:300]
    assert fragment in response.json()["error"]["message"]


def test_a_tiny_temperature_with_logprobs_samples_near_greedy(url) -> None:
    """Found by the server fuzz suite: temperature 1e-40 gave NaN scores: empty text, and with
    logprobs a 500."""
    body = {"prompt": "go to", "max_tokens": 4, "logprobs": 1, "seed": 1}
    tiny = httpx.post(url + "/completions", json={**body, "temperature": 1e-40}, timeout=60)
    greedy = httpx.post(url + "/completions", json={**body, "temperature": 0}, timeout=60)
    assert tiny.status_code == greedy.status_code == 200, tiny.text[:300]
    assert tiny.json()["choices"][0]["text"] == greedy.json()["choices"][0]["text"] != ""


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



# -- sampling, refusals and caps through the official openai client (#19 defect 5, #20 defect 3) -----
@pytest.fixture(scope="module")
def openai_client(hf):
    """The official client against a server over the ``hf`` backend itself (generating in steps)."""
    openai = pytest.importorskip("openai")
    with running(create_app(hf, model_name=MODEL, max_tokens_limit=64)) as api:
        yield openai.OpenAI(base_url=api, api_key="unused", max_retries=0, timeout=120)


def test_requests_without_a_seed_sample_independently_and_a_seed_repeats(openai_client) -> None:
    def sample(**extra: Any) -> list[str]:
        reply = openai_client.completions.create(model=MODEL, prompt="go to the", max_tokens=12, temperature=1,
                                                 **extra)
        return [choice.text for choice in reply.choices]

    unseeded = [sample()[0] for _ in range(6)]
    assert len(set(unseeded)) > 1  # was six copies of one text: every request sampled with seed 0
    assert sample(seed=7) == sample(seed=7)
    three = sample(seed=7, n=3)
    assert len(three) == 3 and len(set(three)) > 1 and three[0] == sample(seed=7)[0]  # choice 0 is the n=1 sample
    chat = openai_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "look"}],
                                                 max_tokens=8, temperature=1, n=2)
    assert [c.index for c in chat.choices] == [0, 1]


def test_an_over_long_prompt_is_refused_as_openai_does(openai_client, hf) -> None:
    import openai

    long_prompt = "go to the table " * hf.max_model_len
    with pytest.raises(openai.BadRequestError) as refused:
        openai_client.completions.create(model=MODEL, prompt=long_prompt, max_tokens=8)
    assert refused.value.code == "context_length_exceeded"
    assert "maximum context length is 4096 tokens" in refused.value.message
    with pytest.raises(openai.BadRequestError) as refused:  # the prompt alone fits; with max_tokens it does not
        openai_client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "go " * (hf.max_model_len - 40)}], max_tokens=64)
    assert refused.value.code == "context_length_exceeded" and refused.value.param == "messages"


@pytest.mark.parametrize("field, value", [
    ("tools", [{"type": "function", "function": {"name": "f", "parameters": {}}}]), ("tool_choice", "required"),
    ("response_format", {"type": "json_object"}), ("presence_penalty", 0.5), ("frequency_penalty", 1.0),
    ("logit_bias", {"5": 10}),
])
def test_unsupported_chat_fields_are_refused_by_name(openai_client, field, value) -> None:
    import openai

    with pytest.raises(openai.BadRequestError) as refused:
        openai_client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x"}],
                                              max_tokens=4, **{field: value})
    assert refused.value.param == field and f"`{field}`" in refused.value.message


def test_unsupported_completion_fields_are_refused_and_defaults_pass(openai_client) -> None:
    import openai

    with pytest.raises(openai.BadRequestError, match="`echo`"):
        openai_client.completions.create(model=MODEL, prompt="x", max_tokens=4, echo=True)
    reply = openai_client.completions.create(model=MODEL, prompt="x", max_tokens=4, echo=False, presence_penalty=0,
                                             frequency_penalty=0, logit_bias={})
    assert reply.choices[0].text is not None


def test_a_body_over_the_cap_is_a_413(url) -> None:
    response = httpx.post(url + "/completions", content=b'{"prompt": "' + b"x" * (9 * 2**20) + b'"}',
                          headers={"Content-Type": "application/json"}, timeout=60)
    assert response.status_code == 413 and "request body over" in response.text


class SteppingBackend:
    """The real ``hf`` backend generating in steps, recording every row it began and every step."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.name, self.tokenizer = inner, inner.name, inner.tokenizer
        self.rows: list[tuple[int, Any]] = []  # (max_new_tokens, the row)
        self.finished: list[int] = []         # max_new_tokens of each row, in the order rows finished

    def begin(self, prompt: Prompt, params: SamplingParams, seed: int) -> Any:
        row = self.inner.begin(prompt, params, seed)
        self.rows.append((params.max_new_tokens, row))
        return row

    def advance(self, rows: Sequence[Any], params: SamplingParams, tokens: int) -> None:
        self.inner.advance(rows, params, tokens)

    def conclude(self, rows: Sequence[Any], params: SamplingParams) -> list[Generation]:
        self.finished += [row.max_new_tokens for row in rows]
        return self.inner.conclude(rows, params)

    def generate(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[Generation]:
        return self.inner.generate(prompts, params)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def close(self) -> None:
        pass


def wait_for(condition: Any, what: str, bound_s: float = 120) -> None:
    """Poll until ``condition()``; past ``bound_s`` it is a hang (not a timing assertion)."""
    deadline = time.monotonic() + bound_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"hang: {what}")
        time.sleep(0.01)


def test_short_requests_are_not_starved_by_a_long_one(hf) -> None:
    stepping = SteppingBackend(hf)
    app = create_app(stepping, model_name=MODEL, max_tokens_limit=2048, chunk_tokens=4)
    with running(app) as api, ThreadPoolExecutor(4) as pool:
        def ask(max_tokens: int) -> int:
            httpx.post(api + "/completions", json={"prompt": "go to the", "max_tokens": max_tokens, "temperature": 0},
                       timeout=300).raise_for_status()
            return max_tokens

        long = pool.submit(ask, 2000)  # the tiny model never emits EOS: 2,000 tokens, 500 steps
        wait_for(lambda: stepping.rows, "the long request never began")
        shorts = [pool.submit(ask, 4) for _ in range(3)]
        assert [s.result() for s in shorts] == [4, 4, 4]
        assert not long.done()  # the short ones were served between the long one's steps
        assert long.result() == 2000
    assert stepping.finished == [4, 4, 4, 2000]


def test_a_disconnected_clients_request_is_abandoned(hf) -> None:
    stepping = SteppingBackend(hf)
    app = create_app(stepping, model_name=MODEL, max_tokens_limit=2048, chunk_tokens=4, disconnect_poll_s=0.05)
    with running(app) as api:
        host, port = api.removeprefix("http://").removesuffix("/v1").split(":")
        body = b'{"prompt": "go to the", "max_tokens": 2000, "temperature": 0}'
        with socket.create_connection((host, int(port))) as sock:  # a client that leaves mid-generation
            sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            wait_for(lambda: stepping.rows and stepping.rows[0][1].token_ids, "the request never began")
        [(_, abandoned)] = stepping.rows
        short = httpx.post(api + "/completions", json={"prompt": "x", "max_tokens": 4, "temperature": 0}, timeout=300)
        assert short.status_code == 200
        wait_for(lambda: app.state.batcher.in_flight == 0, "the abandoned request stayed queued")
        assert abandoned.finish_reason is None and len(abandoned.token_ids) < 2000  # its generation was dropped
        assert stepping.finished == [4]
