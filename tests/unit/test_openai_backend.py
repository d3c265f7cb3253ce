"""The ``openai`` backend and the OpenAI-compatible policy server, without sockets: a mock HTTP
transport, FastAPI's test client, and the backend talking to the app in-process over ASGI."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

import httpx
import pytest
from fastapi.testclient import TestClient

from seed_gym.agents.backends.base import BackendError, Generation, Prompt, SamplingParams, is_chat
from seed_gym.agents.backends.openai import OpenAIBackend, error_message, matched_stop, request_body
from seed_gym.agents.server import Batcher, create_app, strip_stop

URL = "http://policy.test/v1"


class FakeBackend:
    """Answers ``reply:<last text>``; ends with the first stop string when there is one (kept, as the
    contract says), else runs to the length limit when the prompt says LONG, else stops on EOS."""

    name = "fake"

    def __init__(self) -> None:
        self.calls: list[tuple[int, SamplingParams]] = []
        self.fail: Exception | None = None

    def generate(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[Generation]:
        if self.fail:
            raise self.fail
        self.calls.append((len(prompts), params))
        out = []
        for prompt in prompts:
            last = prompt[-1]["content"] if is_chat(prompt) else prompt
            text, finish = f"reply:{last}", "stop"
            if params.stop:
                text += params.stop[0]
            elif "LONG" in last:
                finish = "length"
            ids = list(range(len(text))) if params.logprobs else None
            out.append(Generation(text=text, prompt_tokens=len(last), completion_tokens=len(text),
                                  finish_reason=finish, token_ids=ids,
                                  logprobs=[-0.5] * len(text) if params.logprobs else None))
        return out

    def describe(self) -> dict[str, str]:
        return {"backend": self.name}

    def close(self) -> None:
        pass


def mock_backend(handler, **kwargs) -> OpenAIBackend:
    kwargs.setdefault("model", "m")
    kwargs.setdefault("backoff", 0)
    return OpenAIBackend(URL, transport=httpx.MockTransport(handler), **kwargs)


def completion(text: str, finish: str = "stop", **choice) -> dict:
    return {"id": "x", "model": "m", "choices": [{"index": 0, "text": text, "finish_reason": finish, **choice}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4}}


# -- the backend's request and response rules ------------------------------------------------------
def test_request_body_maps_sampling_params() -> None:
    params = SamplingParams(max_new_tokens=7, temperature=0.3, top_p=0.9, top_k=5, stop=("</a>",), seed=4,
                            logprobs=True)
    chat = request_body([{"role": "user", "content": "hi"}], params, "m")
    assert chat["messages"] == [{"role": "user", "content": "hi"}] and chat["logprobs"] is True
    assert (chat["max_tokens"], chat["temperature"], chat["top_p"], chat["top_k"], chat["seed"], chat["stop"]) == \
        (7, 0.3, 0.9, 5, params.seed_for(0), ["</a>"])
    # each prompt of a batch sends its own seed (identical prompts of a GRPO group must differ)
    assert request_body("hi", params, "m", row=1)["seed"] != request_body("hi", params, "m", row=0)["seed"]
    seeded = SamplingParams(seed=4, row_seeds=(11, 22))
    assert [request_body("hi", seeded, "m", row=r)["seed"] for r in (0, 1)] == [11, 22]
    plain = request_body("hi", SamplingParams(logprobs=True), "m")
    assert plain["prompt"] == "hi" and plain["logprobs"] == 1 and "messages" not in plain
    assert "top_k" not in plain and "stop" not in plain  # off / empty: not sent
    assert "logprobs" not in request_body("hi", SamplingParams(), "m")


def test_a_continued_assistant_turn_is_sent_with_continue_final_message() -> None:
    prompt = [{"role": "user", "content": "Q?"},
              {"role": "assistant", "content": "<search> q </search>\n\n<information>x</information>\n\n",
               "continue": True, "segments": [{"text": "<search> q </search>"}, {"text": "\n\n<information>x"}]}]
    body = request_body(prompt, SamplingParams(), "m")
    assert body["messages"] == [{"role": "user", "content": "Q?"}, {"role": "assistant", "content": prompt[1]["content"]}]
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert "continue_final_message" not in request_body(prompt[:1], SamplingParams(), "m")


@pytest.mark.parametrize("choice, stop, expected", [
    ({"finish_reason": "stop", "stop_reason": "</a>"}, ("</a>", "\n"), "</a>"),  # the server says which
    ({"finish_reason": "stop", "stop_reason": None}, ("</a>",), None),           # null: EOS
    ({"finish_reason": "stop", "stop_reason": 2}, ("</a>",), None),              # a stop token id
    ({"finish_reason": "stop"}, ("</a>",), "</a>"),                               # OpenAI: the only one
    ({"finish_reason": "stop"}, ("</a>", "\n"), None),                            # ambiguous: left alone
    ({"finish_reason": "length", "stop_reason": "</a>"}, ("</a>",), None),
])
def test_matched_stop_rule(choice, stop, expected) -> None:
    assert matched_stop(choice, stop) == expected


def test_stop_string_is_put_back_once_and_usage_is_read() -> None:
    answers = iter([completion("go", stop_reason="</a>"), completion("go</a>", stop_reason="</a>"),
                    completion("go", stop_reason=None)])
    backend = mock_backend(lambda request: httpx.Response(200, json=next(answers)), concurrency=1)
    params = SamplingParams(stop=("</a>",))
    texts = [g.text for g in backend.generate(["a", "b", "c"], params)]
    assert texts == ["go</a>", "go</a>", "go"]
    [gen] = mock_backend(lambda r: httpx.Response(200, json=completion("x", "length"))).generate(["a"], params)
    assert (gen.finish_reason, gen.prompt_tokens, gen.completion_tokens) == ("length", 3, 4)


def test_logprobs_and_token_ids_are_parsed() -> None:
    chat = {"choices": [{"message": {"content": "ab"}, "finish_reason": "stop", "token_ids": [5, 6],
                         "logprobs": {"content": [{"token": "a", "logprob": -1.0}, {"token": "b", "logprob": -2.0}]}}],
            "usage": {}}
    backend = mock_backend(lambda r: httpx.Response(200, json=chat))
    [gen] = backend.generate([[{"role": "user", "content": "q"}]], SamplingParams(logprobs=True))
    assert gen.logprobs == [-1.0, -2.0] and gen.token_ids == [5, 6]
    plain = completion("ab", logprobs={"tokens": ["a", "b"], "token_logprobs": [-0.1, -0.2]})
    [gen] = mock_backend(lambda r: httpx.Response(200, json=plain)).generate(["q"], SamplingParams(logprobs=True))
    assert gen.logprobs == [-0.1, -0.2] and gen.token_ids is None


def test_results_keep_prompt_order_and_concurrency_is_bounded() -> None:
    state = {"in_flight": 0, "max": 0}
    full = asyncio.Event()

    async def handler(request: httpx.Request) -> httpx.Response:
        state["in_flight"] += 1
        state["max"] = max(state["max"], state["in_flight"])
        if state["in_flight"] >= 3:
            full.set()
        await asyncio.wait_for(full.wait(), 10)  # hold until the bound is reached
        await asyncio.sleep(0)
        state["in_flight"] -= 1
        return httpx.Response(200, json=completion("re:" + json.loads(request.content)["prompt"]))

    backend = OpenAIBackend(URL, model="m", concurrency=3, transport=httpx.MockTransport(handler))
    prompts = [f"p{i}" for i in range(10)]
    assert [g.text for g in backend.generate(prompts, SamplingParams())] == [f"re:{p}" for p in prompts]
    assert state["max"] == 3


def test_model_comes_from_the_server_and_the_key_is_sent_but_never_described(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    seen: list[tuple[str, str, str | None]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else {}
        seen.append((request.method, request.url.path, body.get("model")))
        assert request.headers["authorization"] == "Bearer sk-secret"
        if request.url.path.endswith("/models"):
            return httpx.Response(200, json={"object": "list", "data": [{"id": "served"}, {"id": "other"}]})
        return httpx.Response(200, json=completion("ok"))

    backend = OpenAIBackend(URL + "/", transport=httpx.MockTransport(handler))
    backend.generate(["a", "b"], SamplingParams())
    assert seen[0] == ("GET", "/v1/models", None)  # asked once, first
    assert [s for s in seen[1:]] == [("POST", "/v1/completions", "served")] * 2
    described = backend.describe()
    assert described == {"backend": "openai", "base_url": URL, "model": "served", "concurrency": 8}
    assert "sk-secret" not in json.dumps(described)


def test_running_event_loop_in_the_thread_is_fine() -> None:
    backend = mock_backend(lambda r: httpx.Response(200, json=completion("ok")))

    async def inside_a_loop() -> list[Generation]:
        return backend.generate(["a"], SamplingParams())

    assert asyncio.run(inside_a_loop())[0].text == "ok"


# -- retries ---------------------------------------------------------------------------------------
def test_5xx_and_429_are_retried_then_succeed() -> None:
    statuses = iter([503, 429, 500, 200])
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        status = next(statuses)
        headers = {"Retry-After": "0"} if status == 429 else {}
        return httpx.Response(status, json=completion("ok") if status == 200 else {"error": "busy"}, headers=headers)

    assert mock_backend(handler, max_retries=3).generate(["a"], SamplingParams())[0].text == "ok"
    assert len(calls) == 4


def test_other_4xx_fail_at_once_with_the_servers_message() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(400, json={"error": {"message": "temperature: too hot", "type": "invalid_request_error"}})

    with pytest.raises(BackendError, match=r"rejected the request \(400\): temperature: too hot"):
        mock_backend(handler).generate(["a"], SamplingParams())
    assert len(calls) == 1


def test_unreachable_server_gives_up_naming_the_url() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(BackendError, match=r"cannot reach http://policy.test/v1/completions.*after 3 attempts"):
        mock_backend(handler, max_retries=2).generate(["a"], SamplingParams())
    assert len(calls) == 3


def test_persistent_5xx_gives_up_with_the_status() -> None:
    backend = mock_backend(lambda r: httpx.Response(502, text="bad gateway"), max_retries=1)
    with pytest.raises(BackendError, match=r"answered 502: bad gateway.*after 2 attempts"):
        backend.generate(["a"], SamplingParams())


def test_error_message_shapes() -> None:
    assert error_message({"error": {"message": "m1"}}, "f") == "m1"
    assert error_message({"detail": "m2"}, "f") == "m2"
    assert error_message({"detail": [{"msg": "a"}, {"msg": "b"}]}, "f") == "a; b"
    assert error_message("not a dict", "f") == "f"


def test_constructor_checks() -> None:
    with pytest.raises(BackendError, match="http"):
        OpenAIBackend("127.0.0.1:8000/v1")
    with pytest.raises(ValueError, match="concurrency"):
        OpenAIBackend(URL, concurrency=0)


# -- the server ------------------------------------------------------------------------------------
@pytest.fixture()
def fake() -> FakeBackend:
    return FakeBackend()


@pytest.fixture()
def client(fake: FakeBackend):
    with TestClient(create_app(fake, model_name="tiny", max_tokens_limit=64)) as test_client:
        yield test_client


def test_models_and_health(client: TestClient) -> None:
    listing = client.get("/v1/models").json()
    assert listing["object"] == "list" and [m["id"] for m in listing["data"]] == ["tiny"]
    assert client.get("/v1/models/tiny").json()["id"] == "tiny"
    assert client.get("/v1/models/gpt-4").status_code == 404
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["backend"] == "fake" and health["batches"] == 0


def test_chat_completion_shape_strips_the_stop_string(client: TestClient, fake: FakeBackend) -> None:
    body = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "stop": "</a>", "max_tokens": 9,
            "temperature": 0}
    answer = client.post("/v1/chat/completions", json=body).json()
    assert answer["object"] == "chat.completion" and answer["model"] == "tiny" and answer["id"].startswith("chatcmpl-")
    [choice] = answer["choices"]
    assert choice["message"] == {"role": "assistant", "content": "reply:hi"}
    assert (choice["finish_reason"], choice["stop_reason"], choice["logprobs"]) == ("stop", "</a>", None)
    assert answer["usage"] == {"prompt_tokens": 2, "completion_tokens": 12, "total_tokens": 14}
    [(size, params)] = fake.calls
    assert size == 1 and params == SamplingParams(max_new_tokens=9, temperature=0, stop=("</a>",),
                                                  row_seeds=(SamplingParams().seed_for(0),))


def test_completions_with_a_prompt_list_and_eos_or_length(client: TestClient) -> None:
    answer = client.post("/v1/completions", json={"prompt": ["a", "LONG b"], "logprobs": 1}).json()
    assert answer["object"] == "text_completion"
    first, second = answer["choices"]
    assert (first["index"], first["text"], first["finish_reason"], first["stop_reason"]) == (0, "reply:a", "stop", None)
    assert (second["index"], second["finish_reason"]) == (1, "length")
    assert first["logprobs"]["token_logprobs"] == [-0.5] * 7 and first["token_ids"] == list(range(7))
    assert first["logprobs"]["tokens"] == [f"token_id:{i}" for i in range(7)]  # the fake has no tokenizer


def test_chat_logprobs_shape(client: TestClient) -> None:
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}], "logprobs": True}
    [choice] = client.post("/v1/chat/completions", json=body).json()["choices"]
    assert choice["message"]["content"] == "reply:x"
    assert [item["logprob"] for item in choice["logprobs"]["content"]] == [-0.5] * 7


@pytest.mark.parametrize("path, body, status, fragment", [
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "n": 17}, 400, "n"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "stream": True}, 400, "stream=false"),
    ("/v1/chat/completions", {"messages": []}, 400, "messages"),
    ("/v1/chat/completions", {"messages": [{"role": "wizard", "content": "x"}]}, 400, "role"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "temperature": 3}, 400, "temperature"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2}, 400, "top_logprobs"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "max_tokens": 65}, 400, "at most 64"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "model": "gpt-4"}, 404, "gpt-4"),
    ("/v1/completions", {"prompt": []}, 400, "at least one prompt"),
    ("/v1/completions", {"prompt": [1, 2]}, 400, "prompt"),
    ("/v1/completions", {"prompt": "x", "stop": ["", "a"]}, 400, "stop strings must not be empty"),
    ("/v1/completions", {"prompt": "x", "logprobs": 5}, 400, "logprobs must be 0 or 1"),
    ("/v1/completions", {"prompt": "x", "top_p": 0}, 400, "top_p"),
    ("/v1/completions", {}, 400, "prompt"),
])
def test_bad_input_is_a_4xx_with_a_message(client: TestClient, fake: FakeBackend, path, body, status, fragment) -> None:
    response = client.post(path, json=body)
    assert response.status_code == status, response.text
    assert fragment in response.json()["error"]["message"]
    assert fake.calls == []


def test_malformed_json_and_generation_failures(client: TestClient, fake: FakeBackend) -> None:
    response = client.post("/v1/completions", content=b"{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and "JSON" in response.json()["error"]["message"]
    fake.fail = RuntimeError("out of memory")
    response = client.post("/v1/completions", json={"prompt": "x"})
    assert response.status_code == 500 and "out of memory" in response.json()["error"]["message"]
    fake.fail = None
    assert client.post("/v1/completions", json={"prompt": "x"}).json()["choices"][0]["text"] == "reply:x"


def test_strip_stop_takes_the_longest_match() -> None:
    gen = Generation(text="xab", prompt_tokens=0, completion_tokens=0)
    assert strip_stop(gen, ["b", "ab"]) == ("x", "ab")
    assert strip_stop(gen, ["q"]) == ("xab", None)
    assert strip_stop(Generation("xab", 0, 0, finish_reason="length"), ["b"]) == ("xab", None)


# -- batching --------------------------------------------------------------------------------------
def test_batcher_groups_by_params_and_answers_each_request() -> None:
    fake = FakeBackend()

    async def main() -> list[list[Generation]]:
        batcher = Batcher(fake.generate, window_s=60, max_batch=6)  # fills up long before the window ends
        greedy, sampled = SamplingParams(), SamplingParams(temperature=1.0)
        jobs = [batcher.submit([f"q{i}"], greedy if i % 2 else sampled) for i in range(6)]
        out = await asyncio.wait_for(asyncio.gather(*jobs), 20)
        await batcher.stop()
        return out

    results = asyncio.run(main())
    assert [r[0].text for r in results] == [f"reply:q{i}" for i in range(6)]
    assert sorted((size, p.temperature) for size, p in fake.calls) == [(3, 0.0), (3, 1.0)]


def test_batcher_batches_requests_with_different_seeds_and_keeps_each_seed() -> None:
    fake = FakeBackend()

    async def main() -> None:
        batcher = Batcher(fake.generate, window_s=60, max_batch=3)
        await asyncio.wait_for(asyncio.gather(*(batcher.submit([f"q{i}"], SamplingParams(temperature=1.0, seed=i))
                                                for i in range(3))), 20)
        await batcher.stop()

    asyncio.run(main())
    [(size, params)] = fake.calls  # one generate call, not one per seed
    assert size == 3 and params.row_seeds == tuple(SamplingParams(seed=i).seed_for(0) for i in range(3))


def test_batcher_respects_max_batch_and_survives_errors() -> None:
    fake = FakeBackend()

    async def main() -> tuple[list, list[Generation]]:
        batcher = Batcher(fake.generate, window_s=0, max_batch=2)
        await asyncio.gather(*(batcher.submit([f"q{i}"], SamplingParams()) for i in range(5)))
        fake.fail = RuntimeError("broken")
        errors = await asyncio.gather(batcher.submit(["x"], SamplingParams()), return_exceptions=True)
        fake.fail = None
        ok = await batcher.submit(["y"], SamplingParams())
        await batcher.stop()
        return errors, ok

    errors, ok = asyncio.run(main())
    assert all(size <= 2 for size, _ in fake.calls) and sum(size for size, _ in fake.calls) == 6
    assert isinstance(errors[0], RuntimeError) and ok[0].text == "reply:y"


def test_concurrent_http_requests_share_a_generate_call(fake: FakeBackend) -> None:
    app = create_app(fake, model_name="tiny", batch_window_s=60, max_batch=4)
    backend = OpenAIBackend("http://policy.test/v1", transport=httpx.ASGITransport(app=app), concurrency=4)
    prompts = [f"p{i}" for i in range(4)]
    assert [g.text for g in backend.generate(prompts, SamplingParams(stop=("</a>",)))] == \
        [g.text for g in FakeBackend().generate(prompts, SamplingParams(stop=("</a>",)))]
    assert [size for size, _ in fake.calls] == [4]
    assert app.state.batcher.stats.max_batch_seen == 4
