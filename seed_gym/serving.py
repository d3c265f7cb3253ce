"""What every seed-gym HTTP server does to protect itself, in one place.

* :class:`BodyLimit` — an ASGI middleware that answers 413 to a body over ``max_bytes``, by its
  ``Content-Length`` before reading anything, or as soon as a chunked body passes the limit; the
  handler never sees an oversized body, so memory per request is bounded.
* :func:`compact_validation_errors` — FastAPI's 422 echoes each offending input back (10 MB in,
  10 MB out) and fails with a 500 when that input is not JSON-serialisable (``NaN``); here the
  422 carries each error's location, message and type only.
* :func:`run_server` / :func:`serve_in_thread` — uvicorn with the connection limits every server
  shares: a request must arrive in full (headers and body) within ``read_timeout_s`` of the
  connection opening or of its first byte, else the connection is closed (408 when a request had
  begun); idle keep-alive connections close after ``keep_alive_s``; past ``max_connections`` open
  connections a request gets 503. uvicorn alone never times out a request that is still arriving,
  so a client trickling bytes held a connection forever; :func:`deadline_protocol` adds that.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import json
import threading
import time
from typing import Annotated, Any

import h11
import typer
from starlette.requests import ClientDisconnect

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

        try:
            await self.app(scope, limited_receive, guarded_send)
        except ClientDisconnect:  # the client went (or was timed out) mid-body: nobody to answer
            pass

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


# -- connection limits --------------------------------------------------------------------------

DEFAULT_READ_TIMEOUT_S = 20.0
DEFAULT_KEEP_ALIVE_S = 5.0
DEFAULT_MAX_CONNECTIONS = 512

#: The ``seed-gym serve ...`` options for the limits, one definition for every server command.
ReadTimeoutOption = Annotated[float, typer.Option(
    "--read-timeout", min=0.001, help="Seconds a client has to send a whole request (headers and body).")]
KeepAliveOption = Annotated[float, typer.Option(
    "--keep-alive", min=0.001, help="Seconds an idle keep-alive connection stays open.")]
MaxConnectionsOption = Annotated[int, typer.Option(
    "--max-connections", min=1, help="Open connections past which requests get 503.")]

_TIMEOUT_BODY = b"request not received in time"
_TIMEOUT_408 = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(_TIMEOUT_BODY), _TIMEOUT_BODY))


class _RequestDeadline:
    """Mixin over a uvicorn HTTP protocol: a timer runs while the client owes bytes of a request.

    Armed when the connection opens and at the first byte of each later request, disarmed once the
    request is read in full, so a slow *response* (a long generation) is never cut off.
    """

    read_timeout: float = DEFAULT_READ_TIMEOUT_S
    _deadline: asyncio.TimerHandle | None = None
    _request_begun = False  # bytes of a request came: on expiry it is answered 408

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)  # type: ignore[misc]

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.read_timeout, self._expire)  # type: ignore[attr-defined]

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        transport, cycle = self.transport, self.cycle  # type: ignore[attr-defined]
        if transport.is_closing():
            return
        if self._request_begun and (cycle is None or not cycle.response_started):
            transport.write(_TIMEOUT_408)
        if cycle is not None and not cycle.response_complete:
            # The app sees a disconnect (its receive wakes up) and whatever it sends is dropped.
            cycle.disconnected = True
            cycle.message_event.set()
        transport.close()


class _H11Deadline(_RequestDeadline):
    """h11 keeps the client's state: the request is owed while it is mid-header or mid-body."""

    def data_received(self, data: bytes) -> None:
        super().data_received(data)  # type: ignore[misc]
        self._track()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._track()  # a pipelined request may now be the one being read

    def _track(self) -> None:
        conn = self.conn  # type: ignore[attr-defined]
        state = conn.their_state
        self._request_begun = state is h11.SEND_BODY or (state is h11.IDLE and bool(conn.trailing_data[0]))
        if self._request_begun:
            self._arm()
        else:
            self._disarm()


class _HttpToolsDeadline(_RequestDeadline):
    """httptools reports the first byte and the end of each request as parser callbacks."""

    def on_message_begin(self) -> None:
        super().on_message_begin()  # type: ignore[misc]
        self._request_begun = True
        self._arm()

    def on_message_complete(self) -> None:
        self._request_begun = False
        self._disarm()
        super().on_message_complete()  # type: ignore[misc]


@functools.cache
def deadline_protocol(http: str = "auto", read_timeout_s: float = DEFAULT_READ_TIMEOUT_S) -> type:
    """uvicorn's ``http`` protocol class (``h11``, ``httptools`` or ``auto``) with the read deadline."""
    if http == "auto":
        http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    if http == "h11":
        from uvicorn.protocols.http.h11_impl import H11Protocol

        bases: tuple[type, ...] = (_H11Deadline, H11Protocol)
    elif http == "httptools":
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        bases = (_HttpToolsDeadline, HttpToolsProtocol)
    else:
        raise ValueError(f"http must be 'auto', 'h11' or 'httptools', got {http!r}")
    return type(f"{bases[1].__name__}WithDeadline", bases, {"read_timeout": float(read_timeout_s)})


def server_config(app: Any, host: str = "127.0.0.1", port: int = 8000, *,
                  read_timeout_s: float = DEFAULT_READ_TIMEOUT_S, keep_alive_s: float = DEFAULT_KEEP_ALIVE_S,
                  max_connections: int = DEFAULT_MAX_CONNECTIONS, http: str = "auto",
                  log_level: str = "warning") -> Any:
    """The ``uvicorn.Config`` every seed-gym server runs with (module docstring)."""
    import uvicorn

    for name, value in (("read_timeout_s", read_timeout_s), ("keep_alive_s", keep_alive_s),
                        ("max_connections", max_connections)):
        if not value > 0:
            raise ValueError(f"{name} must be positive, got {value!r}")
    # ws="none": no server speaks WebSocket, and an upgraded connection would leave the deadline's care.
    return uvicorn.Config(app, host=host, port=port, log_level=log_level, ws="none",
                          http=deadline_protocol(http, float(read_timeout_s)),
                          timeout_keep_alive=keep_alive_s, limit_concurrency=int(max_connections))


def run_server(app: Any, host: str = "127.0.0.1", port: int = 8000, **limits: Any) -> None:
    """Serve ``app`` until interrupted (``limits``: the keyword arguments of :func:`server_config`)."""
    import uvicorn

    uvicorn.Server(server_config(app, host, port, **limits)).run()


def serve_in_thread(app: Any, host: str = "127.0.0.1", port: int = 0, **limits: Any) -> tuple[Any, str]:
    """Serve ``app`` from a daemon thread (port 0: the OS picks one); returns (server, base URL).

    Stop it with ``server.should_exit = True``.
    """
    import uvicorn

    server = uvicorn.Server(server_config(app, host, port, **limits))
    thread = threading.Thread(target=server.run, daemon=True, name=f"seed-gym-server-{port}")
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:  # a readiness poll, bounded so a failed start cannot hang
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError(f"the server for {app!r} did not start on {host}:{port}")
        time.sleep(0.02)
    bound_port = server.servers[0].sockets[0].getsockname()[1]
    return server, f"http://{host}:{bound_port}"
