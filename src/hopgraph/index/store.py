"""The :class:`Index`: a corpus plus named parts, built, updated live, saved atomically to a
folder and loaded by mmap.

Building and updating are here; the folder, its deltas and loading them back are
:mod:`hopgraph.index.folder` (:class:`~hopgraph.index.folder.IndexFolder`, a base of
:class:`Index`) and :mod:`hopgraph.index.deltas`. The names those modules and the registry took
from this one stay importable from here.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.config import make_options
from hopgraph.corpus import Corpus, Passage
from hopgraph.corpus.view import ViewCorpus
from hopgraph.errors import (
    ConfigError,
    DuplicateIdError,
    HopgraphError,
    UnknownIdError,
    UpdateError,
)
from hopgraph.gc_pause import gc_paused
from hopgraph.index.default_build import default_build
from hopgraph.index.deltas import Delta, DeltaPolicy
from hopgraph.index.folder import IndexFolder, manifest_digest
from hopgraph.index.manifest import MANIFEST, read_manifest
from hopgraph.index.part import Change, IndexPart
from hopgraph.index.registry import (
    PartOptions,
    available_parts,
    dependency_order,
    part_class,
    split_part_options,
)

__all__ = [  # what was defined here before the folder, deltas and registry modules held it
    "MANIFEST",
    "Delta",
    "DeltaPolicy",
    "Index",
    "PartOptions",
    "dependency_order",
    "manifest_digest",
    "missing_parts_message",
    "read_manifest",
    "split_part_options",
]


class Index(IndexFolder):
    """A corpus and its index parts. Row ``i`` of every part is ``corpus[i]``."""

    def __init__(self, corpus: Corpus, parts: dict[str, IndexPart] | None = None):
        self.corpus = corpus
        self.parts: dict[str, IndexPart] = dict(parts or {})
        self.build_seconds: dict[str, float] = {}
        self.update_seconds: dict[str, float] = {}  # of the last update, per part
        self.path: Path | None = None
        self.manifest_digest: str | None = None  # of the folder it was loaded from
        # updates since the build (in the manifest: every process serving the folder agrees)
        self.generation = 0
        # corpus settings detected when parts were built (hopgraph.index.detect), kept in the
        # manifest: what was detected and why
        self.detected: dict[str, Any] | None = None
        # how well each first-stage signal finds this corpus's passages, measured on
        # pseudo-queries (hopgraph.index.profile), kept in the manifest
        self.profile: dict[str, Any] | None = None
        # what reading a folder of documents did and left out (hopgraph.corpus.documents.folder:
        # documents, passages, boilerplate dropped and why), kept in the manifest
        self.reading: dict[str, Any] | None = None
        # the parts a staged build has still to add ({"parts": [...], "passages": n}; None when
        # complete, hopgraph.index.staged), kept in the manifest: writes are refused until then
        self.pending: dict[str, Any] | None = None
        # The updates since the base of the folder this index came from, in order (None: one
        # of them cannot be kept as a delta, so the next save writes the whole index); the
        # first `saved_deltas` are in that folder, whose manifest then had digest `origin[1]`.
        self.deltas: list[Delta] | None = []
        self.saved_deltas = 0
        self.origin: tuple[Path, str | None] | None = None
        self.base: dict[str, Any] | None = None  # the folder's base (generation, id)
        self.policy = DeltaPolicy()
        # the folder this index (or the one it was updated from) was loaded from without
        # checksums: a new base written from it checks them first (see save)
        self.unverified: Path | None = None

    # -- building -------------------------------------------------------------------------
    @classmethod
    def build(
        cls,
        corpus: Corpus,
        parts: Iterable[str] | None = None,
        options: PartOptions | None = None,
        *,
        progress: bool = True,
    ) -> Index:
        """Build the named parts over ``corpus``. ``options``: ``{part: {option: value}}``.

        Without ``parts``, the parts of the default method (``hopgraph.defaults.DEFAULT_PARTS``)
        with the options detected from the corpus's titles (``options`` win, option by option);
        the detection is kept in :attr:`detected` and in the saved manifest.
        """
        index = cls(corpus)
        if parts is None:
            parts, options, index.detected = default_build(corpus, options)
        index.add_parts(parts, options, progress=progress)
        return index

    def add_parts(
        self,
        names: Iterable[str],
        options: PartOptions | None = None,
        *,
        progress: bool = True,
        rebuild_changed: bool = False,
    ) -> list[str]:
        """Build the named parts this index does not have yet; returns the names built.

        A part that exists with other options than those given for it raises ConfigError, or is
        rebuilt when ``rebuild_changed``. A part given no options is kept as it is, unless a part
        it is built from is (re)built by this call: then it is rebuilt with its own options.
        """
        options = options or {}
        names = list(dict.fromkeys(names))
        unknown = set(options) - set(available_parts())
        if unknown:
            raise ConfigError(
                f"options given for unknown part(s) {sorted(unknown)}; parts: {available_parts()}"
            )
        if len(self.corpus) == 0:
            raise HopgraphError("cannot index an empty corpus")
        # Parts already here are visited too: one built from a part rebuilt now is stale and is
        # rebuilt with its own options (the corpus graph after a new dense model, ...).
        current = {n: asdict(p.options) for n, p in self.parts.items()}
        known = {**current, **options}
        built: list[str] = []
        for name in dependency_order(names + [n for n in self.parts if n not in names], known):
            cls = part_class(name)
            have = self.parts.get(name)
            given = options.get(name) if name in options or have is None else current[name]
            opts = make_options(cls.Options, given, what=f"part {name!r}")
            stale = bool(set(cls.requires_for(opts)) & set(built))
            stale = stale or bool(have is not None and have.outdated)  # an older version's
            if have is not None and not stale:
                if name not in options or have.options == opts:
                    continue
                if not rebuild_changed:
                    raise ConfigError(
                        f"the index already has a {name!r} part built with other options "
                        f"({asdict(have.options)}); build a new index for {asdict(opts)}"
                    )
            t0 = time.perf_counter()
            deps = {d: self.parts[d] for d in cls.requires_for(opts)}
            self.parts[name] = cls.build_from(self.corpus, opts, deps, progress=progress)
            self.build_seconds[name] = time.perf_counter() - t0
            built.append(name)
        if built:  # new parts are no delta: the next save writes the whole index
            self.deltas = None
            if {"sparse", "dense"} & set(built):
                self.profile = None  # measured again on the new parts
            self.refresh_profile(progress=progress)
        return built

    def refresh_profile(self, *, progress: bool = False) -> bool:
        """Measure :attr:`profile` (:func:`~hopgraph.index.profile.corpus_profile`) when the
        index has the sparse and dense parts and the profile is missing or stale (another dense
        model, or the passage count more than a tenth away from when it was measured); returns
        whether it was measured."""
        from hopgraph.index.profile import corpus_profile, describe_profile, is_stale

        if not is_stale(self.profile, self):
            return False
        t0 = time.perf_counter()
        self.profile = corpus_profile(self)  # no timing in it: the same corpus, the same bytes
        if progress:
            print(
                f"profile: {self.profile['queries']} pseudo-queries in "
                f"{time.perf_counter() - t0:.1f}s; {describe_profile(self.profile)}",
                file=sys.stderr,
            )
        return True

    # -- live updates ---------------------------------------------------------------------
    @gc_paused()
    def updated(
        self,
        add: Sequence[Passage] = (),
        delete: Iterable[str] = (),
        *,
        progress: bool = False,
        payloads: dict[str, dict[str, Any]] | None = None,
    ) -> Index:
        """A new index: this one without the passages ``delete`` and with ``add`` appended (in
        that order: an id both deleted and added is replaced). This index is not changed, so
        searches on it can go on meanwhile.

        Every part is updated from its stored per-passage contributions: only the added
        passages go through the models (tokenizer, encoder, NER, parser); global statistics
        (document frequencies, vocabularies, graphs) are recomputed from the contributions, so
        the result equals an index built from scratch on the final corpus. Raises
        :class:`DuplicateIdError` / :class:`UnknownIdError` (nothing is changed) on bad ids.
        """
        add = list(add)
        delete = list(dict.fromkeys(delete))
        unknown = [i for i in delete if i not in self.corpus]
        if unknown:
            raise UnknownIdError(unknown)
        for p in add:
            if not isinstance(p, Passage) or not isinstance(p.id, str) or not p.id:
                raise UpdateError(f"passages need a non-empty string id, got {p!r:.80}")
            if not isinstance(p.text, str) or not p.text.strip():
                raise UpdateError(f"passage {p.id!r} has empty text")
        # deleting an id and adding it again in one update replaces the passage
        taken = set(self.corpus.ids) - set(delete)
        seen: set[str] = set()
        dup = [p.id for p in add if p.id in taken or p.id in seen or seen.add(p.id)]
        if dup:
            raise DuplicateIdError(dup)
        gone = [self.corpus.position(i) for i in delete]
        alive = np.ones(len(self.corpus), bool)
        alive[gone] = False
        keep = np.flatnonzero(alive).astype(np.int64)
        if len(keep) + len(add) == 0:
            raise UpdateError("the update would leave the index empty; keep at least one passage")
        corpus = ViewCorpus(self.corpus, keep, add, source=self.corpus.source)
        out = Index(corpus)
        out.detected = self.detected
        out.profile = self.profile
        out.reading = self.reading
        out.pending = self.pending
        out.generation = self.generation + 1
        out.origin, out.saved_deltas, out.base = self.origin, self.saved_deltas, self.base
        out.policy, out.unverified = self.policy, self.unverified
        if not add and not delete:
            out.parts = dict(self.parts)
            out.deltas = None if self.deltas is None else [*self.deltas]
            if out.deltas is not None:
                out.deltas.append(Delta(out.generation, [], [], {}))
            return out
        change = Change(self.corpus, corpus, keep, len(add))
        order = dependency_order(
            list(self.parts), {n: asdict(p.options) for n, p in self.parts.items()}
        )
        kept: dict[str, dict[str, Any]] | None = {}
        for name in order:
            part = self.parts[name]
            deps = {d: out.parts[d] for d in part.requires_for(part.options)}
            old_deps = {d: self.parts[d] for d in part.requires_for(part.options)}
            t0 = time.perf_counter()
            if payloads is not None:  # replaying a committed delta
                new = part.replay(change, deps, old_deps, payloads.get(name, {}))
            else:
                new = part.update(change, deps, old_deps, progress=progress)
            out.parts[name] = new
            out.build_seconds[name] = self.build_seconds.get(name, 0.0)
            out.update_seconds[name] = time.perf_counter() - t0
            if kept is not None and new.replayable and new.payload is not None:
                kept[name] = new.payload
            else:
                kept = None
        if payloads is None:  # a replay on load keeps the profile its writer saved
            out.refresh_profile()  # only when the update moved the size by more than a tenth
        if self.deltas is None or kept is None:
            out.deltas = None
        else:
            out.deltas = [*self.deltas, Delta(out.generation, add, delete, kept)]
        return out

    def add(self, passages: Sequence[Passage], *, progress: bool = False) -> None:
        """Append ``passages`` to this index in place (see :meth:`updated`)."""
        self._become(self.updated(add=passages, progress=progress))

    def delete(self, ids: Iterable[str], *, progress: bool = False) -> None:
        """Remove the passages ``ids`` from this index in place (see :meth:`updated`)."""
        self._become(self.updated(delete=ids, progress=progress))

    def _become(self, other: Index) -> None:
        self.corpus, self.parts = other.corpus, other.parts
        self.update_seconds, self.profile = other.update_seconds, other.profile
        self.generation, self.deltas = other.generation, other.deltas

    # -- access ---------------------------------------------------------------------------
    def has(self, name: str) -> bool:
        return name in self.parts

    def part(self, name: str) -> Any:
        try:
            return self.parts[name]
        except KeyError:
            raise ConfigError(missing_parts_message(self, [name])) from None

    def missing(self, names: Iterable[str]) -> list[str]:
        """The parts of ``names`` this index lacks, in order."""
        return [n for n in dict.fromkeys(names) if n not in self.parts]

    def __len__(self) -> int:
        return len(self.corpus)

    def info(self) -> dict[str, Any]:
        return {
            "path": str(self.path) if self.path else None,
            "passages": len(self.corpus),
            # the analyzer's language (sparse.language: detected at build, or --set language=)
            "language": self.part("sparse").options.language if self.has("sparse") else None,
            "detected": self.detected,
            "profile": self.profile,
            "reading": self.reading,
            "pending": self.pending,
            "parts": {
                n: {
                    "options": asdict(p.options),
                    "stats": p.stats(),
                    "build_seconds": self.build_seconds.get(n),
                    "update_seconds": self.update_seconds.get(n),  # of the last update
                    **({"outdated": p.outdated} if p.outdated else {}),
                }
                for n, p in self.parts.items()
            },
        }


def missing_parts_message(
    index: Index, missing: Sequence[str], method: str | None = None, also: Sequence[str] = ()
) -> str:
    """Why ``index`` cannot serve a request needing the parts ``missing``, and the command that
    adds them (``hopgraph add-parts``, naming the index folder when it has one) with ``also``,
    parts the method uses where present that the index lacks too."""
    have = ", ".join(sorted(index.parts)) or "none"
    folder = shlex.quote(str(index.path)) if index.path else "INDEX_DIR"
    names = ", ".join(repr(m) for m in missing)
    one = len(missing) == 1
    noun = "part" if one else "parts"
    problem = f"this index has no {names} {noun}"
    if method:
        problem = f"method {method!r} needs more index parts: {problem}"
    building = (index.pending or {}).get("parts", [])
    if set(missing) <= set(building):  # a staged build adds them: no command to give
        return (
            f"{problem} yet (it has: {have}): the build is still encoding its passage vectors "
            f"(`hopgraph info {folder}` shows how far); {'it comes' if one else 'they come'} "
            "with the complete index"
        )
    extra = [a for a in also if a not in missing]
    with_also = f" (with {', '.join(extra)}, which it ranks better with)" if extra else ""
    add = sorted({*missing, *extra}) if extra else list(missing)  # (with them: in name order)
    return (
        f"{problem} (it has: {have}); add {'it' if one else 'them'}{with_also} with "
        f"`hopgraph add-parts {folder} --parts {','.join(add)}`"
    )
