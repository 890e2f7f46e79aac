"""The index manifest: format version, package version, options, counts and file checksums."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from hopgraph.errors import IndexError_

FORMAT = "hopgraph-index"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def file_table(root: Path) -> dict[str, dict[str, Any]]:
    """Size and sha256 of every file under ``root`` except the manifest."""
    table = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.name != MANIFEST:
            table[p.relative_to(root).as_posix()] = {
                "size": p.stat().st_size,
                "sha256": sha256_file(p),
            }
    return table


def read_manifest(root: Path) -> dict[str, Any]:
    path = root / MANIFEST
    if not root.exists():
        raise IndexError_(f"no index at {root}: the folder does not exist")
    if not path.exists():
        raise IndexError_(
            f"{root} is not a hopgraph index (no {MANIFEST}); it may be a partial build: "
            "rebuild it with `hopgraph index`"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IndexError_(f"{path}: corrupt manifest ({exc}); rebuild the index") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise IndexError_(f"{path}: not a hopgraph index manifest")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise IndexError_(
            f"{root}: index format version {version} but this hopgraph "
            f"reads version {FORMAT_VERSION}; rebuild the index with this version"
        )
    return manifest


def verify_files(root: Path, manifest: dict[str, Any], *, checksums: bool = True) -> None:
    """Every file listed must exist with its size (and checksum); else IndexError_ naming it."""
    for rel, meta in manifest.get("files", {}).items():
        p = root / rel
        if not p.is_file():
            raise IndexError_(f"{root}: index is incomplete, missing {rel}; rebuild it")
        if p.stat().st_size != meta["size"]:
            raise IndexError_(
                f"{root}: {rel} has {p.stat().st_size} bytes, the manifest says {meta['size']}: "
                "the index is corrupt; rebuild it"
            )
        if checksums and sha256_file(p) != meta["sha256"]:
            raise IndexError_(
                f"{root}: checksum mismatch in {rel}: the index is corrupt; rebuild it"
            )
