"""Training of the learned parts: the GraphER graph attention ranker, the default's LightGBM
rankers (lightgbm: the ``train`` extra; searching never needs it, issue 62)."""

from __future__ import annotations

from types import ModuleType

from hopgraph.errors import ConfigError

TRAIN_EXTRA = "pip install 'hopgraph[train]'"


def import_lightgbm() -> ModuleType:
    """lightgbm, to fit a ranker; a clear error naming the ``train`` extra when it is missing
    (a search scores the fitted trees without it: :mod:`hopgraph.models.trees`)."""
    try:
        import lightgbm
    except ImportError as exc:
        raise ConfigError(
            f"training a ranker needs lightgbm, which is not installed ({exc}): {TRAIN_EXTRA}"
        ) from None
    return lightgbm
