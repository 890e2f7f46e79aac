"""The :class:`Index`: a corpus plus named parts, saved atomically to a folder and loaded by mmap.

Layout of an index folder::

    manifest.json        format + package version, options and stats per part, file checksums,
                         the generation and the deltas committed on top of the base
    passages.jsonl       the corpus, one passage a line, in row order (of the base)
    parts/<name>/...     each part's own plain files (.npy arrays, JSON)
    deltas/<gen>-<id>/   one committed update: added passages, deleted ids, per-part payloads

The base (passages and parts) is written whole by a build or a compaction and never changed in
place. An update commits a delta: a new folder under ``deltas/`` and a new manifest, renamed
over the old one (so a commit writes only what changed, and a reader that has the previous
manifest open still finds every file it lists). Loading replays the deltas on the base through
the parts' :meth:`~hopgraph.index.part.IndexPart.replay`, without the models; the result equals
the updated index, which equals a fresh build. When the deltas grow past a share of the index
(:class:`DeltaPolicy`), the next save compacts: it writes a new base and drops them.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shlex
import shutil
import sys
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.atomic import (
    fsync_dir,
    fsync_tree,
    recover_folder,
    remove_debris,
    replace_folder,
    write_synced,
)
from hopgraph.config import make_options
from hopgraph.corpus import Corpus, Passage
from hopgraph.corpus.filecorpus import FileCorpus, write_passages
from hopgraph.corpus.view import ViewCorpus
from hopgraph.errors import (
    ConfigError,
    DuplicateIdError,
    HopgraphError,
    IndexError_,
    StorageError,
    UnknownIdError,
    UpdateError,
)
from hopgraph.gc_pause import gc_paused
from hopgraph.index.default_build import default_build
from hopgraph.index.manifest import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    file_table,
    read_manifest,
    verify_files,
)
from hopgraph.index.part import Change, IndexPart, ReplayStep, load_payload, save_payload
from hopgraph.index.registry import (
    PartOptions,
    available_parts,
    dependency_order,
    part_class,
    split_part_options,
)

__all__ = [  # what was defined here before the registry held it stays importable from here
    "Delta",
    "DeltaPolicy",
    "Index",
    "PartOptions",
    "dependency_order",
    "manifest_digest",
    "missing_parts_message",
    "split_part_options",
]
PASSAGES = "passages.jsonl"
OFFSETS = "passages.offsets.npy"
IDS = "passages.ids.json"
DELTAS = "deltas"
DELETED = "deleted.json"


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


class Index:
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
            "detected": self.detected,
            "profile": self.profile,
            "reading": self.reading,
            "parts": {
                n: {
                    "options": asdict(p.options),
                    "stats": p.stats(),
                    "build_seconds": self.build_seconds.get(n),
                    "update_seconds": self.update_seconds.get(n),  # of the last update
                }
                for n, p in self.parts.items()
            },
        }

    # -- saving ---------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str], *, compact: bool | None = None) -> Path:
        """Write the index to ``path`` atomically; a crash at any point leaves either the
        previous index or the new one, never a mix.

        Into the folder this index was loaded from (or last saved to), unchanged on disk since,
        only the updates made since are written, as deltas (see the module's docstring), unless
        ``compact`` is true or :attr:`policy` says the deltas have grown enough to compact.
        Otherwise the whole index is written (a temp folder, then a rename): a new base.
        """
        path = Path(path).resolve()
        try:
            if compact is not True and self._commits_deltas(path, compact is None):
                return self._commit_deltas(path)
            return self._save_whole(path)
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
                raise
            raise StorageError(
                f"cannot write the index to {path}: {os.strerror(exc.errno)}. Nothing was "
                "changed: the folder holds the generation it had (if any). Free some space "
                "(a commit writes the added passages and their vectors; a compaction or a new "
                "index, a whole copy beside the old one) and try again"
            ) from exc

    def compact(self) -> Path:
        """Write this index's folder anew as one base, without deltas (``hopgraph compact``)."""
        if self.path is None:
            raise IndexError_("this index has no folder yet: save it first")
        return self.save(self.path, compact=True)

    def _commits_deltas(self, path: Path, by_policy: bool) -> bool:
        if self.deltas is None or self.origin is None or self.origin[0] != path:
            return False
        if manifest_digest(path) != self.origin[1]:
            return False  # another process committed since: this index does not extend it
        return not (by_policy and self.policy.compacts(self.deltas, len(self.corpus)))

    def _commit_deltas(self, path: Path) -> Path:
        """Write the deltas not yet in ``path`` and a new manifest listing them (renamed over
        the old one): the only files a commit writes."""
        assert self.deltas is not None
        remove_debris(path)  # what writers killed mid-write left beside the folder
        manifest = read_manifest(path)
        manifest.setdefault(  # a folder saved before deltas existed: it is all base
            "base",
            {"generation": manifest.get("generation", 0), "id": self.origin[1] if self.origin
             else None, "passages": manifest["corpus"]["passages"]},
        )  # fmt: skip
        listed = list(manifest.get("deltas", []))
        files = dict(manifest["files"])
        root = path / DELTAS
        root.mkdir(exist_ok=True)
        for delta in self.deltas[self.saved_deltas :]:
            name = f"{delta.generation:08d}-{uuid.uuid4().hex[:8]}"
            tmp = root / f".{name}.tmp"
            tmp.mkdir()
            try:
                write_passages(delta.add, tmp / PASSAGES)
                (tmp / DELETED).write_text(json.dumps(delta.delete, ensure_ascii=False))
                for part, payload in delta.payloads.items():
                    (tmp / part).mkdir()
                    save_payload(tmp / part, payload)
                fsync_tree(tmp)
                os.rename(tmp, root / name)
            except BaseException:  # a full disk: give its space back now
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            rel = f"{DELTAS}/{name}"
            files.update({f"{rel}/{k}": v for k, v in file_table(root / name).items()})
            listed.append(
                {"generation": delta.generation, "folder": rel,
                 "added": len(delta.add), "deleted": len(delta.delete)}
            )  # fmt: skip
        fsync_dir(root)
        manifest.update(self._manifest_fields())
        manifest["deltas"], manifest["files"] = listed, files
        tmp_manifest = path / f".{MANIFEST}.tmp-{os.getpid()}"
        write_synced(tmp_manifest, json.dumps(manifest, indent=2, sort_keys=True))
        os.rename(tmp_manifest, path / MANIFEST)
        fsync_dir(path)
        names = {d["folder"].rpartition("/")[2] for d in listed}
        for debris in root.iterdir():  # of commits killed before their manifest was renamed
            if debris.name not in names:  # (commits hold the writer lock: none is running)
                shutil.rmtree(debris, ignore_errors=True)
        self.saved_deltas = len(self.deltas)
        self._saved_to(path)
        return path

    def _saved_to(self, path: Path) -> None:
        self.path = path
        self.manifest_digest = manifest_digest(path)
        self.origin = (path, self.manifest_digest)

    def _manifest_fields(self) -> dict[str, Any]:
        from hopgraph import __version__

        info = self.info()
        fields = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "hopgraph_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "corpus": {"passages": len(self.corpus), "source": str(self.corpus.source or "")},
            "generation": self.generation,
            "parts": {n: {k: v for k, v in d.items()} for n, d in info["parts"].items()},
        }
        if self.detected is not None:
            fields["detected"] = self.detected
        if self.profile is not None:
            fields["profile"] = self.profile
        if self.reading is not None:
            fields["reading"] = self.reading
        return fields

    def _save_whole(self, path: Path) -> Path:
        if self.unverified is not None and (self.unverified / MANIFEST).exists():
            # Loaded without checksums (a delta commit reads no more of the base than it must,
            # as Lucene opens segments): before its files are read whole into a new base,
            # check them, so that a corrupt base is refused rather than rewritten as valid.
            verify_files(self.unverified, read_manifest(self.unverified), checksums=True)
            self.unverified = None
        self.parts = {n: p.compacted() for n, p in self.parts.items()}
        with replace_folder(path) as tmp:
            if isinstance(self.corpus, FileCorpus):  # already the file this folder keeps
                shutil.copyfile(self.corpus.path, tmp / PASSAGES)
                offsets, ids = self.corpus.offsets, self.corpus.ids
            else:
                offsets, ids = write_passages(self.corpus, tmp / PASSAGES)
            # where each passage's line starts, and its id: a loaded index reads passages on
            # demand (FileCorpus) instead of holding them
            np.save(tmp / OFFSETS, offsets)
            (tmp / IDS).write_text(json.dumps(ids, ensure_ascii=False), encoding="utf-8")
            for name, part in self.parts.items():
                folder = tmp / "parts" / name
                folder.mkdir(parents=True)
                part.save(folder)
            files = file_table(tmp)
            # the base's id is its files' checksums: a reader knows whether it still has it
            digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
            base = {"generation": self.generation, "id": digest[:32], "passages": len(self.corpus)}
            manifest = {**self._manifest_fields(), "base": base, "deltas": [], "files": files}
            write_synced(tmp / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True))
        self.base, self.deltas, self.saved_deltas = base, [], 0
        self._saved_to(path)
        return path

    @classmethod
    @gc_paused()
    def load(cls, path: str | os.PathLike[str], *, mmap: bool = True, verify: bool = True) -> Index:
        """Load an index folder; a missing, partial, corrupt or incompatible one raises."""
        root = Path(path).resolve()
        recover_folder(root)  # a writer killed between two renames (see replace_folder)
        digest = manifest_digest(root)
        manifest = read_manifest(root)
        verify_files(root, manifest, checksums=verify)
        corpus = _read_passages(root)
        if len(corpus) != (manifest.get("base") or manifest["corpus"])["passages"]:
            raise IndexError_(f"{root}: passages.jsonl does not match the manifest; rebuild")
        index = cls(corpus)
        for name, meta in manifest["parts"].items():
            try:
                pcls = part_class(name)
            except ConfigError:
                raise IndexError_(
                    f"{root}: part {name!r} is not known to this hopgraph version"
                ) from None
            opts = make_options(pcls.Options, meta.get("options"), what=f"part {name!r}")
            try:
                index.parts[name] = pcls.load(root / "parts" / name, opts, mmap=mmap)
            except HopgraphError:
                raise
            except Exception as exc:  # noqa: BLE001 - any failure here means a bad index
                raise IndexError_(f"{root}: part {name!r} failed to load ({exc}); rebuild") from exc
            if meta.get("build_seconds") is not None:
                index.build_seconds[name] = meta["build_seconds"]
        index.detected = manifest.get("detected")
        index.profile = manifest.get("profile")
        index.reading = manifest.get("reading")
        index.base = manifest.get("base")
        deltas = manifest.get("deltas", [])
        index.generation = int(manifest.get("generation", 0)) - len(deltas)
        index = index.replayed(root, deltas)
        index.generation = int(manifest.get("generation", 0))
        index.path = root
        index.manifest_digest = digest
        index.origin = (root, digest)
        index.unverified = None if verify else root
        return index

    def replayed(self, root: Path, deltas: list[dict[str, Any]]) -> Index:
        """This index with the committed ``deltas`` (manifest entries) of folder ``root``
        replayed on it, in order: no models run (each part's payload stands in for them)."""
        read: list[Delta] = []
        for entry in deltas:
            folder = root / entry["folder"]
            try:
                add = list(_read_passages(folder)) if (folder / PASSAGES).stat().st_size else []
                delete = json.loads((folder / DELETED).read_text(encoding="utf-8"))
                payloads = {
                    n: load_payload(folder / n) for n in self.parts if (folder / n).is_dir()
                }
            except Exception as exc:  # noqa: BLE001 - a delta that does not read is corrupt
                raise IndexError_(
                    f"{root}: the update in {entry['folder']} cannot be read ({exc}); "
                    "rebuild the index"
                ) from exc
            read.append(Delta(int(entry["generation"]), add, delete, payloads))
        try:
            index = self._replayed_at_once(read) if len(read) > 1 else None
        except HopgraphError:
            raise
        except Exception as exc:  # noqa: BLE001 - deltas that do not replay are corrupt
            raise IndexError_(
                f"{root}: the updates in {', '.join(e['folder'] for e in deltas)} failed to "
                f"replay ({exc}); rebuild the index"
            ) from exc
        if index is None:  # one delta, or a part that replays deltas only one by one
            index = self
            for entry, delta in zip(deltas, read, strict=True):
                try:
                    index = index.updated(
                        add=delta.add, delete=delta.delete, payloads=delta.payloads
                    )
                except HopgraphError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a delta that does not replay
                    raise IndexError_(
                        f"{root}: the update in {entry['folder']} failed to replay ({exc}); "
                        "rebuild the index"
                    ) from exc
                index.generation = delta.generation
        index.saved_deltas = len(index.deltas or [])
        return index

    def _replayed_at_once(self, deltas: list[Delta]) -> Index | None:
        """``deltas`` replayed as one change (one re-assembly of every part instead of one a
        delta: at a million passages each costs seconds), or None when a part cannot combine
        them. The ids are followed through the deltas to find which rows survive where; each
        part combines its payloads (:meth:`IndexPart.combined_payload`); the result equals
        replaying them one by one (tested)."""
        real = [d for d in deltas if d.add or d.delete]  # an empty update leaves no payload
        if len(real) < 2:
            return None
        n0 = len(self.corpus)
        tags = np.arange(n0, dtype=np.int64)  # current row → tag (base rows, then each added)
        latest: dict[str, int] = {}  # id → tag of an added passage
        added: list[Passage] = []
        per_step: list[tuple[np.ndarray, int]] = []
        for d in real:
            at = np.full(n0 + len(added), -1, np.int64)
            at[tags] = np.arange(len(tags))
            gone = [latest[i] if i in latest else self.corpus.position(i) for i in d.delete]
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
            for name in self.parts
        }  # fmt: skip
        payloads = {}
        for name, part in self.parts.items():
            combined = type(part).combined_payload(steps[name], base_kept)
            if combined is None:
                return None
            payloads[name] = combined
        alive_base = np.zeros(n0, bool)
        alive_base[tags[tags < n0]] = True
        ids = self.corpus.ids
        delete = [ids[r] for r in np.flatnonzero(~alive_base).tolist()]
        add = [added[t - n0] for t in tags[tags >= n0].tolist()]
        index = self.updated(add=add, delete=delete, payloads=payloads)
        index.generation = deltas[-1].generation
        if self.deltas is not None and index.deltas is not None:  # each delta, as committed
            index.deltas = [*self.deltas, *deltas]
        return index

    def reloaded(self, *, verify: bool = False) -> Index:
        """The generation now in this index's folder: only the deltas committed since this
        index was loaded are replayed on it when its base is still the folder's (a reader
        following a writer); otherwise the folder is loaded anew."""
        if self.path is None:
            raise IndexError_("this index has no folder to reload")
        root = self.path
        digest = manifest_digest(root)
        manifest = read_manifest(root)
        listed = manifest.get("deltas", [])
        mine = [d.generation for d in (self.deltas or [])][: self.saved_deltas]
        if (
            self.deltas is None
            or self.base is None
            or manifest.get("base") != self.base
            or [int(d["generation"]) for d in listed[: len(mine)]] != mine
            or len(mine) != len(self.deltas)
        ):
            return Index.load(root, verify=verify)
        verify_files(root, {"files": {
            k: v for k, v in manifest["files"].items() if k.startswith(f"{DELTAS}/")
        }}, checksums=verify)  # fmt: skip
        index = self.replayed(root, listed[len(mine) :])
        index.generation = int(manifest.get("generation", 0))
        index.path = root
        index.manifest_digest = digest
        index.origin = (root, digest)
        return index


