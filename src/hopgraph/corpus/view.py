"""An updated corpus that holds only what changed: the rows kept of a base corpus (read from it
when asked, e.g. an index folder's passages file) and the passages added after them.

``Index.updated`` builds one instead of reading every passage into memory: replaying an update
on a 100k-passage index read and parsed all 100k JSON lines (1.4 s) although only the added
ones are new.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from hopgraph.corpus.passage import Corpus, Passage, positions_of


class ViewCorpus(Corpus):
    """Rows ``rows`` (increasing) of ``base``, then ``added``. A view of a view is flattened,
    so reading a passage never goes through more than one base."""

    def __init__(
        self,
        base: Corpus,
        rows: Sequence[int] | np.ndarray,
        added: Sequence[Passage],
        source: object | None = None,
    ):
        rows = np.asarray(rows, np.int64)
        added = list(added)
        ids = base.ids
        new_ids = [ids[r] for r in rows.tolist()] + [p.id for p in added]
        if isinstance(base, ViewCorpus):  # kept rows of its base, then kept added ones
            n_base = len(base.rows)
            old = rows[rows < n_base]
            added = [base.added[r - n_base] for r in rows[rows >= n_base].tolist()] + added
            rows, base = base.rows[old], base.base
        self.base, self.rows, self.added = base, rows, added
        self.source = source if source is not None else base.source
        self._ids = new_ids
        self._pos = positions_of(new_ids, self.source)

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1 or start >= stop:
                return [self[j] for j in range(start, stop, step)]
            kept = self.rows[start : min(stop, len(self.rows))]
            out: list[Passage] = []
            if len(kept):  # the base's rows between the first and last kept, read at once
                first = int(kept[0])
                chunk = self.base[first : int(kept[-1]) + 1]
                out = [chunk[r - first] for r in kept.tolist()]
            lo = max(start - len(self.rows), 0)
            return out + self.added[lo : max(stop - len(self.rows), 0)]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(f"passage row {i} out of range ({n} passages)")
        if i < len(self.rows):
            return self.base[int(self.rows[i])]
        return self.added[i - len(self.rows)]

    def texts(self, start: int, stop: int) -> list[str]:
        start, stop, _ = slice(start, stop).indices(len(self))
        if start >= stop:
            return []
        kept = self.rows[start : min(stop, len(self.rows))]
        out: list[str] = []
        if len(kept):  # the base's texts between the first and last kept, read at once
            first = int(kept[0])
            chunk = self.base.texts(first, int(kept[-1]) + 1)
            out = [chunk[r - first] for r in kept.tolist()]
        lo = max(start - len(self.rows), 0)
        return out + [p.text for p in self.added[lo : max(stop - len(self.rows), 0)]]

    def __iter__(self) -> Iterator[Passage]:
        # the kept rows in blocks of the base read in one go (rows increase)
        step = 4096
        rows = self.rows
        for lo in range(0, len(rows), step):
            block = rows[lo : lo + step]
            first, last = int(block[0]), int(block[-1])
            chunk = self.base[first : last + 1]
            yield from (chunk[r - first] for r in block.tolist())
        yield from self.added

    def get(self, pid: str) -> Passage:
        return self[self.position(pid)]

    @property
    def ids(self) -> list[str]:
        return list(self._ids)
