"""A linear ranker over named per-passage features, stored as a small JSON file.

``score(X) = ((X − mean) / scale) · coef + intercept``: the logit of a logistic regression fitted
by :mod:`hopgraph.training.ranker`. Scoring needs numpy only; the file names its features, so a
model and the code that computes the features cannot drift apart silently.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.errors import ConfigError

BUNDLED = "multihop-ranker.json"


@dataclass(frozen=True)
class LinearRanker:
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    meta: dict[str, Any]

    def score(self, X: np.ndarray) -> np.ndarray:
        """The model's logit for each row of ``X`` (columns in ``features`` order)."""
        return ((X - self.mean) / self.scale) @ self.coef + self.intercept

    def contributions(self, X: np.ndarray) -> np.ndarray:
        """Each feature's share of each row's logit, relative to an average candidate."""
        return ((X - self.mean) / self.scale) * self.coef

    def check_features(self, expected: tuple[str, ...]) -> None:
        if tuple(self.features) != tuple(expected):
            raise ConfigError(
                f"ranker model expects features {list(self.features)}, this hopgraph computes "
                f"{list(expected)}: retrain it (benchmarks/default_ranker.py)"
            )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "linear",
            "features": list(self.features),
            "mean": [float(v) for v in self.mean],
            "scale": [float(v) for v in self.scale],
            "coef": [float(v) for v in self.coef],
            "intercept": float(self.intercept),
            "meta": self.meta,
        }

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")
        tmp.replace(path)
        return path


def ranker_from_json(data: dict[str, Any], where: str = "ranker") -> LinearRanker:
    try:
        if data.get("kind") != "linear":
            raise ConfigError(f"{where}: not a linear ranker (kind={data.get('kind')!r})")
        feats = tuple(str(f) for f in data["features"])
        arrays = [np.asarray(data[k], np.float64) for k in ("mean", "scale", "coef")]
        if any(a.shape != (len(feats),) for a in arrays):
            raise ConfigError(f"{where}: mean, scale and coef need one value per feature")
        if not all(np.isfinite(a).all() for a in arrays) or (arrays[1] <= 0).any():
            raise ConfigError(f"{where}: non-finite values or a non-positive scale")
        return LinearRanker(feats, *arrays, float(data["intercept"]), dict(data.get("meta", {})))
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: malformed ranker file ({exc})") from None


def load_ranker(path: str | Path | None = None) -> LinearRanker:
    """The ranker at ``path``, or the one shipped with hopgraph when ``path`` is None."""
    if path is None:
        text = resources.files("hopgraph.models").joinpath(BUNDLED).read_text(encoding="utf-8")
        return ranker_from_json(json.loads(text), f"bundled {BUNDLED}")
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"ranker model {str(p)!r} not found")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"ranker model {str(p)!r} unreadable: {exc}") from None
    return ranker_from_json(data, str(p))
