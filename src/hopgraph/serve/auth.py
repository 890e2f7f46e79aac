"""Bearer tokens: a pure ASGI middleware that refuses writes (and, if asked, reads) without the
server's token, before the request body is read or anything runs.

Writes are every request that changes an index: ``POST /passages``, ``POST /passages/delete``
and ``DELETE /passages/{id}``, the same under ``/indexes/{name}``, and creating or dropping a
named index (``POST /indexes``, ``DELETE /indexes/{name}``): under ``/indexes`` every request
but a ``GET``/``HEAD`` and a search counts as a write. With ``protect_reads`` every other route
needs the token too, except ``GET /health`` (for load balancers' probes). The token is compared
in constant time (:func:`hmac.compare_digest`); a refused request answers 401 with
``WWW-Authenticate: Bearer`` and the common error body, and changes nothing.
"""

from __future__ import annotations

import hmac
import ipaddress
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from hopgraph.serve.problems import error_body

OPEN_ALWAYS = frozenset({("GET", "/health"), ("HEAD", "/health")})


def is_write(method: str, path: str) -> bool:
    """Whether a request changes an index (or creates or drops one)."""
    if path == "/indexes" or path.startswith("/indexes/"):
        if method in ("GET", "HEAD"):
            return False
        rest = path[len("/indexes/") :].partition("/")[2]  # after the index's name
        return not (method == "POST" and rest in ("search", "search/batch"))
    if method == "POST" and path in ("/passages", "/passages/delete"):
        return True
    return method == "DELETE" and path.startswith("/passages/")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) only listens on this machine."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


class TokenMiddleware:
    """Answer 401 to requests that need ``token`` and do not carry it."""

    def __init__(self, app: ASGIApp, token: str, protect_reads: bool = False):
        if not token:
            raise ValueError("TokenMiddleware needs a non-empty token")
        self.app = app
        self.token = token.encode("utf-8")
        self.protect_reads = protect_reads

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self._needs_token(scope["method"], scope["path"]):
            if not self._carries_token(scope):
                await _unauthorized(send, scope["method"], scope["path"])
                return
        await self.app(scope, receive, send)

    def _needs_token(self, method: str, path: str) -> bool:
        if (method, path) in OPEN_ALWAYS:
            return False
        return self.protect_reads or is_write(method, path)

    def _carries_token(self, scope: Scope) -> bool:
        values = [v for k, v in scope.get("headers", ()) if k.lower() == b"authorization"]
        if len(values) != 1:
            return False
        scheme, _, given = values[0].strip().partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        return hmac.compare_digest(given.strip(), self.token)


async def _unauthorized(send: Send, method: str, path: str) -> None:
    what = "writes" if is_write(method, path) else "requests"
    body = error_body(
        "unauthorized",
        f"{what} to this server need its token: send the header `Authorization: Bearer "
        "<token>` (the token hopgraph serve was started with, --token or HOPGRAPH_TOKEN); "
        "nothing was changed",
    )
    headers: list[Any] = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b'Bearer realm="hopgraph"'),
    ]
    await send({"type": "http.response.start", "status": 401, "headers": headers})
    await send({"type": "http.response.body", "body": body})
