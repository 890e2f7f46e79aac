"""hopgraph: multi-hop retrieval for RAG without an LLM at query time.

Three lines from corpus to ranking with the default pipeline (the parts of
``hopgraph.DEFAULT_METHOD``, their options detected from the corpus)::

    import hopgraph
    index = hopgraph.Index.build(hopgraph.load_corpus("corpus_dir"))
    ranking = hopgraph.get_retriever(index).search("who directed ...", k=10)

or any other method: ``Index.build(corpus, parts=["sparse", "dense"])`` and
``get_retriever(index, "rrf")``.

Public names are imported lazily so that ``import hopgraph`` (and the CLI) start fast.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("hopgraph")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0"

_EXPORTS = {
    "Corpus": "hopgraph.corpus",
    "Dataset": "hopgraph.corpus",
    "Passage": "hopgraph.corpus",
    "Question": "hopgraph.corpus",
    "load_corpus": "hopgraph.corpus",
    "load_dataset": "hopgraph.corpus",
    "HopgraphError": "hopgraph.errors",
    "Index": "hopgraph.index",
    "build_index": "hopgraph.index.streaming",
    "iter_corpus": "hopgraph.corpus",
    "DEFAULT_METHOD": "hopgraph.retrieve",
    "DEFAULT_PARTS": "hopgraph.defaults",
    "detect_settings": "hopgraph.index.detect",
    "Ranking": "hopgraph.retrieve",
    "get_retriever": "hopgraph.retrieve",
    "list_methods": "hopgraph.retrieve",
    "evaluate": "hopgraph.eval",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hopgraph' has no attribute {name!r}")
    return getattr(import_module(module), name)
