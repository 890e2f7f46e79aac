"""From each passage's entity mentions to the ``entities`` part's matrix: mentions counted per
normalised key (:func:`raw_mentions`), then linked to the title aliases, each titled passage's own
page added, filtered by length and frequency and numbered by name (:func:`entity_matrix`).

Building and live updates of :class:`~hopgraph.index.entities.EntityPart` both go through here,
from the stored per-passage mentions, which makes an updated part equal to a rebuilt one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from hopgraph.text.ner import normalize_entity


def entity_matrix(
    n: int,
    o: Any,
    raw: sp.csr_matrix,
    raw_keys: list[str],
    aliases: dict[str, str],
    titles: list[tuple[str, str, str]] | None,
    found: tuple[sp.csr_matrix, list[str]] | None,
) -> tuple[list[str], sp.csr_matrix, sp.csr_matrix | None]:
    """``(names, mentions, owns)`` of ``n`` passages: the kept entities sorted by name, the
    passages × entities counts, and which entity is each passage's own page (with aliases).

    ``o``: the part's :class:`~hopgraph.index.entities.EntityOptions`; ``raw[d, j]``: mentions
    of ``raw_keys[j]`` in passage d (normalised, before aliasing and filtering); ``aliases``:
    the title aliases (``{}``: none) and ``titles`` the passages' title keys they were made from;
    ``found``: the title aliases found in each passage's text, when the part looks for them.
    """
    keys: dict[str, int] = {}  # canonical entity → provisional column
    to_col = np.asarray(
        [keys.setdefault(aliases.get(k, k), len(keys)) for k in raw_keys], dtype=np.int64
    )
    own_rows: list[int] = []
    own_cols: list[int] = []
    if aliases and titles is not None:
        for i, (_, alias, _) in enumerate(titles):
            own = aliases.get(alias)
            if own:
                own_rows.append(i)
                own_cols.append(keys.setdefault(own, len(keys)))
    found_matrix = None
    if found is not None:  # title aliases found in the texts, whatever the NER saw
        fm = sp.csr_matrix(found[0])
        fcols = np.asarray([keys.setdefault(k, len(keys)) for k in found[1]], np.int64)
        found_matrix = (fm.data.astype(np.float32), fcols[fm.indices], fm.indptr)
    rows = np.concatenate([np.repeat(np.arange(n), np.diff(raw.indptr)), own_rows])
    cols = np.concatenate([to_col[raw.indices], np.asarray(own_cols, np.int64)])
    vals = np.concatenate([raw.data.astype(np.float32), np.ones(len(own_rows), np.float32)])
    counts = sp.csr_matrix(
        (vals, (rows.astype(np.int64), cols.astype(np.int64))), shape=(n, len(keys))
    )
    counts.sum_duplicates()
    if found_matrix is not None and len(found_matrix[0]):
        # a mention the NER saw too is not counted twice
        counts = sp.csr_matrix(counts.maximum(sp.csr_matrix(found_matrix, shape=(n, len(keys)))))
    df = np.bincount(counts.indices, minlength=len(keys))
    names_all = list(keys)
    lengths = np.fromiter((len(e) for e in names_all), dtype=np.int64, count=len(names_all))
    ok = (lengths >= o.min_entity_len) & (df >= o.min_entity_df)
    ok &= df <= o.max_entity_df_ratio * n
    # columns sorted by name, so the same corpus always gives the same ids
    kept = sorted(np.flatnonzero(ok).tolist(), key=names_all.__getitem__)
    names = [names_all[j] for j in kept]
    mentions = sp.csr_matrix(counts[:, kept])
    mentions.sort_indices()
    owns = None
    if aliases:
        owned = sp.csr_matrix(
            (np.ones(len(own_rows), np.float32), (own_rows, own_cols)), shape=(n, len(keys))
        )
        owns = sp.csr_matrix(owned[:, kept])
        owns.data[:] = 1.0
        owns.sort_indices()
    return names, mentions, owns


# lowercase words inside names, where the regex NER splits them ("Ermengarde of Tours")
_CONNECTORS = frozenset(
    "of the and de del della di da du des la le les von van der den y e al el bin ibn on in at "
    "for to a an".split()
)


def raw_mentions(
    mentions: list[list[str]], mode: str, keys: list[str] | None = None
) -> tuple[sp.csr_matrix, list[str]]:
    """Counts of each passage's normalised mentions, and the keys (``keys`` extended)."""
    keys = list(keys or [])
    ids = {k: i for i, k in enumerate(keys)}
    memo: dict[str, int] = {}  # raw mention → column (mentions repeat a lot)
    rows: list[int] = []
    cols: list[int] = []
    for i, found in enumerate(mentions):
        for m in found:
            j = memo.get(m)
            if j is None:
                k = normalize_entity(m, mode)
                j = memo[m] = ids.setdefault(k, len(ids))
                if j == len(keys):
                    keys.append(k)
            cols.append(j)
        rows.extend([i] * len(found))
    counts = sp.csr_matrix(
        (np.ones(len(rows), np.float32), (np.asarray(rows, np.int64), np.asarray(cols, np.int64))),
        shape=(len(mentions), len(keys)),
    )
    counts.sum_duplicates()
    return counts, keys
