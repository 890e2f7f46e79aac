"""The default pipeline: the recommended method, the index parts it needs, and the options of
those parts detected from the corpus (:mod:`hopgraph.index.detect`).

``Index.build(corpus)`` without parts, ``hopgraph index`` without ``--parts`` and
``hopgraph add-parts`` build :data:`DEFAULT_PARTS` with :func:`detected_options`; searches
without a method (``get_retriever(index)``, ``hopgraph search``, the server) use
:data:`DEFAULT_METHOD`, or on an index without its parts the best method the parts allow
(:func:`~hopgraph.retrieve.base.default_choice`).

This module sits above both: the parts and their detected options are the index's
(:mod:`hopgraph.index.default_build`, which the index builds from without importing this
module), the method is the retrievers'.
"""

from __future__ import annotations

from hopgraph.index.default_build import DEFAULT_PARTS, default_build, detected_options
from hopgraph.index.detect import describe_detected
from hopgraph.retrieve.registry import DEFAULT_ALIAS, DEFAULT_METHOD

__all__ = [
    "DEFAULT_ALIAS",
    "DEFAULT_METHOD",
    "DEFAULT_PARTS",
    "default_build",
    "describe_detected",
    "detected_options",
]
