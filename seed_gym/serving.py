"""What every seed-gym HTTP server does to protect itself, in one place.

* :class:`BodyLimit` — an ASGI middleware that answers 413 to a body over ``max_bytes``, by its
  ``Content-Length`` before reading anything, or as soon as a chunked body passes the limit; the
  handler never sees an oversized body, so memory per request is bounded.
* :func:`compact_validation_errors` — FastAPI's 422 echoes each offending input back (10 MB in,
  10 MB out) and fails with a 500 when that input is not JSON-serialisable (``NaN``); here the
  422 carries each error's location, message and type only.
"""

from __future__ import annotations

import json
from typing import Any

#: A generous cap for JSON APIs whose largest legal body is a few megabytes.
DEFAULT_MAX_BODY_BYTES = 16 * 2**20


class BodyLimit:
    """ASGI middleware: bodies over ``max_bytes`` get 413 ``{"detail": ...}``."""

    def __init__(self, app: Any, max_bytes: int = DEFAULT_MAX_BODY_BYTES) -> None:
        self.app, self.max_bytes = app, int(max_bytes)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._reject(send)
            return
        seen = 0
        rejected = False

        async def limited_receive() -> dict[str, Any]:
            nonlocal seen, rejected
            if rejected:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    # Answer now; to the app the client has gone, so it stops reading.
                    rejected = True
                    await self._reject(send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: dict[str, Any]) -> None:
            if not rejected:  # once 413 is sent, whatever the app answers is dropped
                await send(message)

        await self.app(scope, limited_receive, guarded_send)

    async def _reject(self, send: Any) -> None:
        body = json.dumps({"detail": f"request body over {self.max_bytes} bytes"}).encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def compact_errors(errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pydantic errors without their ``input`` (and ``ctx`` objects): location, message, type."""
    return [{"loc": list(error.get("loc", ())), "msg": str(error.get("msg", ""))[:500], "type": str(error.get("type", ""))}
            for error in errors[:20]]


def compact_validation_errors(app: Any) -> None:
    """Answer request validation errors with a small 422 that never echoes the input."""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Any, error: RequestValidationError) -> JSONResponse:
        return JSONResponse({"detail": compact_errors(error.errors())}, status_code=422)


def guard(app: Any, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> Any:
    """``app`` with compact 422s, wrapped in a :class:`BodyLimit` (the object to serve)."""
    compact_validation_errors(app)
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    return app
