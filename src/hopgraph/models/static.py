"""Static embedders: one vector per token, averaged (model2vec), distilled locally from MiniLM.

`model2vec <https://github.com/MinishLab/model2vec>`_ distils a sentence-transformers model into a
table of token vectors: every vocabulary token is encoded once by the transformer, the table is
reduced by PCA and weighted (SIF), and a text's vector is then the mean of its tokens' rows. No
attention runs at encoding time, so it is orders of magnitude faster than the transformer, at a
recall cost measured in docs/notes/encoding.md ("Fast encoding").

Distillation runs offline from a local model folder (no hub): by default the bundled
all-MiniLM-L6-v2. ``dense.backend=static`` takes ``dense.model`` as either a model2vec folder (as
written by :func:`distill_static`) or a sentence-transformers model, which is then distilled once
into ``$HOPGRAPH_STATIC_CACHE`` (else ``$HOPGRAPH_CACHE/static``, else
``~/.cache/hopgraph/static``), written to a temporary folder and renamed into place.

Needs the optional extra ``hopgraph[static]`` (``model2vec[distill]``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.errors import ConfigError
from hopgraph.models.resolve import resolve_model

DEFAULT_PCA_DIMS = 256
STATIC_VERSION = 1


def static_cache_root() -> Path:
    """Where distilled static models are kept (see the module docstring)."""
    env = os.environ.get("HOPGRAPH_STATIC_CACHE")
    if env:
        return Path(env).expanduser().absolute()
    index_cache = os.environ.get("HOPGRAPH_CACHE")
    if index_cache:
        return Path(index_cache).expanduser().absolute() / "static"
    return Path.home() / ".cache" / "hopgraph" / "static"


def is_static_model(path: str | Path) -> bool:
    """True when ``path`` is a model2vec folder (its config.json says ``model2vec``)."""
    config = Path(path) / "config.json"
    if not config.is_file():
        return False
    try:
        return json.loads(config.read_text()).get("model_type") == "model2vec"
    except (OSError, ValueError):
        return False


def _require_model2vec(distill: bool = False) -> Any:
    try:
        import model2vec

        if distill:
            import model2vec.distill  # noqa: F401 - needs the [distill] extra's packages
    except ImportError:
        raise ConfigError(
            "backend 'static' needs model2vec: pip install 'hopgraph[static]'"
        ) from None
    return model2vec


def distill_static(
    model: str, out_dir: str | Path, *, pca_dims: int | None = DEFAULT_PCA_DIMS
) -> Path:
    """Distil the sentence-transformers model ``model`` (a name the embedder resolves, or a local
    folder) into a model2vec folder ``out_dir``, offline; written to a temporary folder and
    renamed into place. Returns ``out_dir``."""
    if pca_dims is not None and pca_dims <= 0:
        raise ConfigError(f"pca_dims must be positive, got {pca_dims}")
    path = resolve_model(model)
    if not Path(path).is_dir():
        raise ConfigError(
            f"distilling a static model needs a local sentence-transformers folder; {model!r} "
            "is not one (no model hub is reachable offline)"
        )
    _require_model2vec(distill=True)
    from model2vec.distill import distill

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    out = Path(out_dir).expanduser().resolve()
    if out.exists():
        raise ConfigError(f"{out} already exists; give a new folder")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{out.name}-", dir=out.parent))
    try:
        static = distill(model_name=path, pca_dims=pca_dims)
        static.save_pretrained(str(tmp))
        (tmp / "hopgraph.json").write_text(
            json.dumps({"version": STATIC_VERSION, "source": model, "pca_dims": pca_dims})
        )
        os.chmod(tmp, 0o755)
        os.rename(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def static_dir(
    path: str, pca_dims: int | None = DEFAULT_PCA_DIMS, root: Path | None = None
) -> Path:
    """The cache folder for the static model distilled from model folder ``path``."""
    local = Path(path)
    files = [
        [str(p.relative_to(local)), p.stat().st_size, p.stat().st_mtime_ns]
        for p in sorted(local.rglob("*"))
        if p.is_file() and not p.name.lower().endswith(".md")
    ]
    from importlib.metadata import PackageNotFoundError, version

    try:
        m2v = version("model2vec")
    except PackageNotFoundError:
        m2v = ""
    key = json.dumps([STATIC_VERSION, path, files, pca_dims, m2v], sort_keys=True)
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(local.parts[-2:])).strip("_.-")[-60:]
    return (root or static_cache_root()) / f"{slug or 'model'}-pca{pca_dims}-{digest}"


def ensure_static(model: str) -> Path:
    """A model2vec folder for ``model``: ``model`` itself when it is one, else its distillation
    (made once into the cache)."""
    path = resolve_model(model)
    if is_static_model(path):
        return Path(path)
    if not Path(path).is_dir():
        raise ConfigError(
            f"backend 'static' needs a model2vec folder or a local sentence-transformers folder "
            f"to distil one from; {model!r} is neither"
        )
    final = static_dir(path)
    if is_static_model(final):
        return final
    try:
        return distill_static(path, final)
    except ConfigError:
        if is_static_model(final):  # another process distilled it first
            return final
        raise


class StaticEncoder:
    """Runs a model2vec folder: token vectors averaged, L2-normalised (float32)."""

    def __init__(self, folder: Path, *, max_seq_length: int | None):
        _require_model2vec()
        from model2vec import StaticModel

        self.folder = Path(folder)
        try:
            self.model = StaticModel.from_pretrained(str(self.folder), force_download=False)
        except Exception as exc:  # noqa: BLE001 - report any load failure the same way
            raise ConfigError(f"cannot load the static model in {self.folder}: {exc}") from exc
        self.max_length = max_seq_length
        self.dim = int(self.model.dim)

    def encode(self, texts: list[str], batch_size: int = 1024) -> np.ndarray:
        """(len(texts), dim) float32, unit rows. One process (no multiprocessing pool)."""
        out = self.model.encode(
            list(texts),
            max_length=self.max_length,
            batch_size=max(batch_size, 1),
            use_multiprocessing=False,
        )
        out = np.asarray(out, dtype=np.float32).reshape(len(texts), self.dim)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.ascontiguousarray(out / np.maximum(norms, 1e-12))
