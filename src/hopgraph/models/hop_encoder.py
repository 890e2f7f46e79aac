"""The trained hop query encoder behind ``multihop``'s ``hop_encoder`` switch (issue 37).

The encoder reads the question together with a passage the ranker already puts on top (an
*anchor*), as ``question [SEP] title. text``, and gives a vector for the passage the question
needs *after* that one: the next hop. A candidate's two extra features are the best cosine of its
passage vector with the hop vectors of the round's top :data:`ANCHORS` anchors (the anchor
itself excluded) and that minus its plain cosine; a ranker fitted with those two columns scores
the candidates, in the first round and in the chain round.

A hop encoder folder holds

- ``layers.safetensors`` and ``meta.json``: the encoder's transformer layers in bf16 with its
  training card, in the passage student's format (:mod:`hopgraph.models.student`): the token
  embeddings, pooling and tokenizer are the bundled MiniLM's own, frozen in training, so the
  folder is 21 MB;
- ``ranker.json``: the LightGBM model over :data:`~hopgraph.retrieve.hop_features.FEATURES`
  plus :data:`HOP_ENCODER_FEATURES`, for corpora with entity-name titles and passage vectors.

The bundled folder (:data:`BUNDLED_HOP_ENCODER`) is made by ``benchmarks/hop_encoder.py
--ship`` from the gold chains of ``../shared/data``'s dev and train sets
(:mod:`hopgraph.training.hop_encoder`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.errors import ConfigError
from hopgraph.models.ranker import HopRanker

BUNDLED_HOP_ENCODER = Path(__file__).parent / "hop-encoder"
RANKER = "ranker.json"
HOP_ENCODER_FEATURES: tuple[str, ...] = ("hop_encoder", "hop_encoder_gain")
ANCHORS = 3
"""Anchors a round's hop vectors are taken from: the round's best 3 (as trained)."""
HOP_PRECISIONS = ("auto", "bf16", "fp32", "int8")
PAD_TO = 32
"""In bf16, hop texts are padded to a multiple of this many tokens: few matrix shapes, so a
long-running process does not keep one bf16 kernel per text length (measured: 290 MB more after
300 rounds without it)."""

Columns = Callable[[np.ndarray, list[int], np.ndarray], np.ndarray]
"""Extra feature columns of a round's candidates: (rows, anchors, feature matrix) → columns."""


def hop_text(corpus: Any, question: str, row: int) -> str:
    """The encoder's input for ``question`` and the anchor passage at ``row``."""
    p = corpus[row]
    return f"{question} [SEP] {p.title}. {p.text}"


@dataclass
class HopEncoder:
    """A loaded hop encoder: its query tower (an :class:`~hopgraph.models.embedder.Embedder`)
    and the ranker fitted with its two features."""

    embedder: Any
    ranker: HopRanker
    meta: dict[str, Any]

    def columns(self, index: Any, question: str) -> Columns:
        """The two hop-encoder columns for one question's rounds; each (question, anchor) hop
        vector is encoded once, so the chain round only encodes its new anchors."""
        dense = index.part("dense")
        corpus = index.corpus
        hops: dict[int, np.ndarray] = {}

        def cols(rows: np.ndarray, anchors: list[int], X: np.ndarray) -> np.ndarray:
            A = [int(a) for a in anchors[:ANCHORS]]
            todo = [a for a in dict.fromkeys(A) if a not in hops]
            if todo:
                V = self.embedder.encode([hop_text(corpus, question, a) for a in todo])
                hops.update(zip(todo, V, strict=True))
            return hop_columns(dense, rows, A, [hops[a] for a in A], X)

        return cols


