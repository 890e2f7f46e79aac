"""An index folder on disk: writing a new base or committing deltas, loading a folder and
replaying its deltas, reloading what a writer committed since.

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
(:class:`~hopgraph.index.deltas.DeltaPolicy`), the next save compacts: it writes a new base and
drops them.

:class:`IndexFolder` is the part of :class:`~hopgraph.index.store.Index` that does this (its
``save``, ``compact``, ``load``, ``replayed`` and ``reloaded``).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import time
import uuid
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from hopgraph.corpus.filecorpus import FileCorpus, write_passages
from hopgraph.errors import (
    BuildPendingError,
    ConfigError,
    HopgraphError,
    IndexError_,
    StorageError,
)
from hopgraph.gc_pause import gc_paused
from hopgraph.index.deltas import Delta, DeltaPolicy, replayed_at_once
from hopgraph.index.manifest import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    file_table,
    read_manifest,
    verify_files,
)
from hopgraph.index.npy import save_array
from hopgraph.index.part import IndexPart, load_payload, save_payload
from hopgraph.index.registry import part_class
from hopgraph.index.staged import stage_of, writes_refused

if TYPE_CHECKING:  # the index imports this module
    from hopgraph.corpus import Corpus
    from hopgraph.index.store import Index

PASSAGES = "passages.jsonl"
OFFSETS = "passages.offsets.npy"
IDS = "passages.ids.json"
DELTAS = "deltas"
DELETED = "deleted.json"


class IndexFolder:
    """Saving an :class:`~hopgraph.index.store.Index` to a folder and loading it back (a base
    of :class:`~hopgraph.index.store.Index`, which sets these attributes)."""

    corpus: Corpus
    parts: dict[str, IndexPart]
    path: Path | None
    manifest_digest: str | None
    generation: int
    detected: dict[str, Any] | None
    profile: dict[str, Any] | None
    reading: dict[str, Any] | None
    pending: dict[str, Any] | None
    deltas: list[Delta] | None
    saved_deltas: int
    origin: tuple[Path, str | None] | None
    base: dict[str, Any] | None
    policy: DeltaPolicy
    unverified: Path | None
    build_seconds: dict[str, float]

    def save(self, path: str | os.PathLike[str], *, compact: bool | None = None) -> Path:
        """Write the index to ``path`` atomically; a crash at any point leaves either the
        previous index or the new one, never a mix.

        Into the folder this index was loaded from (or last saved to), unchanged on disk since,
        only the updates made since are written, as deltas (see the module's docstring), unless
        ``compact`` is true or :attr:`policy` says the deltas have grown enough to compact.
        Otherwise the whole index is written (a temp folder, then a rename): a new base.
        """
        path = Path(path).resolve()
        if self.pending and self.origin is not None:  # loaded in a staged build's first stage
            stage = stage_of(self.origin[0], self.pending, len(self.corpus), False)
            raise BuildPendingError(writes_refused(stage))
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
        manifest.pop("pending", None)  # (a commit is refused on an index with one)
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
        if self.pending:
            fields["pending"] = self.pending
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
            save_array(tmp / OFFSETS, offsets)
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
            if index.parts[name].outdated:  # searchable, but not as a fresh build would rank
                warnings.warn(
                    f"{root}: the {name!r} part is outdated ({index.parts[name].outdated}); "
                    f"rebuild it: hopgraph add-parts {root} --parts {name}",
                    stacklevel=2,
                )
        index.detected = manifest.get("detected")
        index.profile = manifest.get("profile")
        index.reading = manifest.get("reading")
        index.pending = manifest.get("pending")
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
            index = replayed_at_once(self, read) if len(read) > 1 else None
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
            return type(self).load(root, verify=verify)
        verify_files(root, {"files": {
            k: v for k, v in manifest["files"].items() if k.startswith(f"{DELTAS}/")
        }}, checksums=verify)  # fmt: skip
        index = self.replayed(root, listed[len(mine) :])
        index.generation = int(manifest.get("generation", 0))
        index.path = root
        index.manifest_digest = digest
        index.origin = (root, digest)
        return index


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
