"""An OpenAI-compatible policy server over any :class:`~seed_gym.agents.backends.base.Backend`
(FastAPI + uvicorn, 127.0.0.1 by default); ``seed-gym serve policy`` runs it over the ``hf`` backend.

Endpoints::

    GET  /v1/models               {"object": "list", "data": [{"id": model_name, "object": "model", ...}]}
    GET  /v1/models/{model}       that entry, or 404
    POST /v1/chat/completions     {"model", "messages": [{"role", "content"}], ...sampling}
    POST /v1/completions          {"model", "prompt": str | [str, ...], ...sampling}
    GET  /health                  {"status": "ok", "model", "backend", "requests", "batches", "max_batch_seen", ...}

Rules:

* Sampling fields: ``max_tokens`` (1..``max_tokens_limit``, default 256; chat also accepts
  ``max_completion_tokens``), ``temperature`` (0..2, default 1; 0 is greedy), ``top_p`` (0 < p <= 1),
  ``top_k`` (0 or -1 = off), ``stop`` (a string or up to 16 strings), ``seed`` (default 0, so a
  request without one is still reproducible), ``logprobs`` (chat: bool, ``top_logprobs`` must be 0;
  completions: 0 or 1; only the sampled tokens' log-probs exist). ``n`` must be 1 and ``stream``
  false. Unknown fields are ignored, as OpenAI clients send many.
* ``model`` may be omitted; when given it must equal the served name, else 404 (as OpenAI does).
* Bad input is a 400 in OpenAI's error shape ``{"error": {"message", "type", "param", "code"}}``
  naming the field; a generation failure is a 500 in the same shape.
* Responses follow OpenAI's (non-streaming) shape. As OpenAI does, the matched stop string is
  *stripped* from the text; it is reported as the choice's ``stop_reason`` (vLLM's extension;
  ``null`` when EOS ended the text). With ``logprobs`` the choice also carries ``token_ids`` (vLLM's
  extension), so :class:`~seed_gym.agents.backends.openai.OpenAIBackend` gets back everything the
  backend produced.
* Batching: requests are queued; the worker waits ``batch_window_s`` after the first arrival (or
  until ``max_batch`` prompts are waiting), groups the prompts by identical sampling parameters and
  calls ``backend.generate`` once per group, in a worker thread, one call at a time (backends are
  not thread-safe). Requests arriving during a call wait for the next round and are batched then.
  Greedy text does not depend on the batch (up to floating-point ties), nor does sampled text:
  each prompt samples from its own stream, seeded by its request's ``seed`` (prompt ``i`` of a
  completions list by ``(seed, i)``), which the batch carries as ``SamplingParams.row_seeds``.
* Chat also takes vLLM's ``continue_final_message: true`` with ``add_generation_prompt: false``:
  the last (assistant) message is continued instead of a new assistant turn being opened.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from seed_gym.agents.backends.base import Backend, Generation, Prompt, SamplingParams

DEFAULT_MAX_TOKENS = 256
MAX_STOPS = 16
MAX_PROMPTS = 256
MAX_MESSAGES = 1024
MAX_TEXT_CHARS = 1_000_000

GenerateFn = Callable[[Sequence[Prompt], SamplingParams], list[Generation]]


# -- batching --------------------------------------------------------------------------------------
@dataclass
class BatchStats:
    """What the batcher did: prompts served, ``generate`` calls, the largest call, failed calls."""

    requests: int = 0
    batches: int = 0
    max_batch_seen: int = 0
    errors: int = 0


@dataclass
class _Pending:
    params: SamplingParams
    prompt: Prompt
    future: asyncio.Future


@dataclass
class Batcher:
    """Collects prompts from concurrent requests and serves them in grouped ``generate`` calls
    (module rules). Starts itself on the running loop at the first :meth:`submit`."""

    generate: GenerateFn
    window_s: float = 0.005
    max_batch: int = 32
    stats: BatchStats = field(default_factory=BatchStats)
    _pending: deque = field(default_factory=deque)
    _arrived: asyncio.Event | None = None
    _task: asyncio.Task | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    def __post_init__(self) -> None:
        if self.window_s < 0:
            raise ValueError(f"batch window must be >= 0 seconds, got {self.window_s}")
        if self.max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {self.max_batch}")

    async def submit(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[Generation]:
        """Queue ``prompts`` and wait for their generations (in order)."""
        self._ensure_started()
        loop = asyncio.get_running_loop()
        # Each prompt keeps its own seed, so grouping it with other requests never changes its sample.
        items = [_Pending(replace(params, row_seeds=(params.seed_for(i),)), prompt, loop.create_future())
                 for i, prompt in enumerate(prompts)]
        self._pending.extend(items)
        assert self._arrived is not None
        self._arrived.set()
        return list(await asyncio.gather(*(item.future for item in items)))

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        for item in self._pending:  # nobody will serve these any more
            if not item.future.done():
                item.future.set_exception(RuntimeError("the server is shutting down"))
        self._pending.clear()

    def _ensure_started(self) -> None:
        loop = asyncio.get_running_loop()
        if self._task is not None and self._loop is loop and not self._task.done():
            return
        # first use, or a new event loop (a test client's): start over on this one
        self._loop, self._arrived, self._pending = loop, asyncio.Event(), deque()
        self._task = loop.create_task(self._run())

    async def _run(self) -> None:
        assert self._arrived is not None
        loop = asyncio.get_running_loop()
        while True:
            while not self._pending:
                self._arrived.clear()
                await self._arrived.wait()
            deadline = loop.time() + self.window_s
            while len(self._pending) < self.max_batch and (left := deadline - loop.time()) > 0:
                self._arrived.clear()
                try:
                    await asyncio.wait_for(self._arrived.wait(), left)
                except TimeoutError:
                    break
            batch = [self._pending.popleft() for _ in range(min(self.max_batch, len(self._pending)))]
            for params, group in _group_by_params(batch):
                await self._serve(params, group)

    async def _serve(self, params: SamplingParams, group: list[_Pending]) -> None:
        group = [item for item in group if not item.future.done()]  # skip requests whose client left
        if not group:
            return
        try:
            results = await asyncio.to_thread(self.generate, [item.prompt for item in group], params)
            if len(results) != len(group):
                raise RuntimeError(f"the backend returned {len(results)} generations for {len(group)} prompts")
        except Exception as error:  # every waiting request gets the error; the worker lives on
            self.stats.errors += 1
            for item in group:
                if not item.future.done():
                    item.future.set_exception(error)
            return
        self.stats.batches += 1
        self.stats.requests += len(group)
        self.stats.max_batch_seen = max(self.stats.max_batch_seen, len(group))
        for item, result in zip(group, results):
            if not item.future.done():
                item.future.set_result(result)


def _group_by_params(batch: list[_Pending]) -> list[tuple[SamplingParams, list[_Pending]]]:
    """Prompts whose sampling parameters differ at most in their seeds, in order of first arrival;
    each group's parameters carry its prompts' own seeds as ``row_seeds``."""
    groups: dict[SamplingParams, list[_Pending]] = {}
    for item in batch:
        groups.setdefault(replace(item.params, seed=0, row_seeds=()), []).append(item)
    return [(replace(key, row_seeds=tuple(item.params.seed_for(0) for item in group)), group)
            for key, group in groups.items()]


# -- requests --------------------------------------------------------------------------------------
def _is_str_or_str_list(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str

    @field_validator("content", mode="before")
    @classmethod
    def _text_only(cls, value: Any) -> str:
        """Content parts are joined when they are all ``{"type": "text", "text": ...}``."""
        if isinstance(value, str):
            return value
        if not isinstance(value, list) or not all(
                isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
                for part in value):
            raise ValueError("only text content is supported (a string or parts {\"type\": \"text\", \"text\": ...})")
        return "".join(part["text"] for part in value)


class _SamplingRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    max_tokens: int | None = Field(None, ge=1)
    temperature: float = Field(1.0, ge=0, le=2)
    top_p: float = Field(1.0, gt=0, le=1)
    top_k: int = Field(0, ge=-1)
    n: int = 1
    stop: str | list[str] | None = None
    seed: int | None = Field(None, ge=0, le=2**63 - 1)
    stream: bool = False

    @field_validator("n")
    @classmethod
    def _one_choice(cls, value: int) -> int:
        if value != 1:
            raise ValueError(f"only n=1 is supported (got {value}); send one request per sample")
        return value

    @field_validator("stream")
    @classmethod
    def _no_stream(cls, value: bool) -> bool:
        if value:
            raise ValueError("streaming is not supported; send stream=false")
        return value

    @field_validator("stop", mode="before")
    @classmethod
    def _stop_type(cls, value: Any) -> Any:
        if value is not None and not _is_str_or_str_list(value):
            raise ValueError("must be a string or a list of strings")
        return value

    @field_validator("stop")
    @classmethod
    def _stops(cls, value: str | list[str] | None) -> list[str]:
        stops = [value] if isinstance(value, str) else list(value or [])
        if len(stops) > MAX_STOPS:
            raise ValueError(f"at most {MAX_STOPS} stop strings")
        if any(not s for s in stops):
            raise ValueError("stop strings must not be empty")
        return stops


class ChatRequest(_SamplingRequest):
    messages: list[ChatMessage] = Field(..., min_length=1, max_length=MAX_MESSAGES)
    max_completion_tokens: int | None = Field(None, ge=1)
    # vLLM's extension: continue the final (assistant) message instead of opening a new turn.
    continue_final_message: bool = False
    add_generation_prompt: bool = True
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0)

    @field_validator("messages")
    @classmethod
    def _size(cls, value: list[ChatMessage]) -> list[ChatMessage]:
        if sum(len(m.content) for m in value) > MAX_TEXT_CHARS:
            raise ValueError(f"the messages exceed {MAX_TEXT_CHARS} characters")
        return value

    @field_validator("top_logprobs")
    @classmethod
    def _no_alternatives(cls, value: int | None) -> int | None:
        if value:
            raise ValueError("top_logprobs must be 0: only the sampled tokens' log-probs are available")
        return value


class CompletionRequest(_SamplingRequest):
    prompt: str | list[str]
    logprobs: int | None = Field(None, ge=0)

    @field_validator("prompt", mode="before")
    @classmethod
    def _prompt_type(cls, value: Any) -> Any:
        if not _is_str_or_str_list(value):
            raise ValueError("must be a string or a list of strings (token-id prompts are not supported)")
        return value

    @field_validator("prompt")
    @classmethod
    def _prompts(cls, value: str | list[str]) -> str | list[str]:
        prompts = [value] if isinstance(value, str) else value
        if not prompts:
            raise ValueError("give at least one prompt")
        if len(prompts) > MAX_PROMPTS:
            raise ValueError(f"at most {MAX_PROMPTS} prompts per request")
        if any(len(p) > MAX_TEXT_CHARS for p in prompts):
            raise ValueError(f"each prompt must be at most {MAX_TEXT_CHARS} characters")
        if any(not p for p in prompts):  # nothing to condition on (the model saw 0 tokens: a 500 before)
            raise ValueError("a prompt must not be empty")
        return value

    @field_validator("logprobs")
    @classmethod
    def _sampled_only(cls, value: int | None) -> int | None:
        if value is not None and value > 1:
            raise ValueError("logprobs must be 0 or 1: only the sampled tokens' log-probs are available")
        return value


# -- errors ----------------------------------------------------------------------------------------
class APIError(Exception):
    """An error answered in OpenAI's shape."""

    def __init__(self, status: int, message: str, *, param: str | None = None,
                 kind: str = "invalid_request_error", code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.kind, self.code = status, message, param, kind, code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


def _validation_message(errors: Sequence[Any]) -> tuple[str, str | None]:
    """A readable message (``field: problem; ...``) and the first bad field."""
    parts, first = [], None
    for error in errors:
        if error.get("type") == "json_invalid":
            parts.append(f"the body is not valid JSON ({(error.get('ctx') or {}).get('error', 'decode error')})")
            continue
        loc = [str(p) for p in error.get("loc", ()) if p != "body"]
        # drop pydantic's union-branch names ("str", "list[str]") from the path
        loc = [p for p in loc if not (p in {"str", "int", "list[str]"} or p.startswith(("list[", "function-")))]
        where = ".".join(loc)
        first = first or (loc[0] if loc else None)
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(dict.fromkeys(parts)) or "invalid request", first


# -- responses -------------------------------------------------------------------------------------
def strip_stop(generation: Generation, stop: Sequence[str]) -> tuple[str, str | None]:
    """OpenAI's text for a generation whose matched stop string is *kept* (the backend contract):
    the text without it, and the stop string (None when EOS or the length limit ended it).

    The matched string is the longest stop string the text ends with: the backend cut the text
    after the stop string that starts first, and any longer one ending there would start earlier."""
    text = generation.text
    if generation.finish_reason != "stop":
        return text, None
    hits = [s for s in stop if s and text.endswith(s)]
    if not hits:
        return text, None
    matched = max(hits, key=len)
    return text[: len(text) - len(matched)], matched


def token_strings(backend: Backend, token_ids: Sequence[int] | None, count: int) -> list[str]:
    """Token strings for logprobs: decoded with the backend's tokenizer when it has one, else
    vLLM's ``token_id:N`` form (empty strings when the backend gave no ids)."""
    if token_ids is None:
        return [""] * count
    tokenizer = getattr(backend, "tokenizer", None)
    if tokenizer is not None:
        try:
            return [tokenizer.decode([t]) for t in token_ids]
        except Exception:  # an odd tokenizer must not fail the request
            pass
    return [f"token_id:{t}" for t in token_ids]


def generate_with_tokens(backend: Backend) -> GenerateFn:
    """``backend.generate`` that also stores each generation's token strings in
    ``meta["token_strings"]`` when log-probs were asked for. Decoding happens here, in the worker
    thread, because a tokenizer may not be used while another thread runs ``generate``."""
    def generate(prompts: Sequence[Prompt], params: SamplingParams) -> list[Generation]:
        generations = backend.generate(prompts, params)
        if params.logprobs:
            for generation in generations:
                count = len(generation.logprobs or [])
                generation.meta["token_strings"] = token_strings(backend, generation.token_ids, count)
        return generations
    return generate


def _tokens(generation: Generation) -> list[str]:
    return generation.meta.get("token_strings") or [""] * len(generation.logprobs or [])


def _chat_logprobs(generation: Generation) -> dict[str, Any] | None:
    if generation.logprobs is None:
        return None
    tokens = _tokens(generation)
    return {"content": [{"token": tok, "logprob": lp, "bytes": list(tok.encode()), "top_logprobs": []}
                        for tok, lp in zip(tokens, generation.logprobs)]}


def _completion_logprobs(generation: Generation) -> dict[str, Any] | None:
    if generation.logprobs is None:
        return None
    tokens = _tokens(generation)
    offsets, at = [], 0
    for tok in tokens:
        offsets.append(at)
        at += len(tok)
    return {"tokens": tokens, "token_logprobs": list(generation.logprobs), "top_logprobs": None,
            "text_offset": offsets}


def _choice(index: int, generation: Generation, stop: Sequence[str], logprobs: dict[str, Any] | None,
            chat: bool) -> dict[str, Any]:
    text, matched = strip_stop(generation, stop)
    choice: dict[str, Any] = {"index": index}
    if chat:
        choice["message"] = {"role": "assistant", "content": text}
    else:
        choice["text"] = text
    choice.update(logprobs=logprobs, finish_reason=generation.finish_reason, stop_reason=matched)
    if logprobs is not None and generation.token_ids is not None:
        choice["token_ids"] = list(generation.token_ids)
    return choice


def _usage(generations: Sequence[Generation]) -> dict[str, int]:
    prompt = sum(g.prompt_tokens for g in generations)
    completion = sum(g.completion_tokens for g in generations)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


# -- the app ---------------------------------------------------------------------------------------
def sampling_params(request: _SamplingRequest, max_tokens: int | None, logprobs: bool,
                    max_tokens_limit: int) -> SamplingParams:
    """The backend's parameters for a validated request (module rules); :class:`APIError` if out of range."""
    wanted = max_tokens or min(DEFAULT_MAX_TOKENS, max_tokens_limit)
    if wanted > max_tokens_limit:
        raise APIError(400, f"max_tokens must be at most {max_tokens_limit}, got {wanted}", param="max_tokens")
    try:
        return SamplingParams(max_new_tokens=wanted, temperature=request.temperature, top_p=request.top_p,
                              top_k=max(0, request.top_k), stop=tuple(request.stop or ()),
                              seed=request.seed if request.seed is not None else 0, logprobs=logprobs)
    except ValueError as error:
        raise APIError(400, str(error)) from None


def create_app(backend: Backend, *, model_name: str, max_tokens_limit: int = 4096,
               batch_window_s: float = 0.005, max_batch: int = 32) -> Any:
    """The FastAPI app serving ``backend`` as ``model_name`` (module rules).

    ``app.state.batcher.stats`` counts the ``generate`` calls and their sizes (also on ``/health``)."""
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    if max_tokens_limit < 1:
        raise ValueError(f"max_tokens_limit must be >= 1, got {max_tokens_limit}")
    batcher = Batcher(generate_with_tokens(backend), window_s=batch_window_s, max_batch=max_batch)
    created = int(time.time())

    @asynccontextmanager
    async def lifespan(_: Any):  # type: ignore[no-untyped-def]
        yield
        await batcher.stop()

    app = FastAPI(title="seed-gym policy server", lifespan=lifespan)
    app.state.batcher = batcher
    app.state.backend = backend

    @app.exception_handler(APIError)
    async def _api_error(_: Request, error: APIError) -> JSONResponse:
        return JSONResponse(error.body(), status_code=error.status)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        message, param = _validation_message(error.errors())
        return JSONResponse(APIError(400, message, param=param).body(), status_code=400)

    def model_card() -> dict[str, Any]:
        return {"id": model_name, "object": "model", "created": created, "owned_by": "seed-gym"}

    def check_model(requested: str | None) -> None:
        if requested is not None and requested != model_name:
            raise APIError(404, f"The model `{requested}` does not exist; this server serves `{model_name}`.",
                           param="model", code="model_not_found")

    async def run(prompts: list[Prompt], params: SamplingParams) -> list[Generation]:
        try:
            return await batcher.submit(prompts, params)
        except Exception as error:
            raise APIError(500, f"generation failed: {type(error).__name__}: {error}", kind="server_error") from None

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "model": model_name, "backend": getattr(backend, "name", "?"), **vars(batcher.stats)}

    @app.get("/v1/models")
    async def models() -> dict[str, Any]:
        return {"object": "list", "data": [model_card()]}

    @app.get("/v1/models/{model:path}")
    async def model_entry(model: str) -> dict[str, Any]:
        check_model(model)
        return model_card()

    @app.post("/v1/chat/completions")
    async def chat(request: ChatRequest) -> dict[str, Any]:
        check_model(request.model)
        params = sampling_params(request, request.max_tokens or request.max_completion_tokens,
                                 request.logprobs, max_tokens_limit)
        messages = [{"role": m.role, "content": str(m.content)} for m in request.messages]
        if request.continue_final_message:
            if messages[-1]["role"] != "assistant" or request.add_generation_prompt:
                raise APIError(400, "continue_final_message needs an assistant message last and "
                                    "add_generation_prompt=false", param="continue_final_message")
            messages[-1]["continue"] = True
        [generation] = await run([messages], params)
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                "model": model_name,
                "choices": [_choice(0, generation, params.stop, _chat_logprobs(generation), chat=True)],
                "usage": _usage([generation])}

    @app.post("/v1/completions")
    async def completions(request: CompletionRequest) -> dict[str, Any]:
        check_model(request.model)
        params = sampling_params(request, request.max_tokens, request.logprobs is not None, max_tokens_limit)
        prompts: list[Prompt] = [request.prompt] if isinstance(request.prompt, str) else list(request.prompt)
        generations = await run(prompts, params)
        return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": model_name,
                "choices": [_choice(i, g, params.stop, _completion_logprobs(g), chat=False)
                            for i, g in enumerate(generations)],
                "usage": _usage(generations)}

    return app


def serve(app: Any, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning") -> None:
    """Run ``app`` with uvicorn (blocking). Loopback by default: pass ``host="0.0.0.0"`` deliberately."""
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level=log_level)
