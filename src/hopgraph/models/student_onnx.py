"""A student-format folder (the passage student, the hop encoder: :mod:`hopgraph.models.student`)
as an ONNX export, composed without PyTorch from its teacher's export (issue 62).

Such a folder holds only its transformer layers (bf16 safetensors); the embeddings, pooling and
tokenizer are the teacher's. :func:`ensure_student_export` takes the teacher's ONNX export (for
the bundled MiniLM, the one shipped in the wheel), keeps the nodes of its first *k* layers (*k*:
the student's layer count), puts the student's weights into them (a linear layer's weight,
transposed, into its ``MatMul``; biases and LayerNorms by name), sends the last kept layer's
output to the pooling, and drops what no output needs. The folder is written once into the ONNX
cache, beside the other exports, and is then an ordinary export: ONNX Runtime runs it, and
``precision=int8`` quantises it as it quantises any export.

The same vectors as the student in PyTorch, up to float rounding: both run the student's bf16
weights widened to float32 and the teacher's embeddings (stored float16 in the shipped export,
within cosine 0.9999997 of the float32 ones). ``tests/test_student_onnx.py`` checks the
bundled student and hop encoder against PyTorch.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.errors import ConfigError

COMPOSE_VERSION = 1  # bump when what compose() writes changes (a new cache folder)
_LAYER = re.compile(r"/layer\.(\d+)/")
# a BERT layer's linear modules: their weights are the second input of "<layer>/<module>/MatMul"
_LINEAR = ("attention.self.query", "attention.self.key", "attention.self.value",
           "attention.output.dense", "intermediate.dense", "output.dense")  # fmt: skip


def read_bf16_layers(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a student's ``layers.safetensors`` as float32 arrays. The file format is
    8 bytes of header length, a JSON header (dtype, shape, byte offsets per tensor), then the
    bytes; read here because safetensors' numpy loader has no bfloat16 (numpy has no such
    type): a bfloat16 is the top half of a float32."""
    data = Path(path).read_bytes()
    try:
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + n])
    except (struct.error, ValueError) as exc:
        raise ConfigError(f"{path} is not a safetensors file ({exc})") from None
    body = memoryview(data)[8 + n :]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        raw = body[start:end]
        if info["dtype"] == "BF16":
            half = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            arr = half.view(np.float32)
        elif info["dtype"] == "F32":
            arr = np.frombuffer(raw, dtype="<f4").copy()
        else:
            raise ConfigError(f"{path}: tensor {name} is {info['dtype']}, not BF16 or F32")
        out[name] = arr.reshape(info["shape"])
    return out


def export_key(student: Path, teacher: Path) -> str:
    """A short key of the student's weights, its card and the teacher export's graph."""
    h = hashlib.sha256(f"{COMPOSE_VERSION}".encode())
    for f in (student / "layers.safetensors", student / "meta.json", teacher / "model.onnx"):
        st = f.stat()
        h.update(f"{f.name}-{st.st_size}-{st.st_mtime_ns}".encode())
    h.update((student / "meta.json").read_bytes())
    return h.hexdigest()[:16]


def ensure_student_export(student: str | Path, teacher: Path) -> Path:
    """The ONNX export of the student in folder ``student`` (its teacher's export in
    ``teacher``), composed into the ONNX cache the first time it is asked for."""
    from hopgraph.models.onnx_backend import cache_folder, onnx_cache_root, require_onnxruntime

    require_onnxruntime()
    student = Path(student).expanduser().resolve()
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", student.name).strip("_.-")[-40:] or "student"
    final = onnx_cache_root() / f"student-{slug}-{export_key(student, Path(teacher))}"
    if (final / "meta.json").is_file():
        return final
    with cache_folder(final) as tmp:
        compose(student, Path(teacher), tmp)
    return final


def compose(student: Path, teacher: Path, out: Path) -> None:
    """Write the student's export (model.onnx, tokenizer.json, meta.json) into ``out``."""
    try:
        import onnx
    except ImportError:
        raise ConfigError(
            "the student's ONNX export needs the onnx package: pip install onnx"
        ) from None
    from hopgraph.models.onnx_weights import weights_as_fp32
    from hopgraph.models.student import WEIGHTS, student_meta

    card = student_meta(student)
    weights = read_bf16_layers(student / WEIGHTS)
    model = weights_as_fp32(onnx.load(str(teacher / "model.onnx")))
    count = len({int(k.split(".")[2]) for k in weights if k.startswith("encoder.layer.")})
    if count != len(card["config"]["layers"]):
        raise ConfigError(f"{student}: {count} layers in {WEIGHTS}, its card says otherwise")
    _cut(model.graph, count, teacher)
    _put_weights(model.graph, weights, teacher)
    _prune(model.graph)  # the teacher's layer weights
    onnx.checker.check_model(model)
    onnx.save(model, str(out / "model.onnx"))
    shutil.copyfile(teacher / "tokenizer.json", out / "tokenizer.json")
    meta = json.loads((teacher / "meta.json").read_text())
    meta.pop("weights", None)
    meta["max_seq_length"] = int(card["config"].get("max_seq_length", meta["max_seq_length"]))
    meta["student"] = {
        "folder": str(student),
        "kind": card.get("kind", "passage student"),
        "layers": count,
        "teacher_export": str(teacher),
        "compose_version": COMPOSE_VERSION,
    }
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def _layer_of(name: str) -> int | None:
    m = _LAYER.search(name)
    return int(m.group(1)) if m else None


