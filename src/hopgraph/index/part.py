"""The interface every index part implements, and what parts share to store and update rows.

A part is built from a :class:`~hopgraph.corpus.Corpus` (row ``i`` = passage ``i``), saves itself
as plain files in its own folder, and loads them back (memory-mapped where it can). Parts plug in
by subclassing :class:`IndexPart`; :mod:`hopgraph.index.registry` lists the built-in ones and
finds parts by name (:func:`~hopgraph.index.registry.register_part` adds one of one's own); the
index, its manifest and the CLI need no change. This module imports no part.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from hopgraph.corpus import Corpus, Passage
from hopgraph.index.npy import save_array


@dataclass(frozen=True)
class ReplayStep:
    """One committed delta among several replayed as one change: its part's ``payload``,
    where each row of the corpus after it ends up after the last (``to_final``, −1: deleted
    later), and how many of its rows were kept (``n_keep``; its added passages follow)."""

    payload: dict[str, Any]
    to_final: np.ndarray
    n_keep: int

    def added_survivors(self) -> np.ndarray:
        """Which of this delta's added passages are still there after the last delta."""
        return self.to_final[self.n_keep :] >= 0


@dataclass(frozen=True)
class Change:
    """One live update of the corpus: ``new`` is the rows ``keep`` of ``old`` (in order), then
    ``added`` new passages. Row ``i`` of an updated part is ``new[i]``."""

    old: Corpus
    new: Corpus
    keep: np.ndarray  # old rows kept, increasing
    added: int

    @property
    def added_passages(self) -> list[Passage]:
        return [self.new[i] for i in range(len(self.keep), len(self.new))]

    def old_to_new(self) -> np.ndarray:
        """New row of each old row (-1: deleted); made once per change (several parts ask for
        it, an O(n) array), read-only."""
        out = self.__dict__.get("_old_to_new")
        if out is None:
            out = np.full(len(self.old), -1, np.int64)
            out[self.keep] = np.arange(len(self.keep))
            out.setflags(write=False)
            object.__setattr__(self, "_old_to_new", out)  # a frozen dataclass: cache by hand
        return out


def merge_records(records: Iterable[tuple[Any, list[str]]]) -> tuple[Any, list[str]]:
    """Per-passage records of consecutive batches of passages, each a (passages × keys) sparse
    matrix with its own keys, as one matrix over the union of the keys. Keys are numbered in
    order of first appearance, batch after batch: the numbering one pass over all passages
    gives, so merged records equal records computed in one go."""
    import scipy.sparse as sp

    ids: dict[str, int] = {}
    blocks = []
    for matrix, keys in records:
        m = sp.csr_matrix(matrix)
        remap = np.fromiter((ids.setdefault(k, len(ids)) for k in keys), np.int64, len(keys))
        blocks.append((m.data, remap[m.indices], m.indptr, m.shape[0]))
    data = np.concatenate([b[0] for b in blocks])
    indices = np.concatenate([b[1] for b in blocks])
    indptr = [np.zeros(1, np.int64)]
    end = 0
    for b in blocks:
        indptr.append(b[2][1:].astype(np.int64) + end)
        end += int(b[2][-1])
    # the index types and sorted rows scipy gives a matrix built in one go, so that merged
    # records are saved byte for byte as those are
    small = max(len(data), len(ids)) < 2**31
    dtype = np.int32 if small else np.int64
    merged = sp.csr_matrix(
        (data, indices.astype(dtype), np.concatenate(indptr).astype(dtype)),
        shape=(sum(b[3] for b in blocks), len(ids)),
    )
    merged.sort_indices()
    return merged, list(ids)


def save_records(folder: Path, name: str, matrix: Any, keys: list[str]) -> None:
    """Write a (passages × keys) sparse matrix and its keys as ``name.*`` files in ``folder``."""
    import json

    import scipy.sparse as sp

    m = sp.csr_matrix(matrix)
    save_array(folder / f"{name}.indptr.npy", m.indptr)
    save_array(folder / f"{name}.indices.npy", m.indices)
    save_array(folder / f"{name}.data.npy", m.data)
    (folder / f"{name}.keys.json").write_text(json.dumps(keys, ensure_ascii=False))


def load_records(folder: Path, name: str) -> tuple[Any, list[str]]:
    """What :func:`save_records` wrote."""
    import json

    import scipy.sparse as sp

    keys = json.loads((folder / f"{name}.keys.json").read_text())
    indptr = np.load(folder / f"{name}.indptr.npy")
    m = sp.csr_matrix(
        (np.load(folder / f"{name}.data.npy"), np.load(folder / f"{name}.indices.npy"), indptr),
        shape=(len(indptr) - 1, len(keys)),
    )
    return m, keys


def stack_records(old: Any, keep: np.ndarray, new: Any, keys: list[str]) -> tuple[Any, list[str]]:
    """Per-passage records (a passages × keys sparse matrix) after an update: the kept rows of
    ``old``, then ``new`` (whose columns extend ``old``'s to ``keys``); keys no passage has any
    more are dropped."""
    import scipy.sparse as sp

    kept = sp.csr_matrix(old)[keep]
    kept.resize((kept.shape[0], len(keys)))
    raw = sp.csr_matrix(sp.vstack([kept, new]))
    used = np.flatnonzero(np.bincount(raw.indices, minlength=len(keys)))
    return sp.csr_matrix(raw[:, used]), [keys[j] for j in used.tolist()]


