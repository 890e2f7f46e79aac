"""Strict JSON request bodies: UTF-8 only, no NaN/Infinity, no lone surrogates, bounded depth.

FastAPI reads bodies with :func:`json.loads`, which accepts ``NaN``, turns ``1e999`` into
infinity, lets UTF-8-encoded surrogates through and answers 500 when its error handler echoes
such input. :class:`StrictJSONRoute` gives every route a request whose ``json()`` refuses all of
that with a clear 400 or 422 before validation, so the models only ever see clean values.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute

from hopgraph.serve.problems import ApiError

MAX_DEPTH = 32


class InvalidBody(ApiError):
    """A request body that is not acceptable JSON."""


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InvalidBody(400, "invalid_json", "a number in the body is too large for a float")
    return value


def _no_constant(name: str) -> Any:
    raise InvalidBody(400, "invalid_json", f"{name} is not valid JSON (numbers must be finite)")


def parse_json(body: bytes) -> Any:
    """Decode ``body`` as strict UTF-8 JSON, or raise :class:`InvalidBody` (400 or 422)."""
    try:
        text = body.decode("utf-8")  # strict: also refuses UTF-8-encoded surrogates
    except UnicodeDecodeError:
        raise InvalidBody(400, "invalid_encoding", "the request body is not valid UTF-8") from None
    try:
        value = json.loads(text, parse_float=_float, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise InvalidBody(
            400, "invalid_json", f"the request body is not valid JSON ({exc.msg} at line "
            f"{exc.lineno}, column {exc.colno})"
        ) from None  # fmt: skip
    except RecursionError:
        raise InvalidBody(400, "invalid_json", "the request body is nested too deeply") from None
    except ValueError:  # an integer with more digits than Python converts
        raise InvalidBody(400, "invalid_json", "a number in the body is too large") from None
    check_value(value)
    return value


def check_value(value: Any) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH` and strings holding lone surrogates (JSON
    ``"\\ud800"``: not text, and not encodable as UTF-8)."""
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(value, 0, ())]
    while stack:
        v, depth, loc = stack.pop()
        if isinstance(v, str):
            _check_str(v, loc)
        elif isinstance(v, dict | list):
            if depth >= MAX_DEPTH:
                raise InvalidBody(
                    422, "too_deep", f"the body nests arrays/objects deeper than {MAX_DEPTH}"
                )
            if isinstance(v, dict):
                for key, item in v.items():
                    _check_str(key, loc)
                    stack.append((item, depth + 1, (*loc, key)))
            else:
                stack.extend((item, depth + 1, (*loc, i)) for i, item in enumerate(v))


def _check_str(s: str, loc: tuple[Any, ...]) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        where = ["body", *[p if isinstance(p, int) else p[:80] for p in loc]]
        raise InvalidBody(
            422,
            "invalid_string",
            "a string in the body holds a lone UTF-16 surrogate (\\ud800-\\udfff), which is not "
            "text",
            [{"loc": where, "msg": "lone surrogate", "type": "invalid_string"}],
        ) from None


def _is_json(content_type: str) -> bool:
    main = content_type.split(";", 1)[0].strip().lower()
    return main == "application/json" or (
        main.startswith("application/") and main.endswith("+json")
    )


class StrictJSONRequest(Request):
    """A request whose ``json()`` is :func:`parse_json`."""

    async def json(self) -> Any:
        if not hasattr(self, "_strict_json"):
            self._strict_json = parse_json(await self.body())
        return self._strict_json


class StrictJSONRoute(APIRoute):
    """A route reading JSON bodies with :class:`StrictJSONRequest`; a body sent with another
    content type is refused with 415 (a body without a content type is read as JSON)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        takes_body = self.body_field is not None

        async def strict_handler(request: Request) -> Response:
            request = StrictJSONRequest(request.scope, request.receive)
            ctype = request.headers.get("content-type")
            if takes_body and ctype is not None and not _is_json(ctype):
                raise ApiError(415, "unsupported_media_type", "send the body as application/json")
            return await handler(request)

        return strict_handler
