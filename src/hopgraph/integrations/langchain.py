"""hopgraph as a LangChain retriever (``pip install 'hopgraph[langchain]'``).

A ``BaseRetriever`` whose documents carry the passage id, title, score, rank and, for the
default method, the explanation in words::

    from hopgraph.integrations.langchain import HopgraphRetriever

    retriever = HopgraphRetriever("ix/", k=5)  # or an Index; method=None: the default
    docs = retriever.invoke("Who founded the shipyard that built SS Orrendale?")
    docs[0].metadata["why"]  # "2-hop: question → ... → this page. lifted by: ..."
"""

from __future__ import annotations

from typing import Any

from hopgraph.integrations._common import Hit, IndexLike, Searcher, missing_extra

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables.config import run_in_executor
    from pydantic import Field, PrivateAttr
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise missing_extra("langchain", "langchain", "langchain-core") from exc

# BaseRetriever's own fields: given to LangChain, not to the hopgraph method
_LANGCHAIN_FIELDS = ("name", "tags", "metadata")


class HopgraphRetriever(BaseRetriever):
    """A LangChain ``BaseRetriever`` over ``hopgraph.get_retriever(index, method, **params)``.

    ``index`` is a :class:`hopgraph.Index` or the folder of a saved one (loaded once);
    ``method`` None is the default method; ``k`` and ``filter`` (hopgraph's metadata filter,
    e.g. ``{"year": {"$gte": 2020}}``) are the defaults of every search, and
    ``invoke(query, k=..., filter=...)`` replaces them for one call; ``max_per_doc`` caps the
    hits of one document (None: hopgraph's default, 0: no limit). ``name``, ``tags`` and
    ``metadata`` are LangChain's; every other keyword is a parameter of the method.

    Each hit is a ``Document`` with ``id`` = the passage id, ``page_content`` = title and text
    (``"title\\ntext"``, what hopgraph indexes; the text alone when there is no title), and
    ``metadata`` = the passage's own metadata plus ``id``, ``title``, ``score``, ``rank``
    (1-based), ``method`` and ``why`` (the explanation in words, when the method gives one,
    as the default method does); those keys win over passage metadata of the same name.
    """

    index: Any = Field(repr=False)
    """The :class:`hopgraph.Index` (a folder given here is loaded into one)."""
    method: str | None = None
    """The hopgraph method (resolved: ``None`` becomes the default method's name)."""
    k: int = 10
    filter: dict[str, Any] | None = None
    max_per_doc: int | None = None
    """At most this many hits of one document (None: hopgraph's default, 0: no limit)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Parameters of the method."""

    _searcher: Searcher = PrivateAttr()

    def __init__(
        self,
        index: IndexLike,
        method: str | None = None,
        k: int = 10,
        filter: dict[str, Any] | None = None,
        max_per_doc: int | None = None,
        **params: Any,
    ) -> None:
        own = {key: params.pop(key) for key in _LANGCHAIN_FIELDS if key in params}
        searcher = Searcher(index, method, k, filter, params, max_per_doc)
        super().__init__(
            index=searcher.index,
            method=searcher.method,
            k=searcher.k,
            filter=searcher.filter,
            max_per_doc=searcher.max_per_doc,
            params=searcher.params,
            **own,
        )
        self._searcher = searcher

    @property
    def retriever(self) -> Any:
        """The hopgraph retriever this wraps."""
        return self._searcher.retriever

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: dict[str, Any] | None = None,
    ) -> list[Document]:
        hits = self._searcher.search(
            query,
            k=self.k if k is None else k,
            filter=self.filter if filter is None else filter,
        )
        return [to_document(hit) for hit in hits]

    async def _aget_relevant_documents(
        self,
        query: str,
        *,
        run_manager: AsyncCallbackManagerForRetrieverRun,
        k: int | None = None,
        filter: dict[str, Any] | None = None,
    ) -> list[Document]:
        # the search is CPU work: in a thread, as LangChain's default does (with k and filter)
        return await run_in_executor(
            None,
            self._get_relevant_documents,
            query,
            run_manager=run_manager.get_sync(),
            k=k,
            filter=filter,
        )


def to_document(hit: Hit) -> Document:
    """One hit as a LangChain ``Document``."""
    return Document(id=hit.passage.id, page_content=hit.content, metadata=hit.metadata())
