"""ONNX Runtime backend for :class:`~hopgraph.models.embedder.Embedder`.

The whole sentence-transformers pipeline (transformer, pooling, normalisation and any dense
layers) is exported once with torch's ONNX exporter into a cache folder, checked against torch on
a few texts, and from then on run with ONNX Runtime: the same vectors (cosine ≥ 0.99999 on
HotpotQA questions and passages) at ~2.5x the single-query speed of PyTorch on a 2-core CPU.
Loading from the cache needs neither torch nor sentence-transformers.

``precision="int8"`` runs a dynamically quantised copy of that export (int8 weights per output
channel, activations quantised per batch at run time, see :func:`ensure_quantized`), made once
from the fp32 export and cached beside it. It is portable (no bf16 hardware needed) and faster;
its vectors differ slightly from fp32 (cosine ~0.997 on 2WikiMultiHopQA passages), so an index
records the precision it was built with and its queries use the same one.

The cache folder is ``$HOPGRAPH_ONNX_CACHE``, else ``$HOPGRAPH_CACHE/onnx``, else
``~/.cache/hopgraph/onnx``; each export is a folder named after the model and a hash of its files
and of the library versions that made it, written to a temporary folder and renamed into place.
A quantised copy is the export's folder name plus ``-int8-q<QUANT_VERSION>``, written the same way.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.errors import ConfigError
from hopgraph.models.batching import longest_first

EXPORT_VERSION = 2  # 2: the token embeddings are a second output (GRIEVER's n-gram matcher)
QUANT_VERSION = 1  # bump when the quantisation recipe below changes (a new cache folder)
# The feed-forward down-projections ("<layer>/output/dense", whose input is the GELU output with
# its large outliers) suffer most from per-tensor activation quantisation: quantising them too
# dropped the cosine to fp32 to 0.994 mean / 0.983 min on 2Wiki passages, keeping them fp32 gives
# 0.997 / 0.994 (see docs/notes/encoding.md, "Fast encoding").
_QUANT_KEEP_FP32 = re.compile(r"layer\.\d+/output/dense/")
PRECISIONS = ("fp32", "int8")
OUTPUT = "sentence_embedding"
TOKENS = "token_embeddings"
# Tokenizer output fields that the exported graph may take, by ONNX input name.
_INPUT_FIELDS = {
    "input_ids": "ids",
    "attention_mask": "attention_mask",
    "token_type_ids": "type_ids",
}
_CHECK_TEXTS = [
    "Which city hosted the first modern Olympic Games?",
    "A longer check text, so that the batch below is padded: the export must handle padding.",
    "short",
]


def onnx_cache_root() -> Path:
    """Where exported models are kept (see the module docstring)."""
    env = os.environ.get("HOPGRAPH_ONNX_CACHE")
    if env:  # absolute: the export runs in a child process with another working folder
        return Path(env).expanduser().absolute()
    index_cache = os.environ.get("HOPGRAPH_CACHE")
    if index_cache:
        return Path(index_cache).expanduser().absolute() / "onnx"
    return Path.home() / ".cache" / "hopgraph" / "onnx"


def require_onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError:
        raise ConfigError(
            "backend 'onnx' needs onnxruntime: pip install 'hopgraph[dense]' "
            "(or use backend=torch, e.g. --set dense.backend=torch)"
        ) from None
    return onnxruntime


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("torch", "transformers", "sentence-transformers", "tokenizers"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = ""
    return out


def export_dir(path: str, root: Path | None = None) -> Path:
    """The cache folder for model ``path`` (a local folder or a hub name)."""
    local = Path(path)
    files: list[Any] = []
    if local.is_dir():
        for p in sorted(local.rglob("*")):
            if p.is_file() and not p.name.lower().endswith(".md"):
                st = p.stat()
                files.append([str(p.relative_to(local)), st.st_size, st.st_mtime_ns])
    key = json.dumps([EXPORT_VERSION, path, files, _versions()], sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    parts = local.parts[-2:] if local.is_dir() else (path,)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(parts)).strip("_.-")[-60:] or "model"
    return (root or onnx_cache_root()) / f"{slug}-{digest}"


def ensure_exported(path: str, *, name: str | None = None, root: Path | None = None) -> Path:
    """The folder holding the ONNX export of ``path``, exporting it first if it is not cached;
    ``path`` itself where it is an export already (the bundled MiniLM's shipped with hopgraph,
    or a folder this function made)."""
    if is_export(Path(path)):
        return Path(path)
    final = export_dir(path, root)
    if (final / "meta.json").is_file():
        return final
    require_onnxruntime()
    if os.environ.get("HOPGRAPH_EXPORT_IN_CHILD") == "1":
        return _export_in_child(path, name, root, final)
    with cache_folder(final, ", or use backend=torch") as tmp:
        _export(path, tmp, name=name or path)
    return final


def _export_in_child(path: str, name: str | None, root: Path | None, final: Path) -> Path:
    """The export made by a child Python process, so that this one never imports torch,
    sentence-transformers and their dependencies (~450 MB resident for the life of a server
    that exports on its first query). ``hopgraph serve`` asks for this (HOPGRAPH_EXPORT_IN_CHILD,
    set by :func:`hopgraph.serve.process.configure_serving`)."""
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; "
        "from hopgraph.models.onnx_backend import ensure_exported; "
        "ensure_exported(sys.argv[1], name=sys.argv[2] or None, "
        "root=Path(sys.argv[3]) if sys.argv[3] else None)"
    )
    env = {k: v for k, v in os.environ.items() if k != "HOPGRAPH_EXPORT_IN_CHILD"}
    args = [sys.executable, "-c", code, path, name or "", str(root) if root else ""]
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode != 0 or not (final / "meta.json").is_file():
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise ConfigError(
            f"exporting {path!r} to ONNX failed in a child process: " + " | ".join(tail)
        )
    return final


@contextlib.contextmanager
def cache_folder(final: Path, hint: str = "") -> Iterator[Path]:
    """A temporary folder beside ``final`` in the ONNX cache for a block to write into; moved
    into place as ``final`` (:func:`publish`) when the block ends without an error, removed in
    any case. ConfigError where the cache cannot be written (``hint``: what else to do)."""
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=final.parent))
    except OSError as exc:
        raise ConfigError(
            f"cannot write the ONNX export cache {final.parent} ({exc}): set "
            f"HOPGRAPH_ONNX_CACHE to a writable folder{hint}"
        ) from None
    try:
        yield tmp
        publish(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def publish(tmp: Path, final: Path) -> None:
    """Move the cache folder written in ``tmp`` into place as ``final``, readable by all
    (mkdtemp makes it private; the cache may be shared). Where another process finished the
    same folder first, its folder is kept."""
    os.chmod(tmp, 0o755)
    try:
        os.rename(tmp, final)
    except OSError:
        if not (final / "meta.json").is_file():
            raise


def is_export(folder: Path) -> bool:
    """Whether ``folder`` holds an ONNX export (its graph and the meta.json written with it)."""
    meta = folder / "meta.json"
    if not (meta.is_file() and (folder / "model.onnx").is_file()):
        return False
    try:
        return "export_version" in json.loads(meta.read_text())
    except (OSError, ValueError):
        return False


def quantized_dir(export: Path) -> Path:
    """Where the int8 copy of the export folder ``export`` is cached: a sibling folder, or for
    the export shipped with hopgraph (read-only where it is installed) a folder of the cache
    named after its model file's key (:func:`~hopgraph.models.resolve.fingerprint`)."""
    from hopgraph.models.resolve import PACKAGED_ENCODER, fingerprint

    if Path(export).resolve() == PACKAGED_ENCODER.resolve():
        return onnx_cache_root() / f"minilm-onnx-{fingerprint(export)}-int8-q{QUANT_VERSION}"
    return export.parent / f"{export.name}-int8-q{QUANT_VERSION}"


