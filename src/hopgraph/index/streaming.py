"""Streaming, resumable index builds: batches of passages in, segments out, one merge.

``build_index(source, out)`` builds an index of a corpus of any size in bounded memory:

1. **passages**: the corpus is read as a stream (:func:`hopgraph.corpus.iter_corpus`) into
   ``<out>.partial/passages.jsonl`` with a table of line offsets; from then on the passages are
   a :class:`~hopgraph.corpus.filecorpus.FileCorpus` (read on demand, never held as objects).
2. **segments**: batch after batch, every part that can be built in segments
   (:attr:`IndexPart.segmentable`: sparse, dense, entities) does its per-passage work (tokeniser,
   encoder, NER) and writes it into ``segments/<batch>/<part>/``; a segment folder is written
   under a temporary name and renamed when complete, so it is there whole or not at all.
3. **merge**: each part assembles its global structures (vocabulary, BM25 weights, aliases,
   document frequencies) from the segments, exactly as a build over the whole corpus would;
   parts that are not built in segments are then built from the merged ones. Each merged part
   is saved to ``merged/<part>/`` at once and read back memory-mapped, so the next merge has
   the memory to itself (and a build stopped here resumes at the next part). The index is
   saved to ``out`` (atomically) and the partial folder removed.

A **staged** build (``staged=``, by default large builds of the dense part: see
:mod:`hopgraph.index.staged`) runs 2 and 3 twice: first for every part but ``dense`` (and the
parts built from it), saved to ``out`` as an index that searches while its manifest records
the passage vectors pending; then the dense segments (``vectors/<batch>/dense/``), their merge,
and the complete index committed as the next generation of ``out``. A build stopped in either
stage resumes where it stopped, never redoing the first.

A build killed at any point (Ctrl-C, SIGKILL, a power cut) resumes with ``resume=True``
(``hopgraph index ... --resume``) from its last complete batch, and gives the same index as an
uninterrupted build: batches are fixed by the plan (``plan.json``: source, parts, options,
batch size), which a resumed build must match.

A build does not start over an index, or a folder holding anything else, unless told to
(``overwrite=True``, ``hopgraph index --force``); the folder is replaced only once the new
index is complete (a staged build's: searchable). Progress: a bar counts the passages read,
then one the passages indexed, moved within a batch as the parts report their work (the
encoder, batch by batch).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from hopgraph import heap
from hopgraph.atomic import fsync_dir, fsync_tree, recover_folder, write_synced
from hopgraph.config import make_options
from hopgraph.corpus import SkippedPassages, iter_corpus
from hopgraph.corpus.documents.folder import describe_report, new_report
from hopgraph.corpus.filecorpus import FileCorpus, write_passages
from hopgraph.errors import CorpusError, HopgraphError, OutputExistsError, PartialBuildError
from hopgraph.index.batches import BuildJob, EngineOptions, segment_folders, segments_stage
from hopgraph.index.default_build import DEFAULT_PARTS, default_parts, detected_options
from hopgraph.index.dense import passage_encoder_note
from hopgraph.index.detect import describe_detected
from hopgraph.index.manifest import MANIFEST
from hopgraph.index.registry import PartOptions, dependency_order, part_class
from hopgraph.index.staged import (
    SEARCHABLE,
    VECTORS,
    check_choice,
    commit_complete,
    deferred_parts,
    in_stages,
    partial_folder,
    save_searchable,
)
from hopgraph.index.store import Index

DEFAULT_BATCH = 5_000  # a bar update every minute or so at encoder speed
PLAN_VERSION = 1


def build_index(
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    parts: Sequence[str] | None = None,
    options: PartOptions | None = None,
    *,
    detect: bool = True,
    chunk_words: int | None = None,
    fmt: str = "auto",
    batch_size: int = DEFAULT_BATCH,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    log: Any = None,
    engine: EngineOptions | None = None,
    skip_bad: bool = False,
    staged: str = "auto",
) -> Index:
    """Build the index of the corpus at ``source`` into the folder ``out``, in batches of
    ``batch_size`` passages; returns the saved index (its passages read from ``out`` on demand).

    ``parts`` default to the default method's; with ``detect``, the options the corpus decides
    are detected from its titles as :meth:`Index.build` does (``options`` win). ``resume``
    continues a build of the same plan that was stopped; without it, a partial build of
    ``out`` in the way raises :class:`PartialBuildError`. A new build (not a resumed one) over
    an index at ``out``, or a folder holding other files, raises
    :class:`~hopgraph.errors.OutputExistsError` and changes nothing, unless ``overwrite``: then
    ``out`` is replaced once the new index is complete. ``progress``: bars for the passages
    read and indexed. ``log``: a function given one line of text per stage (the CLI prints
    them). ``engine``: where the per-passage work runs (this process by default;
    ``EngineOptions("ray", ...)`` on a Ray cluster); it does not change the index, so a build
    may resume on another engine. ``skip_bad``: a JSONL corpus's lines that are not UTF-8 and
    passages with empty text are skipped instead of stopping the build, counted by file and
    line in the index's ``reading`` (``hopgraph info``) and logged.

    ``staged`` (``"auto"``, ``"on"``, ``"off"``): in two stages (:mod:`hopgraph.index.staged`),
    the index saved to ``out`` searchable without its passage vectors (``dense``, and the
    parts built from it) as soon as the other parts are merged, then the vectors encoded and
    the complete index committed as the next generation of ``out``. ``"auto"`` stages a build
    of ``dense`` over at least :data:`~hopgraph.index.staged.STAGED_MIN_PASSAGES` passages
    into a folder that holds no index yet; a resumed build goes on as it began.
    """
    from hopgraph import __version__

    say = log or (lambda _line: None)
    if batch_size <= 0:
        raise HopgraphError(f"batch_size must be positive, got {batch_size}")
    check_choice(staged)
    out = Path(out).resolve()
    work = partial_folder(out)
    # a new build replaces nothing at out unless told to; a partial build in the way, or one
    # resumed (its start was checked), is _open_work's
    starting = not (work / "plan.json").exists() if resume else not work.exists()
    if starting:
        _check_output(out, overwrite, resume, Path(source).resolve())
    names = list(dict.fromkeys(parts if parts is not None else DEFAULT_PARTS))
    given = {p: dict(o) for p, o in (options or {}).items()}
    plan = {
        "plan_version": PLAN_VERSION,
        "hopgraph_version": __version__,
        "source": str(Path(source).resolve()),
        "source_stat": _fingerprint(Path(source), skip=(out, work)),
        "format": fmt,
        "chunk_words": chunk_words,
        "parts": names,
        "options": given,
        "detect": detect,
        "batch_size": batch_size,
    }
    if skip_bad:  # (only then: plans of builds without it stay as they were, for --resume)
        plan["skip_bad"] = True
    _open_work(work, plan, resume, say)
    t_start = time.perf_counter()

    corpus = _passages_stage(source, work, chunk_words, fmt, say, progress, skip_bad)
    reading_file = work / "reading.json"
    reading = json.loads(reading_file.read_text("utf-8")) if reading_file.exists() else None
    detected = None
    opts = given
    if detect:
        opts, detected = detected_options(corpus, names, given)
        if parts is None:  # the default index: without vectors the default would not read
            names = default_parts(opts, detected, names)
        if detected:
            say(describe_detected(detected))
    known = {n: o for n, o in opts.items()}
    order = dependency_order(names, known)
    classes = {n: part_class(n) for n in order}
    built_opts = {
        n: make_options(c.Options, opts.get(n), what=f"part {n!r}") for n, c in classes.items()
    }
    dense_opts = built_opts.get("dense")
    if dense_opts:
        dense_opts.passage_encoder_for(len(corpus))  # fail fast (device=cuda without CUDA)
    later = deferred_parts(order, lambda n: classes[n].requires_for(built_opts[n]))
    later = later if in_stages(staged, order, later, len(corpus), out, work) else []

    def encoder_note() -> None:
        # says which encoder makes the passage vectors; deciding may load the encoders (the
        # student's agreement on a sample), so a staged build does it when its vectors start,
        # not beside stage 1's merges (their peak RSS)
        note = passage_encoder_note(dense_opts, len(corpus), corpus) if dense_opts else None
        if note:
            say(note)

    if "dense" not in later:
        encoder_note()
    job = BuildJob(
        corpus, work, classes, built_opts, batch_size, progress, engine or EngineOptions(), say
    )
    if not (later and (work / SEARCHABLE).exists()):  # (else saved before the build stopped)
        now = [n for n in order if n not in later]
        index = _merged(job, now, segments_stage(job, now))
        index.detected, index.reading = detected, reading
        if later:  # stage 1 of 2: searchable without the passage vectors
            say(f"writing {out} (without {', '.join(later)})")
            save_searchable(index, out, later, work,
                            {n: asdict(built_opts[n]) for n in later})  # fmt: skip
            del index
            heap.trim()  # stage 1's merges peaked; the encoder does not need their pages
            say(
                f"searchable: {out} ({', '.join(now)}) in {time.perf_counter() - t_start:.0f} s; "
                "encoding the passage vectors next (searches without a method use the default "
                "without vectors until then)"
            )
    if later:  # stage 2: the passage vectors, then the whole index
        if "dense" in later:
            encoder_note()
        seconds = segments_stage(job, later, VECTORS)
        heap.trim()  # what stage 1's merges and the encoder freed, before the last merges
        index = _merged(job, order, seconds, vectors=set(later))
        index.detected, index.reading = detected, reading
    if index.refresh_profile():
        from hopgraph.index.profile import describe_profile

        say(f"profile: {describe_profile(index.profile)}")
    say(f"writing {out}")
    if later:
        commit_complete(index, out)  # the next generation of the searchable index
    else:
        index.save(out)
    del index  # its parts map files of the partial folder, removed now
    shutil.rmtree(work)
    say(f"built {len(corpus)} passages in {time.perf_counter() - t_start:.1f}s")
    return Index.load(out, verify=False)  # just written and fsynced


def _merged(
    job: BuildJob, order: list[str], seconds: dict[str, float], vectors: set[str] | None = None
) -> Index:
    """The index of the parts ``order``, each merged from its segments (under ``vectors/`` for
    the parts in ``vectors``) or built from the merged ones, saved to ``merged/<part>/`` once
    and read back memory-mapped."""
    corpus, options = job.corpus, job.options
    index = Index(corpus)
    for name in order:
        cls = job.classes[name]
        merged = job.work / "merged" / name
        if not merged.exists():  # each part once: a build stopped here resumes at the next
            deps = {d: index.parts[d] for d in cls.requires_for(options[name])}
            t0 = time.perf_counter()
            if cls.segmentable:
                job.say(f"merging the {name} segments")
                root = VECTORS if name in (vectors or ()) else "segments"
                batches = segment_folders(job.work, len(corpus), job.batch_size, root)
                segs = [f / name for f in batches]
                part = cls.from_segments(corpus, options[name], segs, deps, progress=job.progress)
            else:
                job.say(f"building the {name} part")
                part = cls.build_from(corpus, options[name], deps, progress=job.progress)
            secs = seconds.get(name, 0.0) + time.perf_counter() - t0
            _save_merged(part, merged, secs)
            del part
        # read back memory-mapped: the parts merged so far take no memory from the next merge
        index.parts[name] = cls.load(merged, options[name], mmap=True)
        meta = json.loads((merged.parent / f"{name}.json").read_text())
        index.build_seconds[name] = round(meta["build_seconds"], 3)
    return index


# -- stages ---------------------------------------------------------------------------------
def _check_output(out: Path, overwrite: bool, resume: bool, source: Path) -> None:
    """Refuse to build into ``out`` when it holds an index or other files, unless
    ``overwrite``; an empty folder or none is fine. A folder that holds the corpus itself is
    refused even with ``overwrite`` (the index would replace the documents), unless it is an
    index rebuilt from its own passages."""
    recover_folder(out)  # an index a save left renamed aside (see replace_folder) is put back
    if (source == out or out in source.parents) and not (out / MANIFEST).is_file():
        raise OutputExistsError(
            f"{out} holds the corpus being indexed ({source}): building the index there would "
            "delete it; choose another output folder"
        )
    if (out / MANIFEST).is_file():
        if overwrite:
            return
        if resume and _pending(out):
            raise OutputExistsError(
                f"nothing to resume: {out} holds the searchable stage of a staged build, but "
                f"its work folder ({partial_folder(out)}) is gone, so its passage vectors cannot "
                "be resumed; --force (overwrite=True) builds the index again"
            )
        if resume:
            raise OutputExistsError(
                f"nothing to resume: {out} holds a complete index (the build finished); "
                "--force (overwrite=True) builds it again"
            )
        raise OutputExistsError(
            f"{out} already holds an index: --force (overwrite=True) replaces it once the new "
            "one is built; or choose another folder"
        )
    if out.is_dir():
        entries = sorted(p.name + ("/" if p.is_dir() else "") for p in out.iterdir())
        if entries and not overwrite:
            shown = ", ".join(entries[:5]) + (
                f" and {len(entries) - 5} more" if len(entries) > 5 else ""
            )
            raise OutputExistsError(
                f"{out} is not an index but holds {len(entries)} file(s) or folder(s) "
                f"({shown}): choose another folder, or --force (overwrite=True) replaces it "
                "with the index, deleting them"
            )
    elif os.path.lexists(out):
        raise OutputExistsError(f"{out} is a file, not a folder: choose another output folder")


def _pending(out: Path) -> bool:
    try:
        return bool(json.loads((out / MANIFEST).read_text(encoding="utf-8")).get("pending"))
    except (OSError, ValueError, AttributeError):
        return False


def _save_merged(part: Any, folder: Path, seconds: float) -> None:
    tmp = folder.with_name(f".{folder.name}.tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    part.save(tmp)
    fsync_tree(tmp)
    write_synced(folder.with_name(f"{folder.name}.json"), json.dumps({"build_seconds": seconds}))
    os.replace(tmp, folder)  # the part is complete


def _open_work(work: Path, plan: dict[str, Any], resume: bool, say: Any) -> None:
    plan_file = work / "plan.json"
    if work.exists():
        if not resume:
            raise PartialBuildError(
                f"a partial build is in the way at {work}: resume it with --resume "
                "(resume=True), or remove that folder to start again"
            )
        try:
            old = json.loads(plan_file.read_text())
        except (OSError, ValueError):
            old = None
        if old is None:  # killed before its plan was written: nothing worth keeping
            shutil.rmtree(work)
        else:
            diff = sorted(k for k in plan if old.get(k) != plan[k])
            if diff:
                raise PartialBuildError(
                    f"the partial build at {work} was started with other settings "
                    f"({', '.join(f'{k}: {old.get(k)!r} now {plan[k]!r}' for k in diff)}); "
                    "give the same ones to resume it, or remove that folder to start again"
                )
            done = len(list((work / "segments").glob("[0-9]*"))) if work.exists() else 0
            say(f"resuming the build in {work} ({done} batches done)")
            return
    elif resume:
        say(f"nothing to resume at {work}: starting the build")
    work.mkdir(parents=True)
    write_synced(plan_file, json.dumps(plan, indent=2, sort_keys=True))


def _passages_stage(
    source: str | os.PathLike[str],
    work: Path,
    chunk_words: int | None,
    fmt: str,
    say: Any,
    progress: bool = False,
    skip_bad: bool = False,
) -> FileCorpus:
    """The corpus, copied as a stream into ``work/passages.jsonl`` (once) and read from there."""
    final = work / "passages.jsonl"
    if not final.exists():
        say(f"reading {source}")
        tmp = work / "passages.jsonl.tmp"
        report = new_report()
        skipped = SkippedPassages() if skip_bad else None
        passages = iter_corpus(
            source, chunk_words=chunk_words, fmt=fmt, report=report, skip_bad=skipped
        )
        try:
            with tqdm(passages, desc="reading", unit=" passages", disable=not progress) as bar:
                offsets, ids = write_passages(_checked(bar), tmp)
        except HopgraphError:  # bad input: nothing to resume, so no partial build is left
            shutil.rmtree(work, ignore_errors=True)
            raise
        if not ids:
            shutil.rmtree(work, ignore_errors=True)
            raise CorpusError("no passages to index", source)
        np.save(work / "offsets.npy", offsets)
        write_synced(work / "ids.json", json.dumps(ids, ensure_ascii=False))
        if skipped is not None and skipped.total:  # the bad passages of a JSONL corpus
            report["skipped"] = skipped.to_dict()
            say(skipped.describe())
        if report["documents"]:  # a folder of documents: what the reading left out, and why
            say(describe_report(report))
        if report["documents"] or "skipped" in report:
            write_synced(work / "reading.json", json.dumps(report, ensure_ascii=False))
        fsync_dir(tmp)  # os.open + fsync: works on a file too
        os.replace(tmp, final)  # the marker: the passages are complete
    offsets = np.load(work / "offsets.npy")
    ids = json.loads((work / "ids.json").read_text(encoding="utf-8"))
    return FileCorpus(final, offsets, ids, source=Path(source).resolve())


def _checked(passages: Iterable[Any]) -> Iterable[Any]:
    for p in passages:
        if not p.text.strip():
            raise CorpusError(f"passage {p.id!r} has empty text")
        yield p


def _fingerprint(path: Path, skip: tuple[Path, ...] = ()) -> list[Any]:
    """Size and modification time of the corpus file(s), in subfolders too (a folder of
    documents may nest them), except hidden ones and the folders in ``skip`` (the index being
    built, when it is written inside the corpus folder): a changed corpus cannot resume."""
    path = path.resolve()
    if path.is_dir():
        skipped = [s.resolve() for s in skip]

        def kept(p: Path) -> bool:
            rel = p.relative_to(path).parts
            return not any(part.startswith(".") for part in rel) and not any(
                p == s or s in p.parents for s in skipped
            )

        files = sorted(p for p in path.rglob("*") if p.is_file() and kept(p))
    else:
        files = [path]
    out = []
    for f in files:
        st = f.stat()
        name = f.relative_to(path).as_posix() if path.is_dir() else f.name
        out.append([name, st.st_size, st.st_mtime_ns])
    return out
