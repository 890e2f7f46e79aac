"""Retrieval methods: shared operators composed into named retrievers.

Importing the package imports :mod:`hopgraph.retrieve.registry`, which lists the built-in
methods and registers them: the table of methods by name is full whichever module of the
package is imported first.
"""

from hopgraph.retrieve.ranking import Hit, Ranking, top_k
from hopgraph.retrieve.registry import (
    DEFAULT_METHOD,
    Retriever,
    get_retriever,
    list_methods,
    method_class,
    register_method,
)

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