def ensure_quantized(export: Path) -> Path:
    """The folder holding the int8 copy of the fp32 export in ``export``, made first if needed.

    ONNX Runtime's dynamic quantisation: the weights of the MatMuls by a constant matrix become
    int8 per output channel (symmetric), and each batch's activations are quantised to uint8 at
    run time (u8 x s8 products use AVX-VNNI/AVX512-VNNI where the CPU has them). Other ops, the
    word embeddings and the feed-forward down-projections stay fp32 (see ``_QUANT_KEEP_FP32``).
    """
    export = Path(export)
    final = quantized_dir(export)
    if (final / "meta.json").is_file():
        return final
    require_onnxruntime()
    try:
        import onnx
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError:
        raise ConfigError(
            "precision=int8 needs onnx and onnxruntime's quantization tools (hopgraph's own "
            "dependencies): pip install onnx onnxruntime"
        ) from None
    meta = json.loads((export / "meta.json").read_text())
    graph = onnx.load(str(export / "model.onnx"), load_external_data=False).graph
    keep = sorted(
        n.name for n in graph.node if n.op_type == "MatMul" and _QUANT_KEEP_FP32.search(n.name)
    )
    with cache_folder(final) as tmp:
        source = export / "model.onnx"
        if "weights" in meta:  # stored in float16 (the shipped export): float32 initializers first
            from hopgraph.models.onnx_weights import weights_as_fp32

            source = tmp / "fp32.onnx"
            onnx.save(weights_as_fp32(onnx.load(str(export / "model.onnx"))), str(source))
        with warnings.catch_warnings(), _quiet_root_logger():
            warnings.simplefilter("ignore")
            quantize_dynamic(
                str(source),
                str(tmp / "model.onnx"),
                weight_type=QuantType.QInt8,
                per_channel=True,
                op_types_to_quantize=["MatMul"],
                nodes_to_exclude=keep,
            )
        if source.parent == tmp:
            source.unlink()
            meta.pop("weights")
        shutil.copyfile(export / "tokenizer.json", tmp / "tokenizer.json")
        meta["quantization"] = {
            "version": QUANT_VERSION,
            "method": "onnxruntime.quantization.quantize_dynamic",
            "weight_type": "QInt8",
            "per_channel": True,
            "op_types": ["MatMul"],
            "fp32_nodes": len(keep),
            "source": export.name,
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    return final


@contextlib.contextmanager
def _quiet_root_logger() -> Any:
    """quantize_dynamic logs an advice ("consider pre-processing") on the root logger."""
    import logging

    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def _pipeline_module(st: Any, names: list[str], extras: dict[str, Any]) -> Any:
    """A torch module running SentenceTransformer ``st`` on positional input tensors."""
    import torch

    class Pipeline(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.st = st

        def forward(self, *tensors: Any) -> Any:
            features = dict(zip(names, tensors, strict=True))
            features.update(extras)
            out = self.st(features)
            return out[OUTPUT], out[TOKENS]

    return Pipeline().eval()


def _export(path: str, out: Path, *, name: str) -> None:
    """Export model ``path`` into folder ``out`` (model.onnx, tokenizer.json, meta.json)."""
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise ConfigError(
            "exporting a model for backend 'onnx' needs torch and sentence-transformers: "
            "install torch==2.13.0 first, then pip install 'hopgraph[dense]'"
        ) from None
    try:
        st = SentenceTransformer(path, device="cpu")
    except Exception as exc:  # noqa: BLE001 - report any load failure the same way
        raise ConfigError(
            f"cannot load embedding model {name!r} ({path}): {exc}. "
            "Give a local sentence-transformers folder; no model hub is reachable offline."
        ) from exc
    st.eval()
    tok = getattr(st, "tokenizer", None)
    backend_tok = getattr(tok, "backend_tokenizer", None)
    if backend_tok is None:
        raise ConfigError(
            f"backend 'onnx' needs a fast (tokenizers) tokenizer; {name!r} has none: "
            "use backend=torch"
        )
    sample = st.preprocess(_CHECK_TEXTS[:2])
    names = [k for k, v in sample.items() if isinstance(v, torch.Tensor)]
    extras = {k: v for k, v in sample.items() if not isinstance(v, torch.Tensor)}
    if not set(names) <= set(_INPUT_FIELDS) or "input_ids" not in names:
        raise ConfigError(
            f"backend 'onnx' supports models fed {sorted(_INPUT_FIELDS)}; {name!r} takes {names}: "
            "use backend=torch"
        )
    module = _pipeline_module(st, names, extras)
    args = tuple(sample[k] for k in names)
    # torch's exporter runs shape inference through temporary files in the working directory
    # (sym_shape_infer_temp.onnx and a large .data file): run it in a scratch folder, removed after.
    with (
        torch.no_grad(),
        tempfile.TemporaryDirectory(dir=out) as scratch,
        contextlib.chdir(scratch),
    ):
        exporter = _torch_export(module, args, names, (out / "model.onnx").resolve())
    backend_tok.save(str(out / "tokenizer.json"))
    meta = {
        "export_version": EXPORT_VERSION,
        "model": path,
        "exporter": exporter,
        "versions": _versions(),
        "inputs": names,
        "output": OUTPUT,
        "dim": int(_embedding_dim(st)),
        "max_seq_length": int(st.max_seq_length or 512),
        "pad_token": tok.pad_token or "[PAD]",
        "pad_token_id": int(tok.pad_token_id or 0),
        "pad_type_id": int(getattr(tok, "pad_token_type_id", 0) or 0),
        "padding_side": getattr(tok, "padding_side", "right"),
        "truncation_side": getattr(tok, "truncation_side", "right"),
    }
    (out / "meta.json.part").write_text(json.dumps(meta, indent=1))
    _check_against_torch(st, out, meta, name)
    (out / "meta.json.part").rename(out / "meta.json")


def _embedding_dim(st: Any) -> int:
    get_dim = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
    return int(get_dim())


def _torch_export(module: Any, args: tuple[Any, ...], names: list[str], dest: Path) -> str:
    """torch's TorchScript exporter (a single file, fastest here), else the dynamo one."""
    import torch

    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes[OUTPUT] = {0: "batch"}
    axes[TOKENS] = {0: "batch", 1: "sequence"}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                module,
                args,
                str(dest),
                input_names=names,
                output_names=[OUTPUT, TOKENS],
                dynamic_axes=axes,
                opset_version=17,
                dynamo=False,
            )
        return "torchscript"
    except Exception as legacy_exc:  # noqa: BLE001 - the legacy exporter may be gone
        dest.unlink(missing_ok=True)
        try:
            from torch.export import Dim

            dyn = {"batch": Dim.DYNAMIC, "sequence": Dim.DYNAMIC}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    module,
                    args,
                    str(dest),
                    input_names=names,
                    output_names=[OUTPUT, TOKENS],
                    # one entry: forward(*tensors) takes its inputs as a single varargs tuple
                    dynamic_shapes=(tuple({0: dyn["batch"], 1: dyn["sequence"]} for _ in names),),
                    dynamo=True,
                    external_data=False,
                )
            return "dynamo"
        except Exception as exc:  # noqa: BLE001
            raise ConfigError(
                f"cannot export the model to ONNX ({legacy_exc}; dynamo exporter: {exc}); "
                "use backend=torch (the dynamo exporter also needs onnxscript)"
            ) from exc


