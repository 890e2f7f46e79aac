"""Changes to an index folder made under its writer lock, so that a server serving the folder
(and any other writer) takes turns with them: ``hopgraph add``/``delete`` (:func:`update_folder`),
``hopgraph compact`` (:func:`compact_folder`) and ``hopgraph add-parts``
(:func:`add_parts_to_folder`). Each saves atomically, as a new generation of the folder, and
each is refused (:class:`~hopgraph.errors.BuildPendingError`, before any work) while the folder
holds the searchable stage of a staged build (:func:`hopgraph.index.staged.writing`)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hopgraph.corpus import Passage
from hopgraph.index.default_build import detected_options
from hopgraph.index.detect import describe_detected
from hopgraph.index.staged import writing
from hopgraph.index.store import Index, PartOptions

Folder = str | os.PathLike[str]


def update_folder(
    folder: Folder,
    *,
    add: Sequence[Passage],
    delete: Sequence[str],
    progress: bool = True,
    verify: bool = False,
) -> tuple[Index, Path]:
    """Add the passages ``add`` to the index in ``folder`` and delete the ids ``delete`` (every
    part updated in place), and save it; returns the new index and where it was saved.
    ``verify``: check every file's checksum when loading (else sizes only)."""
    with writing(folder):
        index = Index.load(folder, verify=verify)
        new = index.updated(add=list(add), delete=list(delete), progress=progress)
        path = new.save(folder)
    return new, path


def compact_folder(folder: Folder) -> tuple[Index, int, Path]:
    """Write the index in ``folder`` anew as one base, merging its deltas; returns the index,
    the number of deltas merged, and the folder."""
    with writing(folder):
        index = Index.load(folder)
        n = len(index.deltas or [])
        return index, n, index.compact()


@dataclass
class PartsAdded:
    """What :func:`add_parts_to_folder` did: the index, the parts built, and where it was saved;
    ``path`` is None (and ``built`` empty) when the index had every part asked for."""

    index: Index
    built: list[str] = field(default_factory=list)
    path: Path | None = None


def add_parts_to_folder(
    folder: Folder,
    parts: Iterable[str],
    options: PartOptions | None = None,
    *,
    detect: bool = True,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> PartsAdded:
    """Build the ``parts`` the index in ``folder`` lacks (with the parts they are built from,
    if missing too) and save it; parts it has are kept as they are, unless outdated
    (:attr:`~hopgraph.index.part.IndexPart.outdated`: built by an older version), then
    rebuilt. With ``detect``, the options the corpus decides are detected for the parts built,
    as :func:`~hopgraph.index.streaming.build_index` does (``options`` win), recorded in the
    index and described to ``log``."""
    say = log or (lambda _line: None)
    options = options or {}
    with writing(folder), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an outdated part's warning: it is rebuilt below
        index = Index.load(folder)
        missing = index.missing(parts)
        # parts it has that an older version built unlike this one reads them: rebuilt
        outdated = [n for n in parts if n in index.parts and index.parts[n].outdated]
        if not missing and not outdated:
            return PartsAdded(index)
        if detect:
            options, detected = detected_options(index.corpus, missing, options, have=index.parts)
            if detected:
                say(describe_detected(detected))
                index.detected = detected
        built = index.add_parts([*missing, *outdated], options, progress=progress)
        path = index.save(folder)
    return PartsAdded(index, built, path)
