"""Models: sentence embedders (cross-encoders come with the reranking methods)."""

from hopgraph.models.embedder import DEFAULT_EMBEDDER, Embedder, load_embedder, resolve_model

__all__ = ["DEFAULT_EMBEDDER", "Embedder", "load_embedder", "resolve_model"]
