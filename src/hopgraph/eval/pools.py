"""Per-question pools: each question searches only the passages that share its pool value
(the tables of its own database in Spider and BIRD), one small index per pool."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from tqdm.auto import tqdm

from hopgraph.corpus import Dataset
from hopgraph.index import Index
from hopgraph.index.store import PartOptions


def pool_indexes(
    dataset: Dataset,
    key: str,
    parts: Sequence[str],
    options: PartOptions | None = None,
    progress: bool = True,
) -> Iterator[tuple[Dataset, Index]]:
    """``(sub-dataset, its index)`` for every value of ``metadata[key]`` that has questions."""
    pools = dataset.split_by(key)
    for sub in tqdm(pools.values(), desc=f"pools by {key}", unit="pool", disable=not progress):
        yield sub, Index.build(sub.corpus, parts, options, progress=False)
