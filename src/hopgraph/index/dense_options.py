"""The ``dense`` part's options (:class:`DenseOptions`) and the choice of what encodes the
passages of a build: the query encoder (``same``); from ``fast_encode_min_passages`` passages
on, the distilled 3-layer passage student of the query encoder (``student``,
:mod:`hopgraph.models.student`; it reads a passage's first ``student_max_seq_length`` tokens,
160), or where there is none for it PyTorch with bf16 weights on a
CPU that has bf16 (``torch-bf16``); or PyTorch fp32 on a CUDA GPU (``torch-cuda``,
``device=cuda`` or ``auto`` where torch sees one). Queries are always encoded by the
configured encoder (``model``, ``backend``, ``precision``) on the CPU."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from hopgraph.config import option, positive
from hopgraph.corpus import Corpus
from hopgraph.errors import ConfigError
from hopgraph.models.embedder import (
    BACKENDS,
    DEFAULT_BACKEND,
    DEFAULT_EMBEDDER,
    PRECISIONS,
    Embedder,
    check_cuda,
    check_precision,
    cpu_has_bf16,
    cuda_available,
    has_torch,
    load_embedder,
)

ENCODER_FILE = "encoder.txt"
# what each passage encoder label means, for messages
ENCODERS = {
    "same": "the query encoder",
    "torch-bf16": "PyTorch bf16 on the CPU",
    "torch-cuda": "PyTorch fp32 on a CUDA GPU",
    "student": "the distilled 3-layer passage student (PyTorch bf16 where the CPU has bf16 "
    "and PyTorch is installed, else ONNX Runtime)",
}
# passage_encoder=auto takes the student only where, on STUDENT_SAMPLE passages of the corpus,
# its vectors have a mean cosine of at least STUDENT_MIN_COSINE to the query encoder's (both
# reading student_max_seq_length tokens; the first student, at 256 tokens on both: 0.92-0.93
# on the Wikipedia-like sets (default R@5 -0.2 to -0.6 points), 0.82 on SciFact's biomedical
# abstracts (default -0.9, dense -3.9)) (docs/notes/encoding.md, "The passage student")
STUDENT_SAMPLE = 256
STUDENT_MIN_COSINE = 0.9
_AGREEMENT: dict[tuple[str, str, int, int, str], float] = {}
# passages per batch on a GPU at least (dense.batch_size suits a CPU); 128 x 256 tokens of a
# MiniLM-sized model is well within any CUDA card's memory
CUDA_BATCH_SIZE = 128


def student_backend() -> tuple[str, str]:
    """Where a student (the passage student) runs: PyTorch in bf16 where the CPU has native bf16
    and PyTorch is installed (1.6-2.1x ONNX Runtime's float32 here), else ONNX Runtime in
    float32 (PyTorch float32's vectors, cosine 1.0000000, at PyTorch float32's speed)."""
    return ("torch", "bf16") if cpu_has_bf16() and has_torch() else ("onnx", "fp32")


@dataclass(frozen=True)
class DenseOptions:
    model: str = option(
        DEFAULT_EMBEDDER,
        "sentence-transformers model: name or local folder (backend=static: a model2vec folder, "
        "or a sentence-transformers model distilled once into a cache)",
    )
    backend: str = option(
        DEFAULT_BACKEND,
        "encoder runtime: onnx = ONNX Runtime (exported once to a cache, same vectors, ~2.5x "
        "faster single queries on CPU), torch = PyTorch, static = model2vec static embedder "
        "distilled from the model (much faster, lower recall; pip install 'hopgraph[static]')",
        choices=BACKENDS,
    )
    precision: str = option(
        "auto",
        "torch: auto = bf16 where the CPU has it (avx512_bf16/AMX), else fp32; "
        "onnx: auto = fp32, int8 = dynamically quantised copy (faster, cosine ~0.997 to fp32); "
        "static: auto/fp32 only",
        choices=PRECISIONS,
    )
    passage_encoder: str = option(
        "auto",
        "what encodes the passages at index time (queries always use backend/precision): "
        "same = the query encoder; torch-bf16 = PyTorch with bf16 weights (~1.7x faster than "
        "ONNX fp32 on a CPU with avx512_bf16/AMX, cosine ~0.9999 to fp32); student = the "
        "distilled 3-layer passage student of the query encoder (dense.student; in PyTorch "
        "bf16 where the CPU has bf16 and PyTorch is installed, ~1.9x faster than torch-bf16, "
        "else in ONNX Runtime fp32, ~2x faster than the query encoder); auto = student from "
        "fast_encode_min_passages passages on when backend=onnx runs fp32, the student was "
        "distilled from dense.model and agrees with it on a sample of the corpus (else "
        "torch-bf16 where the CPU has bf16 and PyTorch is installed), else same",
        choices=("auto", "same", "torch-bf16", "student"),
    )
    student: str = option(
        "bundled",
        "the passage student folder for passage_encoder=student (bundled = the 3-layer student "
        "of the bundled MiniLM shipped with hopgraph, ~1.9x faster than torch-bf16; "
        "benchmarks/student_encoder.py distils one)",
    )
    device: str = option(
        "cpu",
        "where the passages are encoded at index time (builds, added parts and passages; "
        "queries always run on the CPU): cpu; cuda = PyTorch fp32 on the GPU (passage_encoder "
        "torch-cuda, batches of at least 128; refused where torch sees no CUDA device); "
        "auto = cuda where torch sees a CUDA device (with passage_encoder=auto), else cpu",
        choices=("cpu", "cuda", "auto"),
    )
    fast_encode_min_passages: int = option(
        20_000, "passage_encoder=auto encodes with the student from this many passages on"
    )
    batch_size: int = option(16, "passages per encoder batch")
    max_seq_length: int = option(256, "encoder truncation length in tokens")
    student_max_seq_length: int = option(
        160,
        "tokens the passage student reads (where a build takes it): a longer passage's vector "
        "is of its first N; a 100k Wikipedia-like build in 0.84 of the time of 256, the "
        "default's R@5 -0.15 (docs/notes/encoding.md); the query encoder and the other "
        "passage encoders read max_seq_length",
    )
    ann: str = option(
        "auto",
        "approximate search (usearch HNSW): auto = from ann_min_passages passages on, hnsw = "
        "always, none = exact search only",
        choices=("auto", "hnsw", "none"),
    )
    ann_min_passages: int = option(100_000, "ann=auto builds the HNSW graph from this many")
    ann_dtype: str = option("i8", "vector copy inside the HNSW graph", choices=("i8", "f16", "f32"))
    ann_connectivity: int = option(16, "HNSW links per node (usearch connectivity)")
    ann_expansion_add: int = option(128, "HNSW candidates while adding (efConstruction)")
    vectors: str = option(
        "float32",
        "dtype of the stored vectors: float16 halves their size, but full scans (methods "
        "without the HNSW graph) get ~10x slower; auto = float16 when the graph is built",
        choices=("auto", "float32", "float16"),
    )
    hnsw: bool = option(False, "also build an hnswlib HNSW graph (older; ann= is the default)")
    hnsw_m: int = option(32, "hnswlib M (links per node)")
    hnsw_ef_construction: int = option(200, "hnswlib efConstruction")

    def validate(self) -> None:
        for name in (
            "batch_size", "max_seq_length", "hnsw_m", "hnsw_ef_construction",
            "ann_min_passages", "ann_connectivity", "ann_expansion_add",
            "fast_encode_min_passages", "student_max_seq_length",
        ):  # fmt: skip
            positive(name, getattr(self, name))
        check_precision(self.backend, self.precision)
        if self.passage_encoder in ("torch-bf16", "student") and self.backend == "static":
            raise ConfigError(
                f"passage_encoder={self.passage_encoder} needs a transformer query encoder "
                "(backend=onnx or torch), not backend=static"
            )
        if self.device == "cuda" and self.backend == "static":
            raise ConfigError(
                "device=cuda encodes passages with the transformer on the GPU, which "
                "backend=static (a static embedder) has not; use backend=onnx or torch"
            )
        if self.device == "cuda" and self.passage_encoder != "auto":
            raise ConfigError(
                f"device=cuda encodes passages on the GPU (torch-cuda), but passage_encoder="
                f"{self.passage_encoder} asks for {ENCODERS[self.passage_encoder]} on the CPU; "
                "leave passage_encoder=auto, or set device=cpu"
            )
        # device=cuda on a machine without one is refused where passages are encoded
        # (passage_encoder_for), not here: an index built on a GPU still loads anywhere

    def passage_encoder_for(self, n: int, corpus: Corpus | None = None) -> str:
        """The passage encoder a build of ``n`` passages runs: ``same``, ``student``,
        ``torch-bf16`` or ``torch-cuda``. With the build's ``corpus``, ``auto`` takes the student
        only where it agrees with the query encoder on a sample of it (:meth:`student_agrees`).
        ``device=cuda`` where torch sees no CUDA device raises ConfigError."""
        if self.passage_encoder == "auto":
            if self.device == "cuda":
                check_cuda("dense.device=cuda")
                return "torch-cuda"
            if self.device == "auto" and self.backend != "static" and cuda_available():
                return "torch-cuda"
        return self.cpu_passage_encoder_for(n, corpus)

    def cpu_passage_encoder_for(self, n: int, corpus: Corpus | None = None) -> str:
        """The passage encoder a build of ``n`` passages runs on the CPU (``device`` aside):
        ``same``, ``student`` or ``torch-bf16``."""
        if self.passage_encoder != "auto":
            return self.passage_encoder
        fast = (
            n >= self.fast_encode_min_passages
            and self.backend == "onnx"
            and self.precision in ("auto", "fp32")
        )
        if not fast:
            return "same"
        if self.student_fits() and (corpus is None or self.student_agrees(corpus)):
            return "student"
        return "torch-bf16" if cpu_has_bf16() and has_torch() else "same"

    def student_agrees(self, corpus: Corpus) -> bool:
        """Whether the student's passage vectors are close enough to the query encoder's on
        this corpus: mean cosine >= STUDENT_MIN_COSINE over STUDENT_SAMPLE passages spread over
        it (measured once per corpus sample; a few seconds)."""
        return self.student_agreement(corpus) >= STUDENT_MIN_COSINE

    def student_agreement(self, corpus: Corpus) -> float:
        """Mean cosine of the student's vectors to the query encoder's, both reading the
        student's ``student_length()`` tokens (the gate asks whether the student learned this
        kind of text; what the tokens cut off costs is measured through the default, in
        docs/notes/encoding.md), on a sample of ``corpus`` (evenly spaced rows, so a rerun or
        resumed build decides the same)."""
        rows = np.unique(np.linspace(0, len(corpus) - 1, min(len(corpus), STUDENT_SAMPLE)))
        texts = [corpus[int(i)].content for i in rows]
        key = (self.student_folder(), self.model, self.max_seq_length, self.student_length(),
               hashlib.sha256("\x00".join(texts).encode()).hexdigest())  # fmt: skip
        if key not in _AGREEMENT:
            a = self.embedder_for("student").encode(texts, batch_size=self.batch_size)
            b = self.query_embedder(self.student_length()).encode(texts, batch_size=self.batch_size)
            _AGREEMENT[key] = float(np.mean(np.sum(a * b, axis=1)))
        return _AGREEMENT[key]

    def student_fits(self) -> bool:
        """Whether the passage student (``student``) was distilled from ``model``."""
        from hopgraph.models.student import check_teacher

        try:
            check_teacher(self.student_folder(), self.model)
        except ConfigError:
            return False
        return True

    def embedder_for(self, encoder: str) -> Embedder:
        """The (shared) embedder behind a passage encoder label (``same``, ``torch-bf16``,
        ``torch-cuda``: the last raises ConfigError where torch sees no CUDA device)."""
        if encoder == "torch-bf16":
            return load_embedder(
                self.model, precision="bf16", max_seq_length=self.max_seq_length, backend="torch"
            )
        if encoder == "student":
            backend, precision = student_backend()
            return load_embedder(
                self.model,
                precision=precision,
                max_seq_length=self.student_length(),
                backend=backend,
                student=self.student_folder(),
            )
        if encoder == "torch-cuda":
            check_cuda("the passage encoder torch-cuda (dense.device)")
            return load_embedder(
                self.model,
                precision="fp32",
                max_seq_length=self.max_seq_length,
                backend="torch",
                device="cuda",
            )
        return self.query_embedder()

    def query_embedder(self, max_seq_length: int | None = None) -> Embedder:
        """The (shared) query encoder, reading ``max_seq_length`` tokens (default: the
        option's)."""
        return load_embedder(
            self.model,
            precision=self.precision,
            max_seq_length=max_seq_length or self.max_seq_length,
            backend=self.backend,
        )

    def student_length(self) -> int:
        """The tokens the passage student reads: ``student_max_seq_length``, at most
        ``max_seq_length``."""
        return min(self.student_max_seq_length, self.max_seq_length)

    def student_folder(self) -> str:
        """The passage student's folder: ``student``, the bundled one for ``bundled``."""
        from hopgraph.models.student import BUNDLED_STUDENT

        return str(BUNDLED_STUDENT) if self.student == "bundled" else self.student

    def batch_size_for(self, encoder: str) -> int:
        """Passages per encoder batch: ``batch_size``, at least CUDA_BATCH_SIZE on a GPU."""
        if encoder == "torch-cuda":
            return max(self.batch_size, CUDA_BATCH_SIZE)
        return self.batch_size

    def uses_ann(self, n: int) -> bool:
        """Whether a part of ``n`` passages gets the usearch HNSW graph."""
        return self.ann == "hnsw" or (self.ann == "auto" and n >= self.ann_min_passages)

    def stored_dtype(self, n: int) -> type:
        if self.vectors == "auto":
            return np.float16 if self.uses_ann(n) else np.float32
        return np.float16 if self.vectors == "float16" else np.float32


def passage_encoder_note(options: DenseOptions, n: int, corpus: Corpus | None = None) -> str | None:
    """A line for the build log when the passages of a build of ``n`` passages (``corpus``) are
    not encoded by the query encoder (None when they are); raises where
    :meth:`DenseOptions.passage_encoder_for` does."""
    encoder = options.passage_encoder_for(n, corpus)
    auto = options.passage_encoder == "auto"
    if encoder == "student":
        agree = f", cosine {options.student_agreement(corpus):.3f} to it here" if corpus else ""
        return (
            "dense: passages encoded by the distilled 3-layer passage student of the query "
            f"encoder ({student_backend()[0]}, about 2x faster, each passage's first "
            f"{options.student_length()} tokens{agree}), queries by the "
            "configured encoder "
            f"[dense.passage_encoder={options.passage_encoder}]"
        )
    why = ""
    if auto and corpus is not None and encoder in ("torch-bf16", "same"):
        if n >= options.fast_encode_min_passages and options.student_fits():
            why = (
                f"; the passage student agrees with the query encoder to cosine "
                f"{options.student_agreement(corpus):.3f} on this corpus, under "
                f"{STUDENT_MIN_COSINE}, so it is not used"
            )
    if encoder == "torch-bf16":
        return (
            "dense: passages encoded by PyTorch with bf16 weights (the CPU has bf16; cosine "
            "~0.9999 to fp32), queries by the configured encoder [dense.passage_encoder="
            f"{options.passage_encoder}]{why}"
        )
    if why:
        return f"dense: passages encoded by the query encoder{why}"
    if encoder == "torch-cuda":
        import torch

        return (
            f"dense: passages encoded by PyTorch fp32 on the GPU ({torch.cuda.get_device_name()}), "
            f"queries by the configured encoder on the CPU [dense.device={options.device}]"
        )
    return None
