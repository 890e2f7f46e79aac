"""The built-in retrieval methods, listed in one place, and the lookups that find them by name.

The dependencies run one way: :mod:`hopgraph.retrieve.base` defines :class:`Retriever` and the
table of methods by name; each method module imports it and defines its classes; this module
imports the method modules and puts every built-in class of :data:`BUILTIN_METHODS` in the
table. :mod:`hopgraph.retrieve` imports this module, so whichever of its modules is imported
first, the table is full before a method is looked up. A method of one's own is added with
:func:`register_method` (``hopgraph.retrieve.register_method``).

Callers look methods up here (or through :mod:`hopgraph.retrieve`): :func:`get_retriever`,
:func:`method_class`, :func:`method_parts`, :func:`list_methods`, :func:`default_choice`.
"""

from __future__ import annotations

from hopgraph.retrieve.base import (
    DEFAULT_ALIAS,
    DEFAULT_FALLBACKS,
    DEFAULT_METHOD,
    DefaultChoice,
    Retriever,
    default_choice,
    get_retriever,
    is_default,
    list_methods,
    method_class,
    method_parts,
    needed_parts,
    register_method,
    resolve_method_name,
    supported_methods,
)
from hopgraph.retrieve.dense import DenseRetriever
from hopgraph.retrieve.fastinsight import FastInsightRetriever, GARRetriever, RerankRetriever
from hopgraph.retrieve.fusion import ComposedRetriever, HybridRetriever, RRFRetriever
from hopgraph.retrieve.graph import (
    BM25TwoStepRetriever,
    GraphBM25FallbackRetriever,
    GraphDenseRetriever,
    GraphHybridRetriever,
    GraphRetriever,
    GraphRRFRetriever,
    RRFPPRFusionRetriever,
    TfidfGraphRetriever,
)
from hopgraph.retrieve.grapher import GraphERGATRetriever, GraphERGCSRetriever, GraphERPPRRetriever
from hopgraph.retrieve.griever import GrieverRetriever
from hopgraph.retrieve.multihop import MultihopRetriever
from hopgraph.retrieve.sparse import BM25Retriever, RM3Retriever

__all__ = [
    "BUILTIN_METHODS",
    "DEFAULT_ALIAS",
    "DEFAULT_FALLBACKS",
    "DEFAULT_METHOD",
    "DefaultChoice",
    "Retriever",
    "default_choice",
    "get_retriever",
    "is_default",
    "list_methods",
    "method_class",
    "method_parts",
    "needed_parts",
    "register_method",
    "resolve_method_name",
    "supported_methods",
]

BUILTIN_METHODS: tuple[type[Retriever], ...] = (
    # first-stage: lexical, dense, and their fusions
    BM25Retriever,
    RM3Retriever,
    DenseRetriever,
    RRFRetriever,
    HybridRetriever,
    ComposedRetriever,
    # entity-graph PPR (SPRIG and its variants)
    GraphRetriever,
    GraphBM25FallbackRetriever,
    GraphHybridRetriever,
    GraphDenseRetriever,
    GraphRRFRetriever,
    RRFPPRFusionRetriever,
    TfidfGraphRetriever,
    BM25TwoStepRetriever,
    # over a base method's candidates
    GraphERGCSRetriever,
    GraphERPPRRetriever,
    GraphERGATRetriever,
    RerankRetriever,
    GARRetriever,
    FastInsightRetriever,
    # triples
    GrieverRetriever,
    # the default
    MultihopRetriever,
)
"""Every built-in method, each registered under its ``name``."""

for _cls in BUILTIN_METHODS:
    register_method(_cls)
del _cls
