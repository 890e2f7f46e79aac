"""Staged builds: an index searchable as soon as its cheap parts exist, its passage vectors
filled in after, and the stage a folder is in.

Encoding the passage vectors is most of a large build (hours for 1M passages on two cores; the
sparse and entity parts take minutes). A staged build (``build_index(..., staged=)``,
:mod:`hopgraph.index.streaming`) runs in two stages over one work folder, ``<out>.partial``:

1. **searchable**: the segments and merges of every part but the deferred ones (``dense`` and
   any part built from it); the index is saved to ``out`` with ``"pending": {"parts": [...],
   "passages": N, "options": {part: options}}`` in its manifest (:func:`save_searchable`), and
   ``searchable.json`` in the work folder marks the stage done. The index loads and searches (a
   method that needs a deferred part says it is missing; the default encodes its top passages
   at query time with the pending dense part's model); writes are refused (:func:`writing`),
   since the next stage replaces the folder's index.
2. **complete**: the deferred parts' segments, batch by batch into ``vectors/<batch>/``
   (each batch kept: a stopped build resumes at the next), their merges, and the complete
   index committed as the next generation of ``out`` under the folder's writer lock, without
   ``pending`` (:func:`commit_complete`). It equals a build in one stage.

:func:`build_stage` says which stage a folder is in and how many passage vectors are encoded.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hopgraph.atomic import write_synced, writer_lock
from hopgraph.errors import BuildPendingError, ConfigError, IndexError_, PartialBuildError
from hopgraph.index.manifest import MANIFEST, read_manifest

if TYPE_CHECKING:  # the index imports this module
    from hopgraph.index.store import Index

STAGED_CHOICES = ("auto", "on", "off")
STAGED_MIN_PASSAGES = 50_000
"""``staged="auto"`` stages a build of the dense part from this many passages."""
DEFERRED = ("dense",)
"""The parts a staged build leaves for its second stage (with the parts built from them)."""
VECTORS = "vectors"  # the work folder's root of the deferred parts' segments
SEARCHABLE = "searchable.json"  # in the work folder: the first stage is saved to out
STAGES = "staged.json"  # in the work folder: whether the build runs in stages


def partial_folder(out: str | os.PathLike[str]) -> Path:
    """Where the build of the index ``out`` keeps its work until it is done."""
    out = Path(out).resolve()
    return out.with_name(out.name + ".partial")


def check_choice(staged: str) -> None:
    if staged not in STAGED_CHOICES:
        raise ConfigError(f"staged must be one of {list(STAGED_CHOICES)}, got {staged!r}")


def in_stages(
    staged: str, order: list[str], later: list[str], passages: int, out: Path, work: Path
) -> bool:
    """Whether the build in ``work`` of the parts ``order`` runs in stages, leaving ``later``
    (:func:`deferred_parts`) for the second; decided once, after the passages are read, and
    kept in the work folder, so that a resumed build goes on as it began.

    ``auto``: when some parts are deferred and some not, the corpus has at least
    :data:`STAGED_MIN_PASSAGES` passages, and ``out`` holds no index yet (a rebuild over one
    keeps the old index until the new one is complete). ``on``: whenever some parts are
    deferred and some not. ``off``: never. A resumed build given ``on`` or ``off`` against
    what it began with raises :class:`PartialBuildError`."""
    check_choice(staged)
    both = bool(later) and len(later) < len(order)
    if staged == "on" and not both:
        raise ConfigError(
            f"staged='on' builds the index searchable without {', '.join(DEFERRED)} first, "
            f"then adds it; the parts ({', '.join(order)}) "
            + ("have none" if not later else "have nothing else")
            + ": build them in one stage (staged='auto' or 'off')"
        )
    record = work / STAGES
    if record.exists():
        began = bool(json.loads(record.read_text())["staged"])
        if staged != "auto" and began != (staged == "on"):
            raise PartialBuildError(
                f"the partial build at {work} was started with staged="
                f"{'on' if began else 'off'}; resume it so (or with staged=auto), or remove "
                "that folder to start again"
            )
        return began
    if any((work / "segments").glob("[0-9]*")):  # begun before builds had stages
        decided = False
    elif staged == "auto":
        decided = both and passages >= STAGED_MIN_PASSAGES and not (out / MANIFEST).is_file()
    else:
        decided = staged == "on"
    write_synced(record, json.dumps({"staged": decided}))
    return decided


def deferred_parts(order: list[str], requires: Callable[[str], tuple[str, ...]]) -> list[str]:
    """The parts of ``order`` (dependencies first) left for the second stage: the
    :data:`DEFERRED` ones and every part built from one of them (``requires(name)``)."""
    later: list[str] = []
    for name in order:
        if name in DEFERRED or set(requires(name)) & set(later):
            later.append(name)
    return later


def save_searchable(
    index: Index, out: Path, later: list[str], work: Path, options: dict[str, Any] | None = None
) -> None:
    """Save the first stage's ``index`` (without the ``later`` parts) to ``out`` as an index
    whose manifest records them pending (with their ``options``, part → dict: a search can
    encode with the dense part's model before it exists), then mark the stage done in ``work``."""
    index.pending = {"parts": list(later), "passages": len(index), "options": options or {}}
    with writer_lock(out):
        index.save(out)
    write_synced(work / SEARCHABLE, json.dumps({"parts": sorted(index.parts)}))


def commit_complete(index: Index, out: Path) -> None:
    """Commit the complete ``index`` as the next generation of ``out`` (atomically, under the
    folder's writer lock), without ``pending``: servers following the folder load it."""
    with writer_lock(out):
        try:
            index.generation = int(read_manifest(out).get("generation", 0)) + 1
        except IndexError_:  # the searchable index was removed meanwhile
            index.generation = 1
        index.pending = None
        index.save(out)


# -- the stage of a folder ------------------------------------------------------------------
def build_stage(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """Where the index in ``folder`` is: ``stage`` ("searchable": a staged build has saved it
    without ``pending_parts``, the passage vectors; "complete"), ``vectors_done`` of
    ``vectors_total`` passage vectors encoded, and ``building``: whether a build's work folder
    (``<folder>.partial``) exists (running, or stopped and resumable)."""
    root = Path(folder).resolve()
    manifest = read_manifest(root)
    return stage_of(
        root, manifest.get("pending"), int(manifest["corpus"]["passages"]),
        "dense" in manifest.get("parts", {}),
    )  # fmt: skip


def stage_of(
    folder: Path, pending: dict[str, Any] | None, passages: int, has_dense: bool
) -> dict[str, Any]:
    """:func:`build_stage` of an index already read (``pending`` from its manifest)."""
    work = partial_folder(folder)
    if pending:
        total = int(pending.get("passages", passages))
        return {
            "stage": "searchable",
            "pending_parts": list(pending.get("parts", [])),
            "vectors_done": min(total, _vectors_done(work, total)),
            "vectors_total": total,
            "building": work.is_dir(),
        }
    total = passages if has_dense else 0
    return {
        "stage": "complete",
        "pending_parts": [],
        "vectors_done": total,
        "vectors_total": total,
        "building": work.is_dir(),
    }


def _vectors_done(work: Path, total: int) -> int:
    """Passages in the complete batches of the work folder's ``vectors/`` (a folder per batch
    of the plan's batch size, renamed into place when complete)."""
    try:
        size = int(json.loads((work / "plan.json").read_text())["batch_size"])
        names = [p.name for p in (work / VECTORS).iterdir() if p.name.isdigit()]
    except (OSError, ValueError, KeyError):
        return 0
    return sum(max(0, min(size, total - int(b) * size)) for b in names)


def describe_stage(stage: dict[str, Any], folder: str | os.PathLike[str] | None = None) -> str:
    """The stage in one line (``hopgraph info``, ``hopgraph serve``)."""
    if stage["stage"] == "complete":
        return "build stage: complete"
    done, total = stage["vectors_done"], stage["vectors_total"]
    share = f" ({100 * done / total:.0f} %)" if total else ""
    if stage["building"]:
        how = f"; {folder}.partial holds the build (a stopped one continues with --resume)"
    else:
        how = "; no build is under way (its work folder is gone: rebuild with --force)"
    return (
        f"build stage: searchable without {', '.join(stage['pending_parts'])}: passage vectors "
        f"{done:,} / {total:,} encoded{share}{how if folder is not None else ''}"
    )


# -- writes ---------------------------------------------------------------------------------
def writes_refused(stage: dict[str, Any]) -> str:
    """Why a write to an index in its searchable stage is refused."""
    return (
        f"this index is still being built: passage vectors {stage['vectors_done']:,} / "
        f"{stage['vectors_total']:,} encoded; writes open when the build completes (hopgraph "
        "index ... --resume continues a stopped build)"
    )


def check_writable(folder: str | os.PathLike[str]) -> None:
    """Raise :class:`BuildPendingError` when the index in ``folder`` is in its searchable stage
    (no index there: nothing to say; loading it will)."""
    try:
        stage = build_stage(folder)
    except IndexError_:
        return
    if stage["stage"] != "complete":
        raise BuildPendingError(writes_refused(stage))


@contextmanager
def writing(folder: str | os.PathLike[str]) -> Iterator[None]:
    """Hold ``folder``'s writer lock for a write (an update, a compaction, new parts), refused
    with :class:`BuildPendingError` while a staged build has not committed its complete index:
    where every write to an index folder starts."""
    with writer_lock(Path(folder).resolve()):
        check_writable(folder)
        yield
