"""A BERT-family cross-encoder run by ONNX Runtime: the form of the packaged default reranker.

A folder holds ``model.onnx`` (the encoder: token ids, attention mask and token types to the
[CLS] vector of each (query, passage) pair), ``head.npz`` (the pooler and classifier weights,
applied in numpy: ``score = w · tanh(P h + p) + b``), ``tokenizer.json`` and ``meta.json``
(the pair length, padding, and the training card). Splitting the head off keeps FastInsight's
GRanker, which smooths the [CLS] vectors before the head, exact.

:func:`export_cross_encoder` writes such a folder from a Hugging Face model folder (e.g. one
made by ``hopgraph train-reranker``), optionally with int8 weights (ONNX Runtime's dynamic
quantisation of every MatMul and of the token embeddings), after checking the fp32 graph's
scores against torch's. Running it needs neither torch nor transformers.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.errors import ConfigError
from hopgraph.models.onnx_backend import require_onnxruntime, session_options

FORMAT = "hopgraph-onnx-cross-encoder"
FORMAT_VERSION = 1
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "cls"


def is_onnx_cross_encoder(folder: str | Path) -> bool:
    """Whether ``folder`` holds an exported cross-encoder (as written by
    :func:`export_cross_encoder`)."""
    f = Path(folder).expanduser()
    return (f / "meta.json").is_file() and (f / "head.npz").is_file()


class OnnxCrossEncoder:
    """The same interface as :class:`~hopgraph.models.cross_encoder.CrossEncoder`
    (``represent``, ``head``, ``score``, ``dim``, ``max_length``, ``card``), on ONNX Runtime."""

    def __init__(
        self,
        folder: str | Path,
        *,
        max_length: int | None = None,
        batch_size: int = 32,
        threads: int | None = None,
    ):
        ort = require_onnxruntime()
        from tokenizers import Tokenizer

        self.folder = Path(folder).expanduser().resolve()
        try:
            meta = json.loads((self.folder / "meta.json").read_text())
            head = np.load(self.folder / "head.npz")
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read the cross-encoder in {self.folder}: {exc}") from exc
        if meta.get("format") != FORMAT or meta.get("format_version") != FORMAT_VERSION:
            raise ConfigError(
                f"{self.folder} is not a {FORMAT} folder of version {FORMAT_VERSION}: "
                "export it again with `hopgraph export-reranker`"
            )
        self.meta = meta
        self.name = str(self.folder)
        self.card: dict[str, Any] = meta.get("card", {})
        self.max_length = int(max_length or meta["max_length"])
        self.batch_size = batch_size
        self.dim = int(meta["dim"])
        self._pool_w = head["pooler_weight"].astype(np.float32)
        self._pool_b = head["pooler_bias"].astype(np.float32)
        self._cls_w = head["classifier_weight"].astype(np.float32)
        self._cls_b = head["classifier_bias"].astype(np.float32)
        self.session = ort.InferenceSession(
            str(self.folder / "model.onnx"),
            session_options(threads),
            providers=["CPUExecutionProvider"],
        )
        self.inputs = [i.name for i in self.session.get_inputs()]
        tok = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        tok.no_padding()
        tok.enable_truncation(max_length=self.max_length, strategy="longest_first")
        self.tokenizer = tok
        self._pad = (int(meta["pad_token_id"]), int(meta.get("pad_type_id", 0)))

    def represent(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """(len(passages), dim) float32: the [CLS] vector of each (query, passage) pair; pairs
        are sorted by length and padded per batch."""
        out = np.empty((len(passages), self.dim), np.float32)
        if not passages:
            return out
        enc = self.tokenizer.encode_batch([(query, p) for p in passages])
        lengths = np.array([len(e.ids) for e in enc])
        order = np.argsort(-lengths, kind="stable")
        pad_id, pad_type = self._pad
        for lo in range(0, len(order), self.batch_size):
            idx = order[lo : lo + self.batch_size]
            width = int(lengths[idx].max())
            ids = np.full((len(idx), width), pad_id, np.int64)
            mask = np.zeros((len(idx), width), np.int64)
            types = np.full((len(idx), width), pad_type, np.int64)
            for r, i in enumerate(idx):
                e = enc[i]
                n = len(e.ids)
                ids[r, :n], mask[r, :n], types[r, :n] = e.ids, 1, e.type_ids
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            out[idx] = self.session.run([OUTPUT], {k: feeds[k] for k in self.inputs})[0]
        return out

    def head(self, h: np.ndarray) -> np.ndarray:
        """Relevance scores (float64) from [CLS] vectors, e.g. smoothed ones."""
        if len(h) == 0:
            return np.zeros(0)
        pooled = np.tanh(np.asarray(h, np.float32) @ self._pool_w.T + self._pool_b)
        return (pooled @ self._cls_w.T + self._cls_b)[:, 0].astype(np.float64)

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """Relevance of each passage to ``query``."""
        return self.head(self.represent(query, passages))


_CHECK = [
    ("who directed the film?", "The film was directed by Ada Vell and released in 1931."),
    ("which river flows through the city?", "A short passage."),
    ("q", "A longer passage, so that the batch is padded: " + "words " * 40),
]


def export_cross_encoder(
    model: str | Path, out: str | Path, *, int8: bool = True, overwrite: bool = False
) -> Path:
    """Write ``model`` (a Hugging Face BERT-family sequence classifier with one logit, e.g.
    from ``hopgraph train-reranker``) to folder ``out`` in the form :class:`OnnxCrossEncoder`
    runs; ``int8``: quantise the weights (a lossy step: its effect on recall is measured in
    docs/benchmarks.md). Fails when the fp32 graph's scores differ from torch's by > 1e-3."""
    from hopgraph.atomic import replace_folder
    from hopgraph.models.cross_encoder import CrossEncoder
    from hopgraph.models.onnx_backend import _quiet_root_logger

    out = Path(out).expanduser().resolve()
    if out.exists() and not overwrite:
        raise ConfigError(f"{out} exists; pass --overwrite to replace it")
    ce = CrossEncoder(str(model), precision="fp32")
    hf = ce.model
    if hf.config.model_type != "bert" or hf.config.num_labels != 1:
        raise ConfigError(
            f"export supports one-logit BERT-family cross-encoders; {model!r} is "
            f"{hf.config.model_type} with {hf.config.num_labels} labels"
        )
    import torch

    class _Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = hf.bert

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            h = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            return h[:, 0]

    enc = ce.tokenizer(
        [q for q, _ in _CHECK], [p for _, p in _CHECK], padding=True, return_tensors="pt"
    )
    args = tuple(enc[k] for k in INPUTS)
    axes = {n: {0: "batch", 1: "sequence"} for n in INPUTS}
    axes[OUTPUT] = {0: "batch"}
    with replace_folder(out) as tmp:
        scratch = Path(tempfile.mkdtemp(dir=tmp))
        with torch.no_grad(), contextlib.chdir(scratch), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                _Encoder().eval(), args, str(scratch / "fp32.onnx"), input_names=list(INPUTS),
                output_names=[OUTPUT], dynamic_axes=axes, opset_version=17, dynamo=False,
            )  # fmt: skip
        shutil.move(scratch / "fp32.onnx", tmp / "model.onnx")
        shutil.rmtree(scratch)
        bert = hf.bert
        np.savez(
            tmp / "head.npz",
            pooler_weight=bert.pooler.dense.weight.detach().numpy(),
            pooler_bias=bert.pooler.dense.bias.detach().numpy(),
            classifier_weight=hf.classifier.weight.detach().numpy(),
            classifier_bias=hf.classifier.bias.detach().numpy(),
        )
        ce.tokenizer.backend_tokenizer.save(str(tmp / "tokenizer.json"))
        tok = ce.tokenizer
        meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "precision": "int8" if int8 else "fp32",
            "dim": int(hf.config.hidden_size),
            "layers": int(hf.config.num_hidden_layers),
            "max_length": ce.max_length,
            "pad_token_id": int(tok.pad_token_id or 0),
            "pad_type_id": int(getattr(tok, "pad_token_type_id", 0) or 0),
            "card": ce.card,
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
        _check_export(ce, OnnxCrossEncoder(tmp))  # the fp32 graph, before any quantisation
        if int8:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            fp32 = tmp / "fp32.onnx"
            (tmp / "model.onnx").rename(fp32)
            with warnings.catch_warnings(), _quiet_root_logger():
                warnings.simplefilter("ignore")
                quantize_dynamic(
                    str(fp32), str(tmp / "model.onnx"), weight_type=QuantType.QInt8,
                    per_channel=True, op_types_to_quantize=["MatMul", "Gather"],
                )  # fmt: skip
            fp32.unlink()
    return out


def _check_export(ce: Any, onnx: OnnxCrossEncoder) -> None:
    """Refuse an export whose scores differ from torch's (e.g. a shape baked in by tracing)."""
    for q, p in _CHECK:
        ref = ce.score(q, [p, *[b for _, b in _CHECK]])
        got = onnx.score(q, [p, *[b for _, b in _CHECK]])
        if not np.allclose(ref, got, atol=1e-3):
            raise ConfigError(f"the ONNX export's scores differ from torch's: {ref} vs {got}")


__all__ = ["OnnxCrossEncoder", "export_cross_encoder", "is_onnx_cross_encoder"]
