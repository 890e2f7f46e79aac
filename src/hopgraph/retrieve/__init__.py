"""Retrieval methods: shared operators composed into named retrievers."""

from hopgraph.retrieve.base import (
    DEFAULT_METHOD,
    Retriever,
    get_retriever,
    list_methods,
    method_class,
    register_method,
)
from hopgraph.retrieve.ranking import Hit, Ranking, top_k

__all__ = [
    "DEFAULT_METHOD",
    "Hit",
    "Ranking",
    "Retriever",
    "get_retriever",
    "list_methods",
    "method_class",
    "register_method",
    "top_k",
]
