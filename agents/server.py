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
  ``top_k`` (0 or -1 = off), ``stop`` (a string or up to 16 strings), ``seed`` (makes a request
  repeatable; without one each sampled request draws a fresh seed, so requests sample
  independently), ``n`` (1..16 choices, each an independent sample: choice ``j`` of prompt ``i``
  is row ``k = i * n + j`` and samples from ``(seed, k)``), ``logprobs`` (chat: bool,
  ``top_logprobs`` must be 0; completions: 0 or 1; only the sampled tokens' log-probs exist).
  ``stream`` must be false. Fields this server cannot honour (:data:`UNSUPPORTED_FIELDS`: tools,
  ``response_format``, ``echo``, non-zero penalties, ``logit_bias``, ...) are a 400 naming the field
  unless their value means "unused"; other unknown fields are ignored, as OpenAI clients send many.
* Caps: a body over ``max_body_bytes`` is a 413; at most 256 generations (prompts x ``n``) and
  1,000,000 characters of prompt text per request; a prompt that does not fit in the model's
  context beside ``max_tokens`` is a 400 with code ``context_length_exceeded`` (as OpenAI's), never
  cut (backends that generate in steps check this; others keep their own rule).
* ``model`` may be omitted; when given it must equal the served name, else 404 (as OpenAI does).
* Bad input (a body that is not UTF-8 JSON, text with a lone surrogate escape, a bad field) is a 400
  in OpenAI's error shape ``{"error": {"message", "type", "param", "code"}}``
  naming the field; a generation failure is a 500 in the same shape.
* Responses follow OpenAI's (non-streaming) shape. As OpenAI does, the matched stop string is
  *stripped* from the text; it is reported as the choice's ``stop_reason`` (vLLM's extension;
  ``null`` when EOS ended the text). With ``logprobs`` the choice also carries ``token_ids`` (vLLM's
  extension), so :class:`~seed_gym.agents.backends.openai.OpenAIBackend` gets back everything the
  backend produced.
* Batching: each prompt (times ``n``) is a row in one queue. After an idle spell the worker
  waits ``batch_window_s`` (or until ``max_batch`` rows are waiting), then serves rows in rounds:
  up to ``max_batch`` rows from the front, grouped by sampling parameters (seeds and lengths aside),
  one ``advance`` call per group in a worker thread, one call at a time (backends are not
  thread-safe), each adding at most ``chunk_tokens`` tokens per row; unfinished rows go to the back.
  So no request waits behind a long one: with ``N`` rows in flight a request needing at most
  ``chunk_tokens`` tokens is answered within ``ceil(N / max_batch)`` rounds (:class:`Batcher`).
  This needs a :class:`~seed_gym.agents.backends.base.Resumable` backend (``hf``); any other
  backend makes each row in one ``generate`` call. A client that disconnects abandons its rows:
  they are dropped before the next round. Greedy text does not depend on the batch or the steps
  (up to floating-point ties), nor does sampled text: each row samples from its own stream,
  seeded by its request's ``seed`` and its row index, carried as ``SamplingParams.row_seeds``.
* Chat also takes vLLM's ``continue_final_message: true`` with ``add_generation_prompt: false``:
  the last (assistant) message is continued instead of a new assistant turn being opened.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError
from starlette.requests import Request  # module level: FastAPI resolves handler annotations here

from seed_gym.agents.backends.base import (
    Backend, ContextLengthError, Generation, Prompt, Resumable, SamplingParams)

DEFAULT_MAX_TOKENS = 256
MAX_STOPS = 16
MAX_PROMPTS = 256        # generations per request: prompts x n
MAX_CHOICES = 16         # n
MAX_MESSAGES = 1024
MAX_TEXT_CHARS = 1_000_000  # characters of prompt text per request
MAX_BODY_BYTES = 8 * 2**20  # a body this large holds the largest legal request (JSON escapes included)

GenerateFn = Callable[[Sequence[Prompt], SamplingParams], list[Generation]]


# -- batching --------------------------------------------------------------------------------------
@dataclass
class BatchStats:
    """What the batcher did: prompts served, ``generate``/``advance`` calls, the largest call, failed calls."""

    requests: int = 0
    batches: int = 0
    max_batch_seen: int = 0
    errors: int = 0


@dataclass
class _Row:
    """One prompt of a request: queued, then in progress (``state``), then answered (``outcome``)."""

    params: SamplingParams
    prompt: Prompt
    seed: int
    future: asyncio.Future
    state: Any = None
    outcome: Generation | BaseException | None = None


@dataclass
class _WholeRow:
    prompt: Prompt
    seed: int
    max_new_tokens: int
    finish_reason: str | None = None
    generation: Generation | None = None


class WholeCalls:
    """:class:`Resumable` steps over a plain ``generate`` function (a backend that cannot generate
    in steps): a row's first step makes all of its tokens, in one call per ``max_new_tokens``."""

    def __init__(self, generate: GenerateFn) -> None:
        self.generate = generate

    def begin(self, prompt: Prompt, params: SamplingParams, seed: int) -> _WholeRow:
        return _WholeRow(prompt, seed, params.max_new_tokens)

    def advance(self, rows: Sequence[_WholeRow], params: SamplingParams, tokens: int) -> None:
        by_length: dict[int, list[_WholeRow]] = {}
        for row in rows:
            if row.finish_reason is None:
                by_length.setdefault(row.max_new_tokens, []).append(row)
        for length, group in by_length.items():
            call = replace(params, max_new_tokens=length, row_seeds=tuple(row.seed for row in group))
            results = self.generate([row.prompt for row in group], call)
            if len(results) != len(group):
                raise RuntimeError(f"the backend returned {len(results)} generations for {len(group)} prompts")
            for row, result in zip(group, results):
                row.generation, row.finish_reason = result, result.finish_reason or "stop"

    def conclude(self, rows: Sequence[_WholeRow], params: SamplingParams) -> list[Generation]:
        return [row.generation for row in rows if row.generation is not None]


@dataclass
class Batcher:
    """Serves prompts from concurrent requests in shared, bounded steps (module rules). ``source``
    is a :class:`Resumable` backend or a plain ``generate`` function (then each row is made in one
    step: no bound). Starts itself on the running loop at the first :meth:`submit`.

    Fairness bound: the rows in flight (queued or in progress) are served round-robin, at most
    ``max_batch`` per round; a round makes one ``advance`` call per group of equal sampling
    parameters, adding at most ``chunk_tokens`` tokens to each row. With ``N`` rows in flight a row
    waits at most ``ceil(N / max_batch) - 1`` rounds between its steps, and a request for at most
    ``chunk_tokens`` tokens is answered within ``ceil(N / max_batch)`` rounds of its arrival,
    whatever the ``max_tokens`` of the requests before it."""

    source: Any
    window_s: float = 0.005
    max_batch: int = 32
    chunk_tokens: int = 16
    backend: Any = None  # whose tokenizer decodes token strings for logprobs
    stats: BatchStats = field(default_factory=BatchStats)
    _queue: deque = field(default_factory=deque)
    _arrived: asyncio.Event | None = None
    _task: asyncio.Task | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    def __post_init__(self) -> None:
        if self.window_s < 0:
            raise ValueError(f"batch window must be >= 0 seconds, got {self.window_s}")
        if self.max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {self.max_batch}")
        if self.chunk_tokens < 1:
            raise ValueError(f"chunk_tokens must be >= 1, got {self.chunk_tokens}")
        self.steps = self.source if isinstance(self.source, Resumable) else WholeCalls(self.source)

    @property
    def in_flight(self) -> int:
        """Rows queued or in progress (cancelled ones leave at the next round)."""
        return len(self._queue)

    async def submit(self, prompts: Sequence[Prompt], params: SamplingParams,
                     seeds: Sequence[int] | None = None) -> list[Generation]:
        """Queue ``prompts`` and wait for their generations (in order); prompt ``i`` samples from
        ``seeds[i]`` (default ``params.seed_for(i)``). Cancelling the wait abandons the rows."""
        self._ensure_started()
        loop = asyncio.get_running_loop()
        # Each prompt keeps its own seed, so grouping it with other requests never changes its sample.
        rows = [_Row(params, prompt, seeds[i] if seeds else params.seed_for(i), loop.create_future())
                for i, prompt in enumerate(prompts)]
        self._queue.extend(rows)
        assert self._arrived is not None
        self._arrived.set()
        try:
            return list(await asyncio.gather(*(row.future for row in rows)))
        except BaseException:  # a failed or abandoned request: its other rows need no more work
            for row in rows:
                row.future.cancel()
            raise

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        for row in self._queue:  # nobody will serve these any more
            if not row.future.done():
                row.future.set_exception(RuntimeError("the server is shutting down"))
        self._queue.clear()

    def _ensure_started(self) -> None:
        loop = asyncio.get_running_loop()
        if self._task is not None and self._loop is loop and not self._task.done():
            return
        # first use, or a new event loop (a test client's): start over on this one
        self._loop, self._arrived, self._queue = loop, asyncio.Event(), deque()
        self._task = loop.create_task(self._run())

    async def _run(self) -> None:
        assert self._arrived is not None
        loop = asyncio.get_running_loop()
        while True:
            while not self._live():
                self._arrived.clear()
                await self._arrived.wait()
            if all(row.state is None for row in self._queue):  # nothing in progress: let a batch gather
                deadline = loop.time() + self.window_s
                while len(self._queue) < self.max_batch and (left := deadline - loop.time()) > 0:
                    self._arrived.clear()
                    try:
                        await asyncio.wait_for(self._arrived.wait(), left)
                    except TimeoutError:
                        break
                if not self._live():
                    continue
            rows = [self._queue.popleft() for _ in range(min(self.max_batch, len(self._queue)))]
            await asyncio.to_thread(self._step, rows)
            for row in rows:
                if row.future.done():
                    continue  # abandoned meanwhile
                if isinstance(row.outcome, BaseException):
                    row.future.set_exception(row.outcome)
                elif row.outcome is not None:
                    row.future.set_result(row.outcome)
                else:
                    self._queue.append(row)  # unfinished: back of the line

    def _live(self) -> bool:
        """Whether rows are waiting, after dropping those whose requests were abandoned."""
        if any(row.future.done() for row in self._queue):
            self._queue = deque(row for row in self._queue if not row.future.done())
        return bool(self._queue)

    def _step(self, rows: list[_Row]) -> None:
        """One round, in the worker thread (backends are not thread-safe, so all their calls,
        tokenizing included, happen here, one round at a time)."""
        for row in rows:
            if row.state is None:
                try:
                    row.state = self.steps.begin(row.prompt, row.params, row.seed)
                except Exception as error:  # this prompt only (one that does not fit)
                    row.outcome = error
        for params, group in _group_by_params([row for row in rows if row.outcome is None]):
            try:
                self.steps.advance([row.state for row in group], params, self.chunk_tokens)
                done = [row for row in group if row.state.finish_reason is not None]
                results = self.steps.conclude([row.state for row in done], params) if done else []
                if len(results) != len(done):
                    raise RuntimeError(f"the backend returned {len(results)} generations for {len(done)} prompts")
            except Exception as error:  # every row of the call gets the error; the worker lives on
                self.stats.errors += 1
                for row in group:
                    row.outcome = error
                continue
            self.stats.batches += 1
            self.stats.requests += len(done)
            self.stats.max_batch_seen = max(self.stats.max_batch_seen, len(group))
            for row, result in zip(done, results):
                if params.logprobs:
                    count = len(result.logprobs or [])
                    result.meta["token_strings"] = token_strings(self.backend, result.token_ids, count)
                row.outcome = result


def _group_by_params(rows: list[_Row]) -> list[tuple[SamplingParams, list[_Row]]]:
    """Rows whose sampling parameters differ at most in their seeds and lengths (each row keeps
    its own), in order of first arrival; each group's parameters carry its rows' seeds as
    ``row_seeds`` and its longest ``max_new_tokens``."""
    groups: dict[SamplingParams, list[_Row]] = {}
    for row in rows:
        groups.setdefault(replace(row.params, seed=0, row_seeds=(), max_new_tokens=1), []).append(row)
    return [(replace(key, row_seeds=tuple(row.seed for row in group),
                     max_new_tokens=max(row.params.max_new_tokens for row in group)), group)
            for key, group in groups.items()]


# -- requests --------------------------------------------------------------------------------------
def _is_str_or_str_list(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def _unicode(value: str) -> str:
    """Text a tokenizer can take: JSON's ``"\\ud800"`` escape decodes to a lone surrogate, which is
    not Unicode text (tokenizing it failed, a 500); it is a 400 naming the field."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("text must be valid Unicode; a lone surrogate escape (\\ud800-\\udfff) is not") from None
    return value


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="ignore")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str

    @field_validator("content", mode="before")
    @classmethod
    def _text_only(cls, value: Any) -> str:
        """Content parts are joined when they are all ``{"type": "text", "text": ...}``."""
        if isinstance(value, str):
            return _unicode(value)
        if not isinstance(value, list) or not all(
                isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
                for part in value):
            raise ValueError("only text content is supported (a string or parts {\"type\": \"text\", \"text\": ...})")
        return _unicode("".join(part["text"] for part in value))


def _off(*values: Any) -> Callable[[Any], bool]:
    """A test that a field's value means "not used": None or one of ``values``."""
    return lambda value: value is None or any(value == v for v in values)


#: OpenAI fields this server cannot honour, each with a test that its value leaves it unused
#: (clients send defaults such as ``echo: false``); any other value is a 400 naming the field.
UNSUPPORTED_FIELDS: dict[str, Callable[[Any], bool]] = {
    "tools": _off([]), "tool_choice": _off("none"), "functions": _off([]), "function_call": _off("none"),
    "parallel_tool_calls": _off(True, False), "response_format": _off({"type": "text"}), "echo": _off(False),
    "suffix": _off(""), "best_of": _off(1), "presence_penalty": _off(0), "frequency_penalty": _off(0),
    "logit_bias": _off({}), "stream_options": _off(), "audio": _off(), "modalities": _off(["text"]),
    "prediction": _off(), "web_search_options": _off(), "guided_json": _off(), "guided_regex": _off(),
    "guided_choice": _off(), "guided_grammar": _off(),
}


class _SamplingRequest(BaseModel):
    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    max_tokens: int | None = Field(None, ge=1)
    temperature: float = Field(1.0, ge=0, le=2)
    top_p: float = Field(1.0, gt=0, le=1)
    top_k: int = Field(0, ge=-1)
    n: int = Field(1, ge=1, le=MAX_CHOICES)
    stop: str | list[str] | None = None
    seed: int | None = Field(None, ge=0, le=2**63 - 1)
    stream: bool = False

    @model_validator(mode="before")
    @classmethod
    def _supported(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name, unused in UNSUPPORTED_FIELDS.items():
                if name in data and not unused(data[name]):
                    raise PydanticCustomError("unsupported", "this server does not support `{field}` (only plain "
                                              "text sampling); leave it out", {"field": name})
        return data

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
        return [_unicode(stop) for stop in stops]


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

    @model_validator(mode="after")
    def _rows(self) -> "ChatRequest":
        return _check_rows(self, 1)

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
        if sum(len(p) for p in prompts) > MAX_TEXT_CHARS:
            raise ValueError(f"the prompts exceed {MAX_TEXT_CHARS} characters in all")
        if any(not p for p in prompts):  # nothing to condition on (the model saw 0 tokens: a 500 before)
            raise ValueError("a prompt must not be empty")
        for prompt in prompts:
            _unicode(prompt)
        return value

    @field_validator("logprobs")
    @classmethod
    def _sampled_only(cls, value: int | None) -> int | None:
        if value is not None and value > 1:
            raise ValueError("logprobs must be 0 or 1: only the sampled tokens' log-probs are available")
        return value

    @model_validator(mode="after")
    def _rows(self) -> "CompletionRequest":
        return _check_rows(self, 1 if isinstance(self.prompt, str) else len(self.prompt))


def _check_rows(request: Any, prompts: int) -> Any:
    """Prompts times choices is what a request costs: at most ``MAX_PROMPTS`` rows."""
    if prompts * request.n > MAX_PROMPTS:
        raise PydanticCustomError("too_many_rows", "{prompts} prompt(s) x n={n} choices is over {cap} "
                                  "generations per request", {"prompts": prompts, "n": request.n, "cap": MAX_PROMPTS,
                                                              "field": "n"})
    return request


# -- errors ----------------------------------------------------------------------------------------
class APIError(Exception):
    """An error answered in OpenAI's shape."""

    def __init__(self, status: int, message: str, *, param: str | None = None,
                 kind: str = "invalid_request_error", code: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.kind, self.code = status, message, param, kind, code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}

    def response(self, headers: Any = None) -> Any:
        """The JSON response; ASCII-escaped, so a message quoting what the client sent (a model name
        with a lone surrogate escape, say) still encodes."""
        from fastapi.responses import Response

        return Response(json.dumps(self.body()), status_code=self.status, headers=headers,
                        media_type="application/json")


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
        loc = loc or [str(f) for f in [(error.get("ctx") or {}).get("field")] if f]  # a whole-body check's field
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


def _usage(generations: Sequence[Generation], n: int = 1) -> dict[str, int]:
    """As OpenAI counts: each prompt once, however many choices it has (rows are prompt-major)."""
    prompt = sum(g.prompt_tokens for g in generations[::n])
    completion = sum(g.completion_tokens for g in generations)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


# -- the app ---------------------------------------------------------------------------------------
def _seed(request: _SamplingRequest) -> int:
    """The request's seed; without one a fresh seed, so each request samples independently
    (greedy decoding draws nothing: 0 keeps its parameters the same for every request)."""
    if request.seed is not None:
        return request.seed
    return 0 if request.temperature == 0 else secrets.randbits(63)


def sampling_params(request: _SamplingRequest, max_tokens: int | None, logprobs: bool,
                    max_tokens_limit: int) -> SamplingParams:
    """The backend's parameters for a validated request (module rules); :class:`APIError` if out of range."""
    wanted = max_tokens or min(DEFAULT_MAX_TOKENS, max_tokens_limit)
    if wanted > max_tokens_limit:
        raise APIError(400, f"max_tokens must be at most {max_tokens_limit}, got {wanted}", param="max_tokens")
    try:
        return SamplingParams(max_new_tokens=wanted, temperature=request.temperature, top_p=request.top_p,
                              top_k=max(0, request.top_k), stop=tuple(request.stop or ()),
                              seed=_seed(request),
                              logprobs=logprobs)
    except ValueError as error:
        raise APIError(400, str(error)) from None


def create_app(backend: Backend, *, model_name: str, max_tokens_limit: int = 4096,
               batch_window_s: float = 0.005, max_batch: int = 32, chunk_tokens: int = 16,
               max_body_bytes: int = MAX_BODY_BYTES, disconnect_poll_s: float = 0.25) -> Any:
    """The FastAPI app serving ``backend`` as ``model_name`` (module rules).

    ``app.state.batcher.stats`` counts the ``generate`` calls and their sizes (also on ``/health``)."""
    from fastapi import FastAPI
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException

    from seed_gym.serving import BodyLimit

    if max_tokens_limit < 1:
        raise ValueError(f"max_tokens_limit must be >= 1, got {max_tokens_limit}")
    batcher = Batcher(backend if isinstance(backend, Resumable) else backend.generate, window_s=batch_window_s,
                      max_batch=max_batch, chunk_tokens=chunk_tokens, backend=backend)
    created = int(time.time())

    @asynccontextmanager
    async def lifespan(_: Any):  # type: ignore[no-untyped-def]
        yield
        await batcher.stop()

    app = FastAPI(title="seed-gym policy server", lifespan=lifespan)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    app.state.batcher = batcher
    app.state.backend = backend

    @app.exception_handler(APIError)
    async def _api_error(_: Request, error: APIError) -> Any:
        return error.response()

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, error: RequestValidationError) -> Any:
        message, param = _validation_message(error.errors())
        return APIError(400, message, param=param).response()

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, error: StarletteHTTPException) -> Any:
        # what the framework answers itself (a body that is not UTF-8 or nested too deeply to
        # parse, an unknown path, a wrong method), in the same OpenAI error shape
        return APIError(error.status_code, str(error.detail)).response(getattr(error, "headers", None))

    def model_card() -> dict[str, Any]:
        return {"id": model_name, "object": "model", "created": created, "owned_by": "seed-gym"}

    def check_model(requested: str | None) -> None:
        if requested is not None and requested != model_name:
            raise APIError(404, f"The model `{requested}` does not exist; this server serves `{model_name}`.",
                           param="model", code="model_not_found")

    async def run(http: Request, prompts: list[Prompt], params: SamplingParams, n: int,
                  param: str) -> list[Generation]:
        """Each prompt's ``n`` samples (prompt-major; row ``k`` samples from ``params.seed_for(k)``).
        A client that hangs up abandons its rows: uvicorn does not cancel the handler, so the
        connection is polled while the rows wait."""
        job = asyncio.ensure_future(batcher.submit([p for p in prompts for _ in range(n)], params))
        try:
            while not (await asyncio.wait({job}, timeout=disconnect_poll_s))[0]:
                if await http.is_disconnected():
                    job.cancel()
                    raise APIError(499, "the client closed the connection", kind="client_closed_request")
            return job.result()
        except ContextLengthError as error:
            raise APIError(400, str(error), param=param, code="context_length_exceeded") from None
        except APIError:
            raise
        except Exception as error:
            raise APIError(500, f"generation failed: {type(error).__name__}: {error}", kind="server_error") from None
        finally:
            job.cancel()  # the handler itself was cancelled: so are its rows

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
    async def chat(request: ChatRequest, http: Request) -> dict[str, Any]:
        check_model(request.model)
        params = sampling_params(request, request.max_tokens or request.max_completion_tokens,
                                 request.logprobs, max_tokens_limit)
        messages = [{"role": m.role, "content": str(m.content)} for m in request.messages]
        if request.continue_final_message:
            if messages[-1]["role"] != "assistant" or request.add_generation_prompt:
                raise APIError(400, "continue_final_message needs an assistant message last and "
                                    "add_generation_prompt=false", param="continue_final_message")
            messages[-1]["continue"] = True
        generations = await run(http, [messages], params, request.n, "messages")
        return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()),
                "model": model_name,
                "choices": [_choice(i, g, params.stop, _chat_logprobs(g), chat=True) for i, g in enumerate(generations)],
                "usage": _usage(generations, request.n)}

    @app.post("/v1/completions")
    async def completions(request: CompletionRequest, http: Request) -> dict[str, Any]:
        check_model(request.model)
        params = sampling_params(request, request.max_tokens, request.logprobs is not None, max_tokens_limit)
        prompts: list[Prompt] = [request.prompt] if isinstance(request.prompt, str) else list(request.prompt)
        generations = await run(http, prompts, params, request.n, "prompt")
        return {"id": f"cmpl-{uuid.uuid4().hex}", "object": "text_completion", "created": int(time.time()),
                "model": model_name,
                "choices": [_choice(i, g, params.stop, _completion_logprobs(g), chat=False)
                            for i, g in enumerate(generations)],
                "usage": _usage(generations, request.n)}

    return app


def serve(app: Any, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning", **limits: Any) -> None:
    """Run ``app`` with uvicorn (blocking). Loopback by default: pass ``host="0.0.0.0"`` deliberately.

    ``limits``: read timeout, keep-alive and connection cap (:func:`seed_gym.serving.server_config`).
    """
    from seed_gym.serving import run_server

    run_server(app, host, port, log_level=log_level, **limits)
