"""Where an ONNX graph keeps its weights: float16 storage cast to float32 in the graph (the
shipped MiniLM, :mod:`hopgraph.models.packaged_encoder`), and back to float32 initializers (what
ONNX Runtime's quantisation wants, :func:`hopgraph.models.onnx_backend.ensure_quantized`). A leaf
module: both of those import it, neither imports the other through it."""

from __future__ import annotations

from typing import Any

_MIN_FP16 = 1024  # tensors of fewer elements (biases' scalars, shapes) stay as they are


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
