"""HTTP methods per path: ``HEAD`` wherever ``GET`` is served, and the full ``Allow`` list.

Routes are matched per (path, method): a path served by several routes (``GET`` and ``DELETE
/passages/{id}``) would answer a 405 naming only the first route's methods, and FastAPI's
routes take no ``HEAD``. :func:`allowed_methods` asks every route of the application which
methods it serves for a path (through the routes' own matching, so it sees what requests
see); :class:`HeadMiddleware` answers ``HEAD`` as ``GET`` without the body (RFC 9110 §9.3.2).

A concrete path wins over a template that would also match it, as OpenAPI's path matching
says: ``/passages/delete`` is the path of ``POST /passages/delete`` only, not also the passage
``delete`` of ``GET``/``DELETE /passages/{passage_id}`` (the ``passage_id`` convertor leaves
that one word out), so its 405 lists ``POST`` alone, as the schema does. A passage whose id is
``delete`` is reached by search, ``POST /passages/delete`` and the library.
"""

from __future__ import annotations

from typing import Any

from starlette.convertors import Convertor, register_url_convertor
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# in the order an Allow header lists them; HEAD is added wherever GET is served
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")
RESERVED_PASSAGE_IDS = ("delete",)
"""Last path segments that name a concrete route beside ``/passages/{passage_id}``."""


class PassageIdConvertor(Convertor[str]):
    """``{passage_id:passage_id}``: the rest of the path (slashes included, as ``path``), but
    not a word of :data:`RESERVED_PASSAGE_IDS` (their concrete routes win)."""

    regex = "(?!(?:" + "|".join(RESERVED_PASSAGE_IDS) + ")$).*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("passage_id", PassageIdConvertor())


def serves(app: Any, path: str, method: str, root_path: str = "") -> bool:
    """Whether a route of ``app`` (a Starlette/FastAPI application) takes ``method`` on
    ``path``."""
    if method == "HEAD":
        method = "GET"
    probe: Scope = {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": root_path,
        "headers": [],
        "query_string": b"",
    }
    return any(route.matches(dict(probe))[0] == Match.FULL for route in app.router.routes)


def allowed_methods(app: Any, path: str, root_path: str = "") -> list[str]:
    """Every method ``app`` serves on ``path``, HEAD after GET where GET is served."""
    out = [m for m in METHODS if serves(app, path, m, root_path)]
    return ["GET", "HEAD", *out[1:]] if out[:1] == ["GET"] else out


class HeadMiddleware:
    """Answer ``HEAD`` on a path that serves ``GET`` as the ``GET`` (same status and headers,
    ``Content-Length`` included) with an empty body; ``HEAD`` elsewhere goes on to a 405."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        if not serves(scope["app"], scope["path"], "GET", scope.get("root_path", "")):
            await self.app(scope, receive, send)
            return

        async def no_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, no_body)
