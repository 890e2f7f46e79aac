"""LangChain's own standard retriever tests (``langchain-tests``), subclassed the documented
way, over ``hopgraph.integrations.langchain.HopgraphRetriever`` in three setups: the default
method from an index folder, ``bm25`` on an ``Index``, ``rrf`` with no ``k``. The tests are
LangChain's, not ours: none is overridden (their ``test_no_overrides_DO_NOT_OVERRIDE`` checks)."""

from __future__ import annotations

from typing import Any

import pytest

from hopgraph.corpus import load_corpus
from hopgraph.data import demo_dataset_path
from hopgraph.index import Index

pytest.importorskip("langchain_core")
standard = pytest.importorskip("langchain_tests.integration_tests")

from hopgraph.integrations.langchain import HopgraphRetriever  # noqa: E402

pytestmark = pytest.mark.anyio
QUERY = "Which city is the capital of the country where the Eiffel Tower stands?"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(scope="module")
def default_folder(tmp_path_factory):
    """The default method's parts over the demo corpus, saved (as `hopgraph index` does)."""
    folder = tmp_path_factory.mktemp("langchain") / "index"
    Index.build(load_corpus(demo_dataset_path()), progress=False).save(folder)
    return folder


class _Setup(standard.RetrieversIntegrationTests):
    params: dict[str, Any] = {}

    @property
    def retriever_constructor(self) -> type[HopgraphRetriever]:
        return HopgraphRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return self.params

    @property
    def retriever_query_example(self) -> str:
        return QUERY


class TestDefaultFromAFolder(_Setup):
    @pytest.fixture(autouse=True)
    def _index(self, default_folder):
        self.params = {"index": str(default_folder)}


class TestBm25OnAnIndex(_Setup):
    @pytest.fixture(autouse=True)
    def _index(self, default_folder):
        self.params = {"index": Index.load(default_folder), "method": "bm25", "k": 4}


class TestRrfWithoutK(_Setup):
    @pytest.fixture(autouse=True)
    def _index(self, default_folder):
        self.params = {"index": Index.load(default_folder), "method": "rrf"}
