"""A Search-R1 compatible retrieval server (FastAPI + uvicorn; 127.0.0.1 by default).

Contract (docs/benchmarks.md 3.1)::

    POST /retrieve  {"queries": ["q1", "q2"], "topk": 3, "return_scores": true}
      -> {"result": [[{"document": {"id", "contents", "title", "text"}, "score": 12.3}, ...], ...]}
    with return_scores false: {"result": [[{"id", "contents", "title", "text"}, ...], ...]}
    The verl-agent form {"query": "q", ...} is accepted too (one result list).
    GET /health -> {"status": "ok", "backend", "passages", "batches", "queries", "max_batch_seen"}

Rules: exactly one of ``queries`` (0..max_queries strings) and ``query``; ``queries: []`` gets
``{"result": []}`` without searching (Search-R1's client posts every turn, even when no row
searched, and reads ``result``). ``topk`` is an integer in 0..max_topk, read as pydantic's lax
``int`` (``3``, ``3.0`` and ``"3"`` alike, as Search-R1's ``Optional[int]``); a missing, null or
zero ``topk`` means the server's ``--topk`` (Search-R1's ``if not request.topk``). Each query is at
most ``max_query_chars``. Anything else is a 422 with a message naming the field. Concurrent
requests are merged into one batched ``search`` call (run off the event loop), and each request
gets exactly its own results.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from seed_gym.envs.searchqa.protocol import split_contents
from seed_gym.serving import guard, run_server

MAX_QUERIES = 1024
MAX_QUERY_CHARS = 10_000
MAX_TOPK = 100
MAX_BODY_BYTES = MAX_QUERIES * MAX_QUERY_CHARS + 2**20

SearchFn = Callable[[list[str], int], list[list[Any]]]


@dataclass
class BatchStats:
    batches: int = 0
    queries: int = 0
    max_batch_seen: int = 0


@dataclass
class Batcher:
    """Merges concurrent ``submit`` calls into batched ``search`` calls (at most ``max_batch`` queries)."""

    search: SearchFn
    max_batch: int = 512
    stats: BatchStats = field(default_factory=BatchStats)
    _queue: asyncio.Queue | None = None
    _task: asyncio.Task | None = None

    def start(self) -> None:
        self._queue = asyncio.Queue()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    async def submit(self, queries: list[str], k: int) -> list[list[Any]]:
        assert self._queue is not None, "Batcher.start() was not called"
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        await self._queue.put((queries, k, future))
        return await future

    async def _run(self) -> None:
        assert self._queue is not None
        while True:
            items = [await self._queue.get()]
            size = len(items[0][0])
            while size < self.max_batch and not self._queue.empty():
                item = self._queue.get_nowait()
                items.append(item)
                size += len(item[0])
            await self._serve(items)

    async def _serve(self, items: list[tuple[list[str], int, asyncio.Future]]) -> None:
        flat = [q for queries, _, _ in items for q in queries]
        k = max(k for _, k, _ in items)
        try:
            results = await asyncio.to_thread(self.search, flat, k)
        except Exception as error:  # every waiting request gets the error, the loop lives on
            for _, _, future in items:
                if not future.done():
                    future.set_exception(error)
            return
        self.stats.batches += 1
        self.stats.queries += len(flat)
        self.stats.max_batch_seen = max(self.stats.max_batch_seen, len(flat))
        start = 0
        for queries, k_item, future in items:
            chunk = [hits[:k_item] for hits in results[start:start + len(queries)]]
            start += len(queries)
            if not future.done():
                future.set_result(chunk)


class RetrieveRequest(BaseModel):
    """The body of POST /retrieve (module rules)."""

    model_config = ConfigDict(extra="ignore")
    queries: list[str] | None = Field(None, max_length=MAX_QUERIES)
    query: str | None = None
    topk: int | None = Field(None, ge=0, le=MAX_TOPK)  # 0 and None: the server's default
    return_scores: bool = False

    @field_validator("queries")
    @classmethod
    def _query_lengths(cls, value: list[str] | None) -> list[str] | None:
        if value and any(len(q) > MAX_QUERY_CHARS for q in value):
            raise ValueError(f"each query must be at most {MAX_QUERY_CHARS} characters")
        return value

    @model_validator(mode="after")
    def _one_form(self) -> "RetrieveRequest":
        if (self.queries is None) == (self.query is None):
            raise ValueError("give exactly one of 'queries' (a list of strings) and 'query' (a string)")
        if self.query is not None and len(self.query) > MAX_QUERY_CHARS:
            raise ValueError(f"query must be at most {MAX_QUERY_CHARS} characters")
        return self


def _document(doc_id: str, contents: str) -> dict[str, str]:
    title, text = split_contents(contents)
    return {"id": doc_id, "contents": contents, "title": title.strip('"'), "text": text}


def create_app(retriever: Any, passages: Mapping[str, str], *, default_topk: int = 3,
               max_batch: int = 512, backend_name: str | None = None) -> Any:
    """The FastAPI app over a built retriever and the passage id -> contents map."""
    from fastapi import FastAPI

    batcher = Batcher(retriever.search, max_batch=max_batch)

    @asynccontextmanager
    async def lifespan(_: Any):  # type: ignore[no-untyped-def]
        batcher.start()
        yield
        await batcher.stop()

    app = FastAPI(title="seed-gym retriever", lifespan=lifespan)
    app.state.batcher = batcher

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "backend": backend_name or getattr(retriever, "backend", "?"),
                "passages": len(passages), **vars(batcher.stats)}

    @app.post("/retrieve")
    async def retrieve(request: RetrieveRequest) -> dict[str, Any]:
        queries = request.queries if request.queries is not None else [request.query or ""]
        if not queries:  # nothing to search: an empty result, not an error
            return {"result": []}
        hits = await batcher.submit(list(queries), request.topk or default_topk)
        if request.return_scores:
            result: list[list[dict[str, Any]]] = [
                [{"document": _document(h.doc_id, passages[h.doc_id]), "score": h.score} for h in row] for row in hits]
        else:
            result = [[_document(h.doc_id, passages[h.doc_id]) for h in row] for row in hits]
        return {"result": result}

    # Bodies are capped (the largest legal one, 1,024 queries of 10,000 ASCII characters, fits);
    # a 422 names what is wrong without echoing the input.
    return guard(app, max_body_bytes=MAX_BODY_BYTES)


def serve(app: Any, host: str = "127.0.0.1", port: int = 8000, log_level: str = "warning", **limits: Any) -> None:
    """Run ``app`` (blocking) with the shared connection limits (:func:`seed_gym.serving.server_config`)."""
    run_server(app, host, port, log_level=log_level, **limits)
