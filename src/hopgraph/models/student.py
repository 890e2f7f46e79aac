"""The distilled passage encoder: a few of the query encoder's layers, trained to give its vectors.

A student folder holds ``layers.safetensors`` (the student's transformer layers in bf16; the
embeddings, pooling and tokenizer are the teacher's own and are not copied) and ``meta.json``
(its training card: which teacher layers it started from, the teacher, the data, its cosine to
the teacher on held-out passages). :func:`apply_student` turns a loaded teacher into the
student in place. The bundled student (:data:`BUNDLED_STUDENT`) is made by
``benchmarks/student_encoder.py`` from ``../shared/data`` training passages only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hopgraph.errors import ConfigError

BUNDLED_STUDENT = Path(__file__).parent / "passage-student"
WEIGHTS = "layers.safetensors"
META = "meta.json"


def _layer_list(model: Any) -> Any:
    try:
        return model.encoder.layer
    except AttributeError:
        raise ConfigError(
            f"{type(model).__name__} has no encoder.layer: a student needs a BERT-like encoder"
        ) from None


def cut_layers(model: Any, layers: tuple[int, ...] | list[int]) -> None:
    """Keep only the transformer ``layers`` (teacher indices, in order) of a BERT-like model."""
    import torch

    have = _layer_list(model)
    bad = [i for i in layers if not 0 <= i < len(have)]
    if bad:
        raise ConfigError(f"the teacher has {len(have)} layers; no layer {bad}")
    model.encoder.layer = torch.nn.ModuleList([have[i] for i in layers])
    model.config.num_hidden_layers = len(layers)


def student_meta(folder: str | Path) -> dict[str, Any]:
    """The student's training card (``meta.json``); ConfigError when the folder is not one."""
    folder = Path(folder).expanduser()
    try:
        meta = json.loads((folder / META).read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{folder} is not a passage student folder ({META}: {exc})") from None
    if not (folder / WEIGHTS).is_file():
        raise ConfigError(f"{folder} is not a passage student folder (no {WEIGHTS})")
    return meta


def save_student(folder: str | Path, model: Any, card: dict[str, Any]) -> Path:
    """Write the student's layers (bf16) and its card; replaces the folder atomically."""
    import torch
    from safetensors.torch import save_file

    from hopgraph.atomic import replace_folder

    folder = Path(folder).expanduser().resolve()
    tensors = {
        f"encoder.layer.{name}": t.detach().to(torch.bfloat16).contiguous()
        for name, t in _layer_list(model).state_dict().items()
    }
    with replace_folder(folder) as tmp:
        save_file(tensors, str(tmp / WEIGHTS))
        (tmp / META).write_text(json.dumps(card, indent=2, sort_keys=True) + "\n")
        for f in (WEIGHTS, META):
            (tmp / f).chmod(0o644)  # a package file, readable by all
    return folder


def apply_student(model: Any, folder: str | Path) -> dict[str, Any]:
    """Turn ``model`` (the teacher, a transformers BERT-like model) into the student of
    ``folder``: cut to its layers and load its weights (in the model's own dtype)."""
    from safetensors.torch import load_file

    meta = student_meta(folder)
    cut_layers(model, meta["config"]["layers"])
    layers = _layer_list(model)
    dtype = next(layers.parameters()).dtype
    prefix = "encoder.layer."
    weights = {
        k[len(prefix) :]: v.to(dtype)
        for k, v in load_file(str(Path(folder) / WEIGHTS)).items()
        if k.startswith(prefix)
    }
    try:
        layers.load_state_dict(weights, strict=True)
    except RuntimeError as exc:
        raise ConfigError(
            f"the student in {folder} does not fit this teacher ({meta['config']['teacher']!r} "
            f"was its teacher): {str(exc).splitlines()[0]}"
        ) from None
    return meta


def check_teacher(folder: str | Path, model: str) -> None:
    """ConfigError unless the student in ``folder`` was distilled from ``model``: its vectors
    only mean something beside that model's query vectors."""
    from hopgraph.models.resolve import resolve_model

    teacher = student_meta(folder)["config"]["teacher"]
    if resolve_model(teacher) != resolve_model(model):
        raise ConfigError(
            f"the passage student in {folder} was distilled from {teacher!r}, not from the "
            f"query encoder {model!r}: its vectors would not match the queries'; use "
            "dense.passage_encoder=same or torch-bf16, or distil a student of that model"
        )
