"""The ``same_as`` part: GRIEVER's synonym index (§4.2.3, §A.1).

Each passage contributes (alias, canonical) pairs found without an LLM (titles and their
disambiguators, acronyms, surnames, "also known as" patterns: :mod:`hopgraph.text.synonyms`)
among its own entities. Pairs are grouped by canonical name; a group keeps its aliases and the
passages it came from, so an expansion can be restricted to the passages already retrieved
(the sense of "Orange" those passages use). Every alias string is embedded for the entity
matcher: a synonym matches the query like the entity itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hopgraph.corpus import Corpus
from hopgraph.errors import ConfigError
from hopgraph.index.npy import save_array
from hopgraph.index.part import Change, IndexPart
from hopgraph.index.partial_triples import StringEncoderOptions, encode_reusing
from hopgraph.index.triples import TriplesPart, entity_key


@dataclass(frozen=True)
class SameAsOptions(StringEncoderOptions):
    pass


def _csr(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    indptr = np.zeros(len(lists) + 1, np.int64)
    indptr[1:] = np.cumsum([len(x) for x in lists])
    flat = [i for x in lists for i in x]
    return indptr, np.asarray(flat, np.int32)


class SameAsPart(IndexPart):
    name = "same_as"
    Options = SameAsOptions
    requires = ("triples",)

    def __init__(self, options: SameAsOptions, aliases: list[str], arrays: dict[str, np.ndarray]):
        super().__init__(options)
        self.aliases = aliases  # surface form per alias id
        self.vectors = arrays["vectors"]  # unit embedding per alias
        self.g_alias = (arrays["alias_indptr"], arrays["alias_indices"])  # group → aliases
        self.g_rows = (arrays["row_indptr"], arrays["row_indices"])  # group → passage rows
        self.alias_index = {entity_key(a): i for i, a in enumerate(aliases)}
        groups_of: dict[int, list[int]] = {}
        indptr, indices = self.g_alias
        for g in range(len(indptr) - 1):
            for a in indices[indptr[g] : indptr[g + 1]].tolist():
                groups_of.setdefault(a, []).append(g)
        self.groups_of = groups_of

    @classmethod
    def build(cls, corpus: Corpus, options: Any, *, progress: bool = True) -> SameAsPart:
        raise ConfigError("same_as is built from the triples part: use Index.add_parts")

    @classmethod
    def build_from(
        cls,
        corpus: Corpus,
        options: SameAsOptions,
        parts: dict[str, IndexPart],
        *,
        progress: bool = True,
    ) -> SameAsPart:
        return cls._assemble(corpus, options, parts["triples"], None, progress)  # type: ignore[arg-type]

    def update(
        self,
        change: Change,
        parts: dict[str, IndexPart],
        old_parts: dict[str, IndexPart],
        *,
        progress: bool = False,
    ) -> SameAsPart:
        """Groups are regrouped over the updated corpus and triples (pattern matching, no
        model); only aliases this part has not embedded before are encoded."""
        tp = parts["triples"]
        return type(self)._assemble(change.new, self.options, tp, self, progress)  # type: ignore[arg-type]

    @classmethod
    def _assemble(
        cls,
        corpus: Corpus,
        options: SameAsOptions,
        tp: TriplesPart,
        old: SameAsPart | None,
        progress: bool,
    ) -> SameAsPart:
        from hopgraph.text.synonyms import passage_aliases

        names: list[str] = []
        ids: dict[str, int] = {}

        def intern(name: str) -> int:
            key = entity_key(name)
            if key not in ids:
                ids[key] = len(names)
                names.append(" ".join(name.split()))
            return ids[key]

        group_ids: dict[int, int] = {}  # canonical alias id → group
        members: list[list[int]] = []
        rows: list[list[int]] = []
        for row, p in enumerate(corpus):
            t = tp.triples[tp.indptr[row] : tp.indptr[row + 1]]
            ents = sorted({tp.entities[e] for e in np.concatenate([t[:, 0], t[:, 2]]).tolist()})
            for alias, canonical in passage_aliases(p.title, p.text, ents):
                if not entity_key(alias) or entity_key(alias) == entity_key(canonical):
                    continue
                c = intern(canonical)
                g = group_ids.get(c)
                if g is None:
                    g = group_ids[c] = len(members)
                    members.append([c])
                    rows.append([])
                a = intern(alias)
                if a not in members[g]:
                    members[g].append(a)
                if not rows[g] or rows[g][-1] != row:
                    rows[g].append(row)
        a_ptr, a_idx = _csr(members)
        r_ptr, r_idx = _csr(rows)
        if old is None:
            vectors = options.encode(names, progress) if names else np.zeros((0, 1), np.float32)
        else:
            vectors = encode_reusing(options, names, old.aliases, old.vectors, progress)
        arrays = {
            "vectors": vectors,
            "alias_indptr": a_ptr,
            "alias_indices": a_idx,
            "row_indptr": r_ptr,
            "row_indices": r_idx,
        }
        return cls(options, names, arrays)

    _ARRAYS = ("vectors", "alias_indptr", "alias_indices", "row_indptr", "row_indices")

    def save(self, folder: Path) -> None:
        arrays = dict(zip(("alias_indptr", "alias_indices"), self.g_alias, strict=True))
        arrays.update(zip(("row_indptr", "row_indices"), self.g_rows, strict=True))
        arrays["vectors"] = self.vectors
        for name in self._ARRAYS:
            save_array(folder / f"{name}.npy", arrays[name])
        (folder / "aliases.json").write_text(json.dumps(self.aliases))

    @classmethod
    def load(cls, folder: Path, options: SameAsOptions, *, mmap: bool = True) -> SameAsPart:
        mode = "r" if mmap else None
        arrays = {n: np.load(folder / f"{n}.npy", mmap_mode=mode) for n in cls._ARRAYS}
        return cls(options, json.loads((folder / "aliases.json").read_text()), arrays)

    def stats(self) -> dict[str, Any]:
        return {"aliases": len(self.aliases), "groups": len(self.g_alias[0]) - 1}

    # -- querying -------------------------------------------------------------------------
    def group(self, g: int) -> dict[str, Any]:
        """Group ``g`` as §A.1's fields: its aliases and passage rows."""
        (ap, ai), (rp, ri) = self.g_alias, self.g_rows
        return {
            "aliases": [self.aliases[a] for a in ai[ap[g] : ap[g + 1]].tolist()],
            "passage_rows": ri[rp[g] : rp[g + 1]].tolist(),
        }

    def expand(self, names: Iterable[str], rows: Iterable[int] | None) -> dict[str, list[int]]:
        """For each name with synonyms, the alias ids of its groups, keeping only groups found
        in one of ``rows`` (None: any group)."""
        allowed = None if rows is None else set(int(r) for r in rows)
        (ap, ai), (rp, ri) = self.g_alias, self.g_rows
        out: dict[str, list[int]] = {}
        for name in names:
            a = self.alias_index.get(entity_key(name))
            if a is None:
                continue
            found: list[int] = []
            for g in self.groups_of.get(a, ()):
                if allowed is not None and not allowed.intersection(ri[rp[g] : rp[g + 1]].tolist()):
                    continue
                found.extend(x for x in ai[ap[g] : ap[g + 1]].tolist() if x != a)
            if found:
                out[name] = sorted(set(found))
        return out
