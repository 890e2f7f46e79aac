"""HippoRAG's OpenIE files (LLM triples, ``openie_<model>.json``) read into triples per
passage."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hopgraph.errors import ConfigError
from hopgraph.text.triples.common import Triple, _norm


def _triple(raw: Any) -> Triple | None:
    if not isinstance(raw, list | tuple) or len(raw) != 3:
        return None
    if not all(isinstance(x, str) for x in raw):
        return None
    s, p, o = (_norm(x) for x in raw)
    return (s, p, o) if s and p and o else None


def _aligned(doc: dict[str, Any], text: str, title: str) -> bool:
    if title and doc.get("title") == title:
        return True
    start = _norm(text)[:60]
    for key in ("passage", "text"):
        value = doc.get(key)
        if isinstance(value, str) and start in _norm(value):
            return True
    return False


def load_openie(
    path: str | Path, texts: Sequence[str], titles: Sequence[str]
) -> tuple[list[list[Triple]], int]:
    """HippoRAG OpenIE file -> triples per passage aligned with the given corpus order;
    returns (triples, number_of_malformed_skipped).

    The file is ``{"docs": [...]}`` or a bare list of docs, doc ``i`` being passage ``i``: its
    ``"title"`` equals ``titles[i]`` or its ``"passage"``/``"text"`` contains the start of
    ``texts[i]``. Triples that are not three non-empty strings are skipped and counted;
    strings are whitespace-normalised and each passage's triples deduplicated in order.
    """
    path = Path(path)
    if len(titles) != len(texts):
        raise ConfigError(f"{len(titles)} titles for {len(texts)} texts")
    try:
        with path.open(encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read OpenIE file {path}: {err}") from err
    except json.JSONDecodeError as err:
        raise ConfigError(f"OpenIE file {path} is not valid JSON: {err}") from err
    docs = data.get("docs") if isinstance(data, dict) else data
    if not isinstance(docs, list):
        raise ConfigError(f"OpenIE file {path}: expected a list of docs or {{'docs': [...]}}")
    if len(docs) != len(texts):
        raise ConfigError(
            f"OpenIE file {path} has {len(docs)} docs but the corpus has {len(texts)} passages"
        )
    out: list[list[Triple]] = []
    malformed = 0
    for i, (doc, text, title) in enumerate(zip(docs, texts, titles, strict=True)):
        if not isinstance(doc, dict):
            raise ConfigError(f"OpenIE file {path}: doc {i} is not an object")
        if not _aligned(doc, text, title):
            raise ConfigError(
                f"OpenIE file {path} does not match the corpus: doc {i} (title"
                f" {doc.get('title')!r}) is not passage {i} (title {title!r})"
            )
        raw = doc.get("extracted_triples") or []
        if not isinstance(raw, list):
            raise ConfigError(f"OpenIE file {path}: doc {i} 'extracted_triples' is not a list")
        triples: list[Triple] = []
        for r in raw:
            t = _triple(r)
            if t is None:
                malformed += 1
            elif t not in triples:
                triples.append(t)
        out.append(triples)
    return out, malformed
