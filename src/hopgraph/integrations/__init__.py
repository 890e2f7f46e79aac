"""hopgraph as a retriever of other frameworks: thin adapters over :func:`hopgraph.get_retriever`.

===============================================  ====================================
``hopgraph.integrations.langchain``              ``pip install 'hopgraph[langchain]'``
``hopgraph.integrations.llamaindex``             ``pip install 'hopgraph[llamaindex]'``
``hopgraph.integrations.haystack``               ``pip install 'hopgraph[haystack]'``
``hopgraph.integrations.pyterrier``              ``pip install 'hopgraph[pyterrier]'``
===============================================  ====================================

Each module defines ``HopgraphRetriever(index, method=None, k=10, filter=None, **params)``:
``index`` is an :class:`hopgraph.Index` or the folder of a saved one (loaded once), ``method``
and ``params`` go to ``hopgraph.get_retriever(index, method, **params)`` (None: the default
method) and every search is ``retriever.search(query, k=k, filter=filter)``. A framework is
imported only by its own module, never by ``import hopgraph`` or this package.
"""
