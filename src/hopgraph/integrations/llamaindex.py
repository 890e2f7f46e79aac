"""hopgraph as a LlamaIndex retriever (``pip install 'hopgraph[llamaindex]'``).

A ``BaseRetriever`` returning ``NodeWithScore`` nodes that carry the passage id, title, score,
rank and, for the default method, the explanation in words::

    from hopgraph.integrations.llamaindex import HopgraphRetriever

    retriever = HopgraphRetriever("ix/", k=5)  # or an Index; method=None: the default
    nodes = retriever.retrieve("Who founded the shipyard that built SS Orrendale?")
    nodes[0].node.metadata["why"], nodes[0].score
"""

from __future__ import annotations

from typing import Any

from hopgraph.integrations._common import Hit, IndexLike, Searcher, missing_extra

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:  # pragma: no cover - exercised in a subprocess by the tests
    raise missing_extra("llamaindex", "llamaindex", "llama-index-core") from exc

# metadata hopgraph adds: kept on the node, left out of the text LLMs and embedders see
_OWN_KEYS = ["id", "title", "score", "rank", "method", "why"]


class HopgraphRetriever(BaseRetriever):
    """A LlamaIndex ``BaseRetriever`` over ``hopgraph.get_retriever(index, method, **params)``.

    ``index`` is a :class:`hopgraph.Index` or the folder of a saved one (loaded once);
    ``method`` None is the default method; ``k`` and ``filter`` (hopgraph's metadata filter,
    e.g. ``{"year": {"$gte": 2020}}``; not LlamaIndex's ``MetadataFilters``) apply to every
    search and may be changed on the object; ``max_per_doc`` caps the hits of one document
    (None: hopgraph's default, 0: no limit); every other keyword is a parameter of the method.

    Each hit is ``NodeWithScore(node=TextNode(id_=passage id, text=title and text, metadata),
    score)``: ``text`` is ``"title\\ntext"`` (what hopgraph indexes), ``metadata`` the passage's
    own metadata plus ``id``, ``title``, ``score``, ``rank`` (1-based), ``method`` and ``why``
    (the explanation in words, when the method gives one); those keys are excluded from the
    node's LLM and embedding text, so a prompt gets the passage and its own metadata only.
    """

    def __init__(
        self,
        index: IndexLike,
        method: str | None = None,
        k: int = 10,
        filter: dict[str, Any] | None = None,
        *,
        max_per_doc: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **params: Any,
    ) -> None:
        self._searcher = Searcher(index, method, k, filter, params, max_per_doc)
        self.index = self._searcher.index
        self.method = self._searcher.method
        self.k = self._searcher.k
        self.filter = self._searcher.filter
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @property
    def retriever(self) -> Any:
        """The hopgraph retriever this wraps."""
        return self._searcher.retriever

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = self._searcher.search(query_bundle.query_str, k=self.k, filter=self.filter)
        return [to_node(hit) for hit in hits]

    def __repr__(self) -> str:
        return f"HopgraphRetriever({self._searcher.describe()})"


def to_node(hit: Hit) -> NodeWithScore:
    """One hit as a LlamaIndex ``NodeWithScore``."""
    node = TextNode(
        id_=hit.passage.id,
        text=hit.content,
        metadata=hit.metadata(),
        excluded_llm_metadata_keys=list(_OWN_KEYS),
        excluded_embed_metadata_keys=list(_OWN_KEYS),
    )
    return NodeWithScore(node=node, score=hit.score)