def _check_against_torch(st: Any, folder: Path, meta: dict[str, Any], name: str) -> None:
    """Refuse an export whose vectors differ from torch's (e.g. a shape baked in by tracing)."""
    enc = OnnxEncoder(folder, meta=meta, max_seq_length=None)
    ref = st.encode(_CHECK_TEXTS, batch_size=len(_CHECK_TEXTS), normalize_embeddings=True)
    got = np.concatenate(
        [enc.encode(_CHECK_TEXTS, batch_size=len(_CHECK_TEXTS)), enc.encode(_CHECK_TEXTS[:1])]
    )
    ref = np.concatenate([ref, ref[:1]])
    cos = float(np.min(np.sum(ref * got, axis=1)))
    if not cos >= 0.9999:
        raise ConfigError(
            f"the ONNX export of {name!r} does not reproduce torch's vectors (min cosine "
            f"{cos:.6f}); use backend=torch"
        )


def memory_arena() -> bool:
    """Whether ONNX Runtime sessions keep a CPU memory arena: ``$HOPGRAPH_ORT_ARENA`` ("0" or
    "1"), else on (ONNX Runtime's default). The arena keeps the largest activations any run
    needed, per session, for good; off, each run allocates and frees its own (the same vectors,
    bit for bit; ``hopgraph serve`` turns it off, see :mod:`hopgraph.serve.process`)."""
    return os.environ.get("HOPGRAPH_ORT_ARENA", "1").strip() != "0"


