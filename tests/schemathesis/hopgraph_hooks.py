"""schemathesis hooks for tests/test_schemathesis.py (loaded through SCHEMATHESIS_HOOKS) on the
server with named indexes only; the plain server runs with no hook at all.

A method's ``params`` are stated in the schema (``Params_METHOD``, a ``oneOf`` keyed by
``method``), so no refusal of them is dropped. Two refusals of schema-valid requests remain the
server's right, and one schema for every named index cannot state them; exactly those are
dropped, every other failure fails the test:

- ``POST /indexes`` with the ``partial_triples`` part over passages from which no triple is
  extracted (random text) cannot build the part: 422 saying the triples part holds no triples;
- a search of a named index (``/indexes/NAME/search``) with a method whose parts that index
  lacks: 422 ``missing_index_part``. Each named index has the parts it was created with (``GET
  /indexes/NAME/info``), which one schema for all names cannot list; ``/search`` lists exactly
  the served index's methods, and is held to them.
"""

from __future__ import annotations

from typing import Any

import schemathesis

SCHEMA_VALID_REJECTED = "ST202"


def _error(response: Any) -> dict[str, Any]:
    try:
        return response.json().get("error") or {}
    except Exception:
        return {}


@schemathesis.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    if getattr(failure, "code", None) != SCHEMA_VALID_REJECTED or response.status_code != 422:
        return True
    error, body = _error(response), case.body if isinstance(case.body, dict) else {}
    if error.get("type") == "missing_index_part" and case.path.startswith("/indexes/{name}/"):
        return False
    if (
        case.path == "/indexes"
        and "partial_triples" in (body.get("parts") or ())
        and "holds no triples" in error.get("message", "")
    ):
        return False
    return True
