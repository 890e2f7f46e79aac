"""Loading a cross-encoder by name: the torch one (:mod:`hopgraph.models.cross_encoder`) or the
ONNX one (:mod:`hopgraph.models.reranker_onnx`), shared per process, and the packaged default
reranker. This module imports both forms and neither imports it, so the two stay free of each
other's loader (issue 39: no import circle)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from hopgraph.errors import ConfigError
from hopgraph.models.cross_encoder import CrossEncoder
from hopgraph.models.reranker_onnx import OnnxCrossEncoder, is_onnx_cross_encoder

_CACHE: dict[tuple[str, int | None, str], Any] = {}
_CACHE_LOCK = threading.Lock()
# The packaged default reranker: a 4-layer int8 ONNX cross-encoder (see docs/methods.md,
# "The packaged reranker", and `make reranker`, which reproduces it).
DEFAULT_RERANKER = Path(__file__).resolve().parent / "reranker"


def default_reranker() -> str:
    """The packaged reranker's folder; a clear error when the package lacks it."""
    if not is_onnx_cross_encoder(DEFAULT_RERANKER):
        raise ConfigError(
            f"the packaged reranker is missing from {DEFAULT_RERANKER}: rebuild it with "
            "`make reranker`, or pass model=FOLDER (e.g. from `hopgraph train-reranker`)"
        )
    return str(DEFAULT_RERANKER)


def load_cross_encoder(
    model: str = "", *, max_length: int | None = None, precision: str = "auto"
) -> Any:
    """A process-wide shared cross-encoder (each model is loaded once per process): an
    exported ONNX folder (:mod:`hopgraph.models.reranker_onnx`) runs on ONNX Runtime, anything
    else as a Hugging Face model on torch. ``model=""``: the packaged default reranker."""
    model = model or default_reranker()
    path = Path(model).expanduser()
    key = (str(path.resolve()) if path.exists() else model, max_length, precision)
    with _CACHE_LOCK:
        ce = _CACHE.get(key)
        if ce is None:
            if is_onnx_cross_encoder(path):
                ce = OnnxCrossEncoder(path, max_length=max_length)
            else:
                ce = CrossEncoder(model, max_length=max_length, precision=precision)
            _CACHE[key] = ce
        return ce
