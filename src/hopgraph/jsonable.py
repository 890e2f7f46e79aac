"""Values made JSON: what explanations, metadata and parameters carry (numpy scalars and
arrays, tuples, sets, non-finite floats) as plain JSON values, for the HTTP service and the MCP
server alike."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["jsonable"]


def jsonable(value: Any) -> Any:
    """``value`` with numpy scalars and arrays made plain, tuples made lists and non-finite
    floats made None: explanations and parameters as JSON can carry them."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
