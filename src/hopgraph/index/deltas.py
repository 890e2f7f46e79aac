"""Updates as an index folder keeps them: what one delta holds, when the deltas are compacted
into a new base, and several deltas replayed as one change (see :mod:`hopgraph.index.folder`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hopgraph.corpus import Passage
from hopgraph.index.part import ReplayStep

if TYPE_CHECKING:  # the index imports this module
    from hopgraph.index.store import Index


@dataclass(frozen=True)
class Delta:
    """One update as a folder keeps it: what came, what went, and what the models computed."""

    generation: int
    add: list[Passage]
    delete: list[str]
    payloads: dict[str, dict[str, Any]]  # part name → IndexPart.payload


@dataclass(frozen=True)
class DeltaPolicy:
    """When a save compacts (writes a new base) instead of committing a delta: once the deltas
    number ``max_deltas``, or hold more added + deleted passages than ``max_share`` of the
    index and at least ``min_rows`` (small indexes are cheap to rewrite either way). Two tiers,
    base and deltas: a delta is never merged into another, only all of them into a new base."""

    max_deltas: int = 16
    max_share: float = 0.10
    min_rows: int = 1000

    def compacts(self, deltas: Sequence[Delta], passages: int) -> bool:
        rows = sum(len(d.add) + len(d.delete) for d in deltas)
        return len(deltas) > self.max_deltas or rows > max(self.max_share * passages, self.min_rows)


def replayed_at_once(index: Index, deltas: list[Delta]) -> Index | None:
    """``deltas`` replayed on ``index`` as one change (one re-assembly of every part instead
    of one a delta: at a million passages each costs seconds), or None when a part cannot
    combine them. The ids are followed through the deltas to find which rows survive where;
    each part combines its payloads
    (:meth:`~hopgraph.index.part.IndexPart.combined_payload`); the result equals replaying
    them one by one (tested)."""
    real = [d for d in deltas if d.add or d.delete]  # an empty update leaves no payload
    if len(real) < 2:
        return None
    n0 = len(index.corpus)
    tags = np.arange(n0, dtype=np.int64)  # current row → tag (base rows, then each added)
    latest: dict[str, int] = {}  # id → tag of an added passage
    added: list[Passage] = []
    per_step: list[tuple[np.ndarray, int]] = []
    for d in real:
        at = np.full(n0 + len(added), -1, np.int64)
        at[tags] = np.arange(len(tags))
        gone = [latest[i] if i in latest else index.corpus.position(i) for i in d.delete]
        alive = np.ones(len(tags), bool)
        alive[at[np.asarray(gone, np.int64)]] = False
        kept = int(alive.sum())
        new = np.arange(n0 + len(added), n0 + len(added) + len(d.add), dtype=np.int64)
        for p, t in zip(d.add, new.tolist(), strict=True):
            latest[p.id] = t
        added += d.add
        tags = np.concatenate([tags[alive], new])
        per_step.append((tags, kept))
    final = np.full(n0 + len(added), -1, np.int64)
    final[tags] = np.arange(len(tags))
    base_kept = int((tags < n0).sum())
    steps = {
        name: [ReplayStep(d.payloads.get(name, {}), final[t], k)
               for d, (t, k) in zip(real, per_step, strict=True)]
        for name in index.parts
    }  # fmt: skip
    payloads = {}
    for name, part in index.parts.items():
        combined = type(part).combined_payload(steps[name], base_kept)
        if combined is None:
            return None
        payloads[name] = combined
    alive_base = np.zeros(n0, bool)
    alive_base[tags[tags < n0]] = True
    ids = index.corpus.ids
    delete = [ids[r] for r in np.flatnonzero(~alive_base).tolist()]
    add = [added[t - n0] for t in tags[tags >= n0].tolist()]
    out = index.updated(add=add, delete=delete, payloads=payloads)
    out.generation = deltas[-1].generation
    if index.deltas is not None and out.deltas is not None:  # each delta, as committed
        out.deltas = [*index.deltas, *deltas]
    return out