def missing_parts_message(index: Index, missing: Sequence[str], method: str | None = None) -> str:
    """Why ``index`` cannot serve a request needing the parts ``missing``, and the command that
    adds them (``hopgraph add-parts``, naming the index folder when it has one)."""
    have = ", ".join(sorted(index.parts)) or "none"
    folder = shlex.quote(str(index.path)) if index.path else "INDEX_DIR"
    names = ", ".join(repr(m) for m in missing)
    one = len(missing) == 1
    noun = "part" if one else "parts"
    problem = f"this index has no {names} {noun}"
    if method:
        problem = f"method {method!r} needs more index parts: {problem}"
    return (
        f"{problem} (it has: {have}); add {'it' if one else 'them'} with "
        f"`hopgraph add-parts {folder} --parts {','.join(missing)}`"
    )


def manifest_digest(root: Path) -> str | None:
    """sha256 of the folder's manifest (which lists every file's checksum): it changes with
    every save, so a reader can tell whether the folder still holds what it loaded."""
    try:
        return hashlib.sha256((Path(root) / MANIFEST).read_bytes()).hexdigest()
    except OSError:
        return None


def _read_passages(root: Path) -> FileCorpus:
    """The passages of an index folder, read on demand (an index saved before the offsets and
    ids were kept has them computed from passages.jsonl)."""
    path = root / PASSAGES
    if (root / OFFSETS).exists() and (root / IDS).exists():
        offsets = np.load(root / OFFSETS)
        ids = json.loads((root / IDS).read_text(encoding="utf-8"))
        return FileCorpus(path, offsets, ids, source=root)
    return FileCorpus(path, source=root)
