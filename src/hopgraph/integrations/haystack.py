"""hopgraph as a Haystack 2 retriever component (``pip install 'hopgraph[haystack]'``).

A component with ``run(query, top_k, filters) -> {"documents": [...]}``, for pipelines::

    from haystack import Pipeline
    from haystack.components.builders import PromptBuilder
    from hopgraph.integrations.haystack import HopgraphRetriever

    template = "{% for d in documents %}{{ d.content }}\\n\\n{% endfor %}Question: {{ query }}"
    pipe = Pipeline()
    pipe.add_component("retriever", HopgraphRetriever("ix/", k=5))
    pipe.add_component("prompt", PromptBuilder(template))
    pipe.connect("retriever.documents", "prompt.documents")
    q = "Who founded the shipyard that built SS Orrendale?"
    pipe.run({"retriever": {"query": q}, "prompt": {"query": q}})

A pipeline saved with ``pipe.dumps()`` loads with
``Pipeline.loads(text, allowed_modules=["hopgraph.integrations.haystack"])`` (Haystack refuses
classes from modules not on its allowlist).
"""

from __future__ import annotations

import os
from typing import Any

from hopgraph.integrations._common import Hit, IndexLike, Searcher, missing_extra

try:
    from haystack import Document, component, default_from_dict, default_to_dict
    from haystack.core.errors import SerializationError
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise missing_extra("haystack", "haystack", "haystack-ai") from exc


@component
class HopgraphRetriever:
    """A Haystack component over ``hopgraph.get_retriever(index, method, **params)``.

    ``index`` is a :class:`hopgraph.Index` or the folder of a saved one (loaded once);
    ``method`` None is the default method; ``k`` and ``filter`` are the defaults of
    :meth:`run`; ``max_per_doc`` caps the hits of one document (None: hopgraph's default, 0: no
    limit); every other keyword is a parameter of the method.

    **Filters are hopgraph's, not Haystack's.** ``filter`` / ``filters`` take hopgraph's
    metadata filter, ``{"field": value or {"$op": value}}`` with ``$eq $ne $in $nin $gt $gte
    $lt $lte`` (e.g. ``{"year": {"$gte": 2020}, "lang": {"$in": ["en"]}}``), not Haystack's
    ``{"field": "meta.year", "operator": ">=", "value": 2020}`` syntax; filters given to
    :meth:`run` replace the constructor's (Haystack's "replace" filter policy).

    Output ``{"documents": [Document(id=passage id, content="title\\ntext", meta, score)]}``:
    ``content`` is what hopgraph indexes (the text alone when there is no title), ``meta`` the
    passage's own metadata plus ``id``, ``title``, ``score``, ``rank`` (1-based), ``method`` and
    ``why`` (the explanation in words, when the method gives one). A component made from a
    folder path serializes (``to_dict`` / ``Pipeline.dumps``); one made from an ``Index`` object
    cannot.
    """

    def __init__(
        self,
        index: IndexLike,
        method: str | None = None,
        k: int = 10,
        filter: dict[str, Any] | None = None,
        max_per_doc: int | None = None,
        **params: Any,
    ) -> None:
        self._searcher = Searcher(index, method, k, filter, params, max_per_doc)
        self._path = os.fspath(index) if isinstance(index, str | os.PathLike) else None
        self._method = method
        self.index = self._searcher.index
        self.k = self._searcher.k
        self.filter = self._searcher.filter

    @property
    def retriever(self) -> Any:
        """The hopgraph retriever this wraps."""
        return self._searcher.retriever

    @component.output_types(documents=list[Document])
    def run(
        self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None
    ) -> dict[str, list[Document]]:
        """The ``top_k`` (default: ``k``) best passages for ``query`` as Haystack documents;
        ``filters`` (hopgraph's syntax, see the class) replaces the constructor's ``filter``."""
        hits = self._searcher.search(
            query,
            k=self.k if top_k is None else top_k,
            filter=self.filter if filters is None else filters,
        )
        return {"documents": [to_document(hit) for hit in hits]}

    def to_dict(self) -> dict[str, Any]:
        """The component as a dictionary (only when it was made from an index folder)."""
        if self._path is None:
            raise SerializationError(
                "HopgraphRetriever made from an Index object cannot be serialized; "
                "make it from the index folder (index.save(path), then HopgraphRetriever(path))"
            )
        return default_to_dict(
            self,
            index=self._path,
            method=self._method,
            k=self.k,
            filter=self.filter,
            max_per_doc=self._searcher.max_per_doc,
            **self._searcher.params,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HopgraphRetriever:
        """The component :meth:`to_dict` describes (its index folder loaded again)."""
        return default_from_dict(cls, data)

    def __repr__(self) -> str:
        return f"HopgraphRetriever({self._searcher.describe()})"


def to_document(hit: Hit) -> Document:
    """One hit as a Haystack ``Document``."""
    return Document(id=hit.passage.id, content=hit.content, meta=hit.metadata(), score=hit.score)