class IndexPart(ABC):
    """One named part of an index (``sparse``, ``dense``, ...)."""

    name: ClassVar[str]
    Options: ClassVar[type]  # dataclass of build options, see hopgraph.config
    requires: ClassVar[tuple[str, ...]] = ()

    def __init__(self, options: Any):
        self.options = options

    @property
    def outdated(self) -> str:
        """Why the part no longer matches what reads it (built by an older version), or ""."""
        return ""

    @classmethod
    @abstractmethod
    def build(cls, corpus: Corpus, options: Any, *, progress: bool = True) -> IndexPart:
        """Compute the part for every passage of ``corpus``."""

    @classmethod
    def requires_for(cls, options: Any) -> tuple[str, ...]:
        """The parts this part is built from with ``options`` (by default ``requires``)."""
        return cls.requires

    @classmethod
    def build_from(
        cls, corpus: Corpus, options: Any, parts: dict[str, IndexPart], *, progress: bool = True
    ) -> IndexPart:
        """Build from the corpus and the parts named by :meth:`requires_for` (already built).
        Parts computed from the corpus alone need not override this."""
        return cls.build(corpus, options, progress=progress)

    # -- streaming builds: segments ------------------------------------------------------
    # A part that can be built in batches splits its build in two: the per-passage work (the
    # models: tokeniser, encoder, NER), written for one batch of passages at a time into a
    # segment folder, and the global assembly (vocabularies, document frequencies, aliases),
    # done once over the segments of all batches. hopgraph.index.streaming drives them.
    segmentable: ClassVar[bool] = False

    @classmethod
    def segment_context(cls, corpus: Corpus, options: Any) -> Any:
        """What every batch needs from the whole corpus (computed once, given to
        :meth:`write_segment`; the entities part's title aliases). None by default."""
        return None

    @classmethod
    def write_segment(
        cls,
        passages: Corpus,
        options: Any,
        folder: Path,
        context: Any = None,
        *,
        on_progress: Callable[[int], None] | None = None,
    ) -> None:
        """Do the per-passage work for ``passages`` (one batch) and write it into ``folder``
        (which exists and is empty); ``context`` is :meth:`segment_context`'s. A part whose
        work is slow calls ``on_progress`` (when given) with how many of ``passages`` it has
        done so far, so that a build's progress bar moves within the batch."""
        raise NotImplementedError(f"the {cls.name!r} part is not built in segments")

    @classmethod
    def from_segments(
        cls,
        corpus: Corpus,
        options: Any,
        folders: list[Path],
        parts: dict[str, IndexPart],
        *,
        progress: bool = False,
    ) -> IndexPart:
        """The part over ``corpus``, whose consecutive batches of passages ``folders`` hold the
        segments of (written by :meth:`write_segment`): equal to :meth:`build_from`."""
        raise NotImplementedError(f"the {cls.name!r} part is not built in segments")

    def update(
        self,
        change: Change,
        parts: dict[str, IndexPart],
        old_parts: dict[str, IndexPart],
        *,
        progress: bool = False,
    ) -> IndexPart:
        """This part for ``change.new``, as a new object (``self`` is not changed).

        ``parts`` are the updated parts named by :meth:`requires_for`, ``old_parts`` the same
        parts before the update. Only the added passages may go through models; the result must
        equal :meth:`build_from` on ``change.new``.
        """
        from hopgraph.errors import NotUpdatableError

        raise NotUpdatableError(
            f"the {self.name!r} part cannot be updated in place; rebuild the index instead"
        )

    # -- commits that write only what changed ----------------------------------------------
    # A replayable part's update() leaves in ``payload`` what its models computed for the
    # change (vectors, NER mentions: small, JSON or arrays); replay() redoes the update from it
    # without the models. An index folder then keeps a change as a delta (the added passages,
    # the deleted ids and the payloads) instead of rewriting the parts; loading replays it.
    replayable: ClassVar[bool] = False
    payload: dict[str, Any] | None = None

    def replay(
        self,
        change: Change,
        parts: dict[str, IndexPart],
        old_parts: dict[str, IndexPart],
        payload: dict[str, Any],
    ) -> IndexPart:
        """:meth:`update` from the ``payload`` an update of the same change left (equal to it)."""
        raise NotImplementedError(f"the {self.name!r} part cannot replay an update")

    @classmethod
    def combined_payload(
        cls, steps: Sequence[ReplayStep], n_base_kept: int
    ) -> dict[str, Any] | None:
        """One payload that replays ``steps`` (consecutive deltas) as a single change from the
        rows before the first (``n_base_kept`` of them kept) to the rows after the last, with
        the same result as replaying them one by one; None when this part cannot (they are
        then replayed one by one, each a whole re-assembly)."""
        return None

    def compacted(self) -> IndexPart:
        """This part as a fresh build would lay it out (what updates kept aside is merged)."""
        return self

    @abstractmethod
    def save(self, folder: Path) -> None:
        """Write the part's files into ``folder`` (which exists and is empty)."""

    @classmethod
    @abstractmethod
    def load(cls, folder: Path, options: Any, *, mmap: bool = True) -> IndexPart:
        """Read a part written by :meth:`save`."""

    def stats(self) -> dict[str, Any]:
        """Counts and sizes recorded in the manifest."""
        return {}


def save_payload(folder: Path, payload: dict[str, Any]) -> None:
    """Write a replay payload: arrays as ``.npy``, anything else as JSON."""
    import json

    for key, value in payload.items():
        if isinstance(value, np.ndarray):
            save_array(folder / f"{key}.npy", value)
        else:
            (folder / f"{key}.json").write_text(json.dumps(value, ensure_ascii=False))


def load_payload(folder: Path) -> dict[str, Any]:
    """What :func:`save_payload` wrote."""
    import json

    out: dict[str, Any] = {}
    for path in sorted(folder.iterdir()):
        if path.suffix == ".npy":
            out[path.stem] = np.load(path)
        elif path.suffix == ".json":
            out[path.stem] = json.loads(path.read_text())
    return out
