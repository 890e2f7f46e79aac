"""Retrieval methods: shared operators composed into named retrievers."""

from hopgraph.retrieve.base import (
    Retriever,
    get_retriever,
    list_methods,
    method_class,
    register_method,
)
from hopgraph.retrieve.ranking import Hit, Ranking, top_k

__all__ = [
    "Hit",
    "Ranking",
    "Retriever",
    "get_retriever",
    "list_methods",
    "method_class",
    "register_method",
    "top_k",
]