def _cut(graph: Any, count: int, teacher: Path) -> None:
    """Keep the teacher's layers 0..count-1: the last kept layer's output takes the name of the
    teacher's last layer output, and nodes and initializers no output needs go."""
    layers = {n for n in (_layer_of(node.name) for node in graph.node) if n is not None}
    if not layers or count > len(layers):
        raise ConfigError(f"the export in {teacher} has {len(layers)} named layers; {count} asked")
    last = max(layers)
    final = [n for n in graph.node if f"/layer.{last}/output/LayerNorm/" in n.name]
    keep = [n for n in graph.node if f"/layer.{count - 1}/output/LayerNorm/" in n.name]
    if len(final) != 1 or len(keep) != 1:
        raise ConfigError(f"the export in {teacher} is not a BERT-like layer stack hopgraph knows")
    hidden = final[0].output[0]
    if count - 1 != last:
        graph.node.remove(final[0])
        keep[0].output[0] = hidden
    _prune(graph)


def _prune(graph: Any) -> None:
    """Drop the nodes and initializers that no graph output depends on."""
    producer = {name: node for node in graph.node for name in node.output}
    need = {o.name for o in graph.output}
    used: set[int] = set()
    todo = list(need)
    while todo:
        node = producer.get(todo.pop())
        if node is None or id(node) in used:
            continue
        used.add(id(node))
        for i in node.input:
            if i and i not in need:
                need.add(i)
                todo.append(i)
    nodes = [n for n in graph.node if id(n) in used]
    inits = [t for t in graph.initializer if t.name in need]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(inits)


def _slot(graph: Any, inits: set[str], param: str) -> tuple[Any, int] | None:
    """The node and input position that take the student's ``layer.<i>.<module>.<kind>``: a
    linear layer's weight is its ``MatMul``'s second input, its bias the ``Add``'s initializer,
    a LayerNorm's weight and bias the ``LayerNormalization``'s second and third inputs."""
    _, i, rest = param.split(".", 2)
    module, kind = rest.rsplit(".", 1)
    scope = f"/layer.{i}/{module.replace('.', '/')}/"
    if module in _LINEAR:
        op = "MatMul" if kind == "weight" else "Add"
    elif module.endswith("LayerNorm"):
        op = "LayerNormalization"
    else:
        return None
    nodes = [n for n in graph.node if scope in n.name and n.op_type == op
             and n.name.endswith(f"{scope}{op}")]  # fmt: skip
    if len(nodes) != 1:
        return None
    node = nodes[0]
    if op == "MatMul":
        return node, 1
    if op == "Add":
        at = [k for k, name in enumerate(node.input) if name in inits]
        return (node, at[0]) if len(at) == 1 else None
    return node, 1 if kind == "weight" else 2


def _put_weights(graph: Any, weights: dict[str, np.ndarray], teacher: Path) -> None:
    """Each ``encoder.layer.<i>.<param>`` of the student into the kept graph: a new initializer
    for the input that takes it (the exporter may share one initializer between equal tensors,
    so none is overwritten in place); a linear layer's weight goes in transposed."""
    from onnx import numpy_helper

    inits = {t.name: t for t in graph.initializer}
    # the exporter passes a tensor equal to another as an Identity of it: follow those
    same = {n.output[0]: n.input[0] for n in graph.node if n.op_type == "Identity"}

    def source(name: str) -> str:
        while name in same and name not in inits:
            name = same[name]
        return name

    weight_names = {n for n in {*inits, *same} if source(n) in inits}
    for key, value in sorted(weights.items()):
        if not key.startswith("encoder.layer."):
            continue
        param = key[len("encoder.") :]  # layer.<i>.<module>.<weight|bias>
        slot = _slot(graph, weight_names, param)
        if slot is None or source(slot[0].input[slot[1]]) not in inits:
            raise ConfigError(f"no place for the student's {key} in the export in {teacher}")
        node, at = slot
        if param.endswith(".weight") and param.rsplit(".", 1)[0].split(".", 2)[2] in _LINEAR:
            value = value.T
        dims = tuple(inits[source(node.input[at])].dims)
        if dims != value.shape:
            raise ConfigError(f"the student's {key} is {value.shape}, the teacher's {dims}")
        name = f"student.{param}"
        graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        node.input[at] = name
    left = sorted(
        i for n in graph.node if _layer_of(n.name) is not None for i in n.input
        if source(i) in inits and int(np.prod(inits[source(i)].dims)) > 1
    )  # fmt: skip
    if left:
        raise ConfigError(f"the student leaves the teacher's {left[:3]} in place: not a student")