def hop_columns(
    dense: Any, rows: np.ndarray, anchors: list[int], hops: list[np.ndarray], X: np.ndarray
) -> np.ndarray:
    """The two features of ``rows``: the best cosine of a row's passage vector with the hop
    vectors ``hops`` of ``anchors`` (a row's own hop vector excluded), and that minus its plain
    cosine (``X``'s column)."""
    from hopgraph.retrieve.hop_features import COL

    out = np.zeros((len(rows), 2))
    if not anchors or not len(rows):
        return out
    S = dense.vectors(rows) @ np.stack(hops).T
    S[rows[:, None] == np.asarray(anchors)[None, :]] = -1.0
    out[:, 0] = S.max(axis=1)
    out[:, 1] = out[:, 0] - X[:, COL["cosine"]]
    return out


def _ranker(folder: Path) -> HopRanker:
    from hopgraph.models.trees import TreeEnsemble
    from hopgraph.retrieve.hop_features import FEATURES

    path = folder / RANKER
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        feats = tuple(str(f) for f in data["features"])
        model = TreeEnsemble(str(data["model"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{folder} is not a hop encoder folder ({RANKER}: {exc})") from None
    ranker = HopRanker(feats, model, dict(data.get("meta") or {}))
    ranker.check_features((*FEATURES, *HOP_ENCODER_FEATURES))
    if model.num_feature() != len(feats):
        raise ConfigError(f"{path}: the model has {model.num_feature()} features, not {len(feats)}")
    return ranker


_LOADED: dict[tuple[Path, str], HopEncoder] = {}
_LOCK = threading.Lock()


def load_hop_encoder(folder: str | Path = "", precision: str = "auto") -> HopEncoder:
    """The hop encoder in ``folder`` (empty: the bundled one), loaded once per process and
    precision. Its query tower runs on the CPU: ``"bf16"`` in PyTorch with bf16 weights;
    ``"fp32"`` in ONNX Runtime (an export composed from the teacher's without PyTorch,
    :mod:`hopgraph.models.student_onnx`: PyTorch fp32's vectors, cosine 1.0000000); ``"int8"``
    in ONNX Runtime, that export dynamically quantised; ``"auto"``: bf16 where the CPU has
    native bf16 (:func:`~hopgraph.models.embedder.cpu_has_bf16`) and PyTorch is installed, else
    fp32 (bf16's hop vectors are within cosine 0.9999 of fp32's)."""
    from hopgraph.models.embedder import Embedder, cpu_has_bf16, has_torch
    from hopgraph.models.student import student_meta

    if precision not in HOP_PRECISIONS:
        raise ConfigError(f"the hop encoder runs in {', '.join(HOP_PRECISIONS)}, not {precision!r}")
    if precision == "auto":  # one copy whether a caller asks for auto or what it resolves to
        precision = "bf16" if cpu_has_bf16() and has_torch() else "fp32"
    path = Path(folder).expanduser().resolve() if folder else BUNDLED_HOP_ENCODER
    with _LOCK:
        if (path, precision) in _LOADED:
            return _LOADED[path, precision]
        if not path.is_dir():
            raise ConfigError(f"hop encoder {str(path)!r} not found (a folder)")
        meta = student_meta(path)
        if meta.get("kind") != "hopgraph hop encoder":
            raise ConfigError(f"{path} is not a hop encoder folder (kind={meta.get('kind')!r})")
        ranker = _ranker(path)
        cfg = meta["config"]
        embedder = Embedder(
            cfg["teacher"],
            backend="torch" if precision == "bf16" else "onnx",
            precision=precision,
            max_seq_length=int(cfg["max_seq_length"]),
            student=str(path),
        )
        if embedder.bf16:  # fp32 kernels are not cached per shape: padding would only cost
            embedder.pad_batches(PAD_TO)
        enc = _LOADED[path, precision] = HopEncoder(embedder, ranker, meta)
        return enc


def save_ranker(folder: Path, model: Any, meta: dict[str, Any]) -> None:
    """Write ``ranker.json`` (a LightGBM booster over the default's features and the encoder's
    two) into a hop encoder folder."""
    from hopgraph.retrieve.hop_features import FEATURES

    data = {"features": [*FEATURES, *HOP_ENCODER_FEATURES], "model": model.model_to_string(),
            "meta": meta}  # fmt: skip
    (folder / RANKER).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    (folder / RANKER).chmod(0o644)
