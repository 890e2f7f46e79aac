"""Cross-encoders (model-based search): any Hugging Face sequence-classification model, split into
its *encoder* (the pre-classifier representation of a (query, passage) pair, the [CLS] vector)
and its *head* (the classification layers after it).

``score = head(represent(q, p))`` equals the model's own logit; FastInsight's GRanker smooths the
representations over the candidate graph before the head. Supported families: BERT (head =
pooler + classifier), RoBERTa / XLM-RoBERTa (e.g. bge-reranker), ELECTRA and DeBERTa-v2 (dense
+ out_proj), DistilBERT (pre_classifier + classifier). Loading checks the split on one pair, so an
architecture it does not fit fails at load time instead of giving wrong scores.

Relevance is the single logit of a one-label model, or ``logit[1] - logit[0]`` for two labels.
Pairs are tokenised together, sorted by length and padded per batch.

Load a cross-encoder by name (this torch form, or the ONNX form of
:mod:`hopgraph.models.reranker_onnx`, shared per process) with
:func:`hopgraph.models.rerankers.load_cross_encoder`.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.errors import ConfigError
from hopgraph.models.embedder import cpu_has_bf16

# Written next to a model trained by `hopgraph train-reranker`: the settings it was trained with.
CARD = "hopgraph_reranker.json"
_ROBERTA_LIKE = ("roberta", "xlm-roberta", "electra", "camembert")


def _head_fn(model: Any) -> Any:
    """The classification layers that follow the [CLS] vector, as a function of it."""
    import torch

    kind = model.config.model_type
    if kind == "bert":
        pooler = model.bert.pooler
        if pooler is None:
            raise ConfigError("this BERT model has no pooler; it is not a sequence classifier")
        return lambda h: model.classifier(pooler(h[:, None, :]))
    if kind in _ROBERTA_LIKE:
        return lambda h: model.classifier(h[:, None, :])
    if kind == "deberta-v2":
        return lambda h: model.classifier(model.pooler(h[:, None, :]))
    if kind == "distilbert":
        return lambda h: model.classifier(torch.relu(model.pre_classifier(h)))
    raise ConfigError(
        f"cross-encoder architecture {kind!r} is not supported (bert, roberta, xlm-roberta, "
        "electra, camembert, deberta-v2, distilbert are)"
    )


def _relevance(logits: Any) -> Any:
    return logits[:, 0] if logits.shape[1] == 1 else logits[:, 1] - logits[:, 0]


class CrossEncoder:
    """A (query, passage) relevance model. ``model``: a local folder, or a hub name present in
    the local Hugging Face cache (no hub is reachable offline).

    ``max_length``: tokens per pair (default: what the model was trained with, else 256).
    ``precision``: ``auto`` uses bf16 autocast where the CPU has native bf16, else fp32.
    ``threads``: torch intra-op threads (default: leave torch's setting).
    """

    def __init__(
        self,
        model: str,
        *,
        max_length: int | None = None,
        batch_size: int = 32,
        precision: str = "auto",
        threads: int | None = None,
    ):
        if precision not in ("auto", "bf16", "fp32"):
            raise ConfigError(f"precision must be auto, bf16 or fp32, got {precision!r}")
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError:
            raise ConfigError(
                "cross-encoders need torch and transformers: install torch==2.13.0 first, then "
                "pip install 'hopgraph[dense]'"
            ) from None
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        path = Path(model).expanduser()
        source = str(path.resolve()) if path.exists() else model
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
            self.model = AutoModelForSequenceClassification.from_pretrained(
                source, local_files_only=True
            ).eval()
        except Exception as exc:  # noqa: BLE001 - one clear message for any load failure
            raise ConfigError(
                f"cannot load cross-encoder {model!r}: {exc}. Give a local Hugging Face model "
                "folder (e.g. one made by `hopgraph train-reranker`); no model hub is reachable."
            ) from exc
        if self.model.config.num_labels not in (1, 2):
            raise ConfigError(
                f"cross-encoder {model!r} has {self.model.config.num_labels} labels; a relevance "
                "model has 1 (a score) or 2 (not relevant / relevant)"
            )
        card = path / CARD if path.is_dir() else None
        self.card: dict[str, Any] = (
            json.loads(card.read_text()) if card is not None and card.exists() else {}
        )
        self.name = model
        self.max_length = int(max_length or self.card.get("max_length") or 256)
        self.batch_size = batch_size
        self.bf16 = precision == "bf16" or (precision == "auto" and cpu_has_bf16())
        if threads:
            torch.set_num_threads(threads)
        self.dim = int(self.model.config.hidden_size)
        self._head = _head_fn(self.model)
        self._lock = threading.Lock()
        self._check_split()

    # -- the two halves --------------------------------------------------------------------
    def represent(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """(len(passages), dim) float32: the [CLS] vector of each (query, passage) pair."""
        if not passages:
            return np.zeros((0, self.dim), np.float32)
        import torch

        enc = self.tokenizer(
            [query] * len(passages),
            list(passages),
            truncation=True,
            max_length=self.max_length,
        )
        lengths = np.array([len(x) for x in enc["input_ids"]])
        order = np.argsort(-lengths, kind="stable")
        out = np.empty((len(passages), self.dim), np.float32)
        base = self.model.base_model
        with self._lock, torch.inference_mode(), self._autocast():
            for lo in range(0, len(order), self.batch_size):
                idx = order[lo : lo + self.batch_size]
                batch = self.tokenizer.pad(
                    {key: [enc[key][i] for i in idx] for key in enc}, return_tensors="pt"
                )
                h = base(**batch).last_hidden_state[:, 0]
                out[idx] = h.float().numpy()
        return out

    def head(self, h: np.ndarray) -> np.ndarray:
        """Relevance scores (float64) from representations, e.g. smoothed ones."""
        if len(h) == 0:
            return np.zeros(0)
        import torch

        with torch.inference_mode():
            logits = self._head(torch.from_numpy(np.ascontiguousarray(h, dtype=np.float32)))
        return _relevance(logits).double().numpy()

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """Relevance of each passage to ``query`` (the model's own logits)."""
        return self.head(self.represent(query, passages))

    # -- helpers ---------------------------------------------------------------------------
    def _autocast(self) -> Any:
        import contextlib

        import torch

        if self.bf16:
            return torch.autocast("cpu", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def full_scores(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """The unsplit model's scores (a reference for the split; slower, unsorted batches)."""
        import torch

        enc = self.tokenizer(
            [query] * len(passages),
            list(passages),
            truncation=True,
            max_length=self.max_length,
            padding=True,
            return_tensors="pt",
        )
        with torch.inference_mode(), self._autocast():
            return _relevance(self.model(**enc).logits).double().numpy()

    def _check_split(self) -> None:
        q, p = "split check", ["does the head follow the [CLS] vector?", "a second passage"]
        ref = self.full_scores(q, p)
        split = self.head(self.represent(q, p))
        if not np.allclose(ref, split, atol=1e-3 * max(1.0, float(np.abs(ref).max()))):
            raise ConfigError(
                f"cross-encoder {self.name!r} ({self.model.config.model_type}): its classifier "
                "does not act on the [CLS] vector alone, so it cannot be split for GRanker"
            )