def spinning() -> bool:
    """Whether ONNX Runtime's intra-op threads spin after a run, waiting for the next:
    ``$HOPGRAPH_ORT_SPINNING`` ("0" or "1"), else on (ONNX Runtime's default). Spinning saves a
    thread's wake-up when runs follow each other closely; off, the threads sleep at once, so a
    search that runs several sessions in turn (query encoder, hop encoder, reranker) on few
    cores does not lose time to the last one's spinning threads."""
    return os.environ.get("HOPGRAPH_ORT_SPINNING", "1").strip() != "0"


def session_options(threads: int | None = None, arena: bool | None = None) -> Any:
    """ONNX Runtime session options for hopgraph's CPU sessions: every graph optimisation,
    ``threads`` (else :func:`_cpu_count`) intra-op threads and one inter-op, the memory arena
    as :func:`memory_arena` says unless ``arena`` is given, spinning as :func:`spinning` says."""
    ort = require_onnxruntime()
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads or _cpu_count()
    options.inter_op_num_threads = 1
    options.enable_cpu_mem_arena = memory_arena() if arena is None else arena
    if not spinning():
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return options


def _cpu_count() -> int:
    """Threads for ONNX Runtime: ``$HOPGRAPH_THREADS`` when set (a Ray actor sets it to its
    CPUs), else the cores this process may run on."""
    given = os.environ.get("HOPGRAPH_THREADS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class OnnxEncoder:
    """Runs an exported model folder: tokenise, run the graph, L2-normalise (float32)."""

    def __init__(
        self,
        folder: Path,
        *,
        max_seq_length: int | None,
        meta: dict[str, Any] | None = None,
        threads: int | None = None,
        arena: bool | None = None,
    ):
        ort = require_onnxruntime()
        from tokenizers import Tokenizer

        self.folder = Path(folder)
        self.meta = meta or json.loads((self.folder / "meta.json").read_text())
        self.dim = int(self.meta["dim"])
        self.session = ort.InferenceSession(
            str(self.folder / "model.onnx"),
            session_options(threads, arena),
            providers=["CPUExecutionProvider"],
        )
        self.inputs = [i.name for i in self.session.get_inputs()]
        tok = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        tok.no_padding()
        tok.no_truncation()
        # As sentence-transformers calls it: truncation="longest_first" at max_seq_length,
        # padding to the longest text of the batch.
        tok.enable_truncation(
            max_length=int(max_seq_length or self.meta["max_seq_length"]),
            strategy="longest_first",
            direction=self.meta["truncation_side"],
        )
        tok.enable_padding(
            direction=self.meta["padding_side"],
            pad_id=self.meta["pad_token_id"],
            pad_type_id=self.meta["pad_type_id"],
            pad_token=self.meta["pad_token"],
        )
        self.tokenizer = tok

    def _feeds(self, encodings: list[Any]) -> dict[str, np.ndarray]:
        return {
            name: np.array([getattr(e, _INPUT_FIELDS[name]) for e in encodings], dtype=np.int64)
            for name in self.inputs
        }

    def _run(self, texts: list[str]) -> np.ndarray:
        feeds = self._feeds(self.tokenizer.encode_batch(texts))
        return self.session.run([OUTPUT], feeds)[0]

    def encode_tokens(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray, Any, Any]]:
        """Per text (one batch): its unit sentence vector, its token embeddings (tokens ×
        hidden, before pooling, padding removed), each token's character offsets and word index
        (None: special token)."""
        if TOKENS not in {o.name for o in self.session.get_outputs()}:
            raise ConfigError(
                f"the ONNX export in {self.folder} has no token embeddings; delete it to re-export"
            )
        encodings = self.tokenizer.encode_batch(texts)
        sent, tokens = self.session.run([OUTPUT, TOKENS], self._feeds(encodings))
        out = []
        for i, enc in enumerate(encodings):
            n = int(sum(enc.attention_mask))
            vec = sent[i] / max(float(np.linalg.norm(sent[i])), 1e-12)
            out.append(
                (
                    vec.astype(np.float32),
                    tokens[i, :n].astype(np.float32),
                    enc.offsets[:n],
                    enc.word_ids[:n],
                )
            )
        return out

    def encode(
        self,
        texts: list[str],
        batch_size: int = 64,
        progress: bool = False,
        on_batch: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """(len(texts), dim) float32, unit rows. Batches are formed longest first (as
        sentence-transformers does) so that little padding is computed; ``on_batch`` is called
        after each with how many texts are encoded so far."""
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        if len(texts) == 1:
            out[:] = self._run(texts)
            if on_batch is not None:
                on_batch(1)
        else:
            batches = longest_first(texts, batch_size)
            if progress:
                from tqdm import tqdm

                total = -(-len(texts) // batch_size)
                batches = tqdm(batches, total=total, desc="encoding", unit="batch")
            for rows, done in batches:
                out[rows] = self._run([texts[j] for j in rows])
                if on_batch is not None:
                    on_batch(done)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        out /= np.maximum(norms, 1e-12)
        return out
