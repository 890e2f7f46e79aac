"""A pure ASGI middleware that refuses request bodies larger than a limit (413).

A declared ``Content-Length`` beyond the limit is refused before the application runs. Bodies
without one (chunked transfer) are counted as they stream in: the read that crosses the limit
raises :class:`BodyTooLarge`, which the application answers as a 413 (or, if the application
swallowed it, the middleware answers itself while no response has started).
"""

from __future__ import annotations

from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hopgraph.serve.problems import ApiError, error_body


class BodyTooLarge(ApiError):
    """The request body is larger than the server accepts."""

    def __init__(self, limit: int):
        super().__init__(
            413, "body_too_large", f"the request body is larger than the limit of {limit} bytes"
        )


class BodyLimitMiddleware:
    """Refuse HTTP request bodies over ``max_bytes`` with a 413 JSON error."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared == -1:
            await _answer(send, 400, "invalid_header", "the Content-Length header is not valid")
            return
        if declared is not None and declared > self.max_bytes:
            await _answer(send, 413, *_too_large(self.max_bytes))
            return

        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if started:
                raise
            await _answer(send, 413, *_too_large(self.max_bytes))


def _too_large(limit: int) -> tuple[str, str]:
    return "body_too_large", f"the request body is larger than the limit of {limit} bytes"


def _content_length(scope: Scope) -> int | None:
    """The declared body length; None when absent, -1 when malformed or repeated differently."""
    values = {v for k, v in scope.get("headers", ()) if k.lower() == b"content-length"}
    if not values:
        return None
    if len(values) > 1:
        return -1
    raw = values.pop().strip()
    if not raw.isdigit():
        return -1
    return int(raw) if len(raw) <= 18 else 10**18  # (no 5000-digit int parsing)


async def _answer(send: Send, status: int, type_: str, message: str) -> None:
    body = error_body(type_, message)
    headers: list[Any] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
